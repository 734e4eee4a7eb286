// Window geometry shared by the com.microsoft.nchwc Conv and pooling kernels:
// the ONNX attributes (kernel_shape, strides, dilations, pads, auto_pad,
// ceil_mode) resolved against an input's height and width.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "onyx/status.h"
#include "providers/kernel.h"

namespace onyx::cpu::nchwc {

struct Window2D {
  std::vector<int64_t> kernel;  // kh, kw (empty: from W)
  int64_t stride[2] = {1, 1};
  int64_t dilation[2] = {1, 1};
  int64_t pads[4] = {0, 0, 0, 0};  // top, left, bottom, right
  std::string auto_pad = "NOTSET";
  bool ceil_mode = false;

  // Reads the attributes; throws onyx::Error for malformed ones.
  static Window2D parse(const KernelInfo& info, bool needs_kernel_shape) {
    Window2D w;
    const std::string label = info.label();
    w.kernel = info.attr_ints("kernel_shape");
    if (needs_kernel_shape && w.kernel.size() != 2) {
      throw Error(invalid_model(label, ": kernel_shape must have 2 values, got ", w.kernel.size()));
    }
    if (!w.kernel.empty() && (w.kernel.size() != 2 || w.kernel[0] < 1 || w.kernel[1] < 1)) {
      throw Error(invalid_model(label, ": kernel_shape must be 2 positive values"));
    }
    auto read2 = [&](const char* name, int64_t* out) {
      const auto v = info.attr_ints(name);
      if (v.empty()) return;
      if (v.size() != 2 || v[0] < 1 || v[1] < 1) {
        throw Error(invalid_model(label, ": ", name, " must be 2 positive values"));
      }
      out[0] = v[0];
      out[1] = v[1];
    };
    read2("strides", w.stride);
    read2("dilations", w.dilation);
    const auto pads = info.attr_ints("pads");
    if (!pads.empty()) {
      if (pads.size() != 4) throw Error(invalid_model(label, ": pads must have 4 values, got ", pads.size()));
      for (int i = 0; i < 4; ++i) {
        if (pads[static_cast<size_t>(i)] < 0) throw Error(invalid_model(label, ": pads must not be negative"));
      }
      // ONNX order: begin of each axis, then end of each axis.
      w.pads[0] = pads[0];
      w.pads[1] = pads[1];
      w.pads[2] = pads[2];
      w.pads[3] = pads[3];
    }
    w.auto_pad = info.attr_string("auto_pad", "NOTSET");
    if (w.auto_pad != "NOTSET" && w.auto_pad != "VALID" && w.auto_pad != "SAME_UPPER" && w.auto_pad != "SAME_LOWER") {
      throw Error(invalid_model(label, ": unknown auto_pad '", w.auto_pad, "'"));
    }
    w.ceil_mode = info.attr_int("ceil_mode", 0) != 0;
    return w;
  }

  // Output size and begin/end pads of `axis` (0: height, 1: width) for an
  // input of `in` and kernel `k`; an error when no window fits.
  Status resolve(const std::string& label, int axis, int64_t in, int64_t k, int64_t& out, int64_t& pad_begin,
                 int64_t& pad_end) const {
    const int64_t s = stride[axis], d = dilation[axis];
    const int64_t extent = (k - 1) * d + 1;
    pad_begin = pads[axis];
    pad_end = pads[axis + 2];
    if (auto_pad == "VALID") {
      pad_begin = pad_end = 0;
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out = (in + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (out - 1) * s + extent - in);
      pad_begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pad_end = total - pad_begin;
      return Status::ok();
    }
    const int64_t span = in + pad_begin + pad_end - extent;
    if (span < 0) {
      return invalid_argument(label, ": the window (", extent, ") is larger than the padded input (",
                              in + pad_begin + pad_end, ")");
    }
    out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    // A window that would start in the end padding is dropped.
    if (ceil_mode && (out - 1) * s >= in + pad_begin) --out;
    return Status::ok();
  }
};

}  // namespace onyx::cpu::nchwc
