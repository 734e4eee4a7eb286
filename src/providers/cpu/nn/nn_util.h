// Shared pieces of the CPU nn kernels: sliding-window geometry (kernel, strides,
// dilations, pads, auto_pad) used by Conv, ConvTranspose and the pools, and
// float conversion for the half types, which compute in float.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "onyx/status.h"
#include "onyx/tensor.h"
#include "providers/kernel.h"

namespace onyx::cpu::nn {

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

inline AutoPad parse_auto_pad(const KernelInfo& info) {
  const std::string s = info.attr_string("auto_pad", "NOTSET");
  if (s == "NOTSET" || s.empty()) return AutoPad::kNotSet;
  if (s == "SAME_UPPER") return AutoPad::kSameUpper;
  if (s == "SAME_LOWER") return AutoPad::kSameLower;
  if (s == "VALID") return AutoPad::kValid;
  throw Error(invalid_model(info.label(), ": attribute auto_pad is '", s,
                            "', expected NOTSET, SAME_UPPER, SAME_LOWER or VALID"));
}

// Attributes of a sliding window; vectors may be empty (defaults applied once
// the spatial rank is known from the input).
struct WindowAttributes {
  std::vector<int64_t> kernel_shape;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads;  // begins then ends
  AutoPad auto_pad = AutoPad::kNotSet;
  bool ceil_mode = false;

  static WindowAttributes from(const KernelInfo& info) {
    WindowAttributes a;
    a.kernel_shape = info.attr_ints("kernel_shape");
    a.strides = info.attr_ints("strides");
    a.dilations = info.attr_ints("dilations");
    a.pads = info.attr_ints("pads");
    a.auto_pad = parse_auto_pad(info);
    a.ceil_mode = info.attr_int("ceil_mode", 0) != 0;
    return a;
  }
};

// The window resolved for one input: every vector has the spatial rank (pads
// twice that) and the output spatial shape.
struct Window {
  std::vector<int64_t> input;   // input spatial dims
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads;    // begins then ends, as the output shape uses them
  std::vector<int64_t> output;  // output spatial dims
  size_t rank() const { return input.size(); }
  int64_t input_size() const { return shape_size(input); }
  int64_t output_size() const { return shape_size(output); }
  int64_t kernel_size() const { return shape_size(kernel); }
};

// Resolves the window for `input_spatial` and the kernel shape (taken from the
// attribute, or from `kernel_from_weights` when the attribute is absent).
// `pooling` enables ceil_mode. Errors name the node.
inline Result<Window> resolve_window(const std::string& label, const WindowAttributes& attrs,
                                     const std::vector<int64_t>& input_spatial,
                                     const std::vector<int64_t>& kernel_from_weights) {
  const size_t rank = input_spatial.size();
  Window w;
  w.input = input_spatial;
  w.kernel = attrs.kernel_shape.empty() ? kernel_from_weights : attrs.kernel_shape;
  if (w.kernel.size() != rank) {
    return invalid_argument(label, ": kernel_shape has ", w.kernel.size(), " dims, expected ", rank,
                            " (the spatial rank of input X)");
  }
  auto fill = [&](const std::vector<int64_t>& given, size_t n, int64_t dflt, const char* name,
                  std::vector<int64_t>& out) -> Status {
    if (given.empty()) {
      out.assign(n, dflt);
      return Status::ok();
    }
    if (given.size() != n) return invalid_argument(label, ": attribute ", name, " has ", given.size(), " values, expected ", n);
    out = given;
    return Status::ok();
  };
  ONYX_RETURN_IF_ERROR(fill(attrs.strides, rank, 1, "strides", w.strides));
  ONYX_RETURN_IF_ERROR(fill(attrs.dilations, rank, 1, "dilations", w.dilations));
  ONYX_RETURN_IF_ERROR(fill(attrs.auto_pad == AutoPad::kNotSet ? attrs.pads : std::vector<int64_t>{}, 2 * rank, 0,
                            "pads", w.pads));
  w.output.assign(rank, 0);
  for (size_t d = 0; d < rank; ++d) {
    if (w.kernel[d] < 1 || w.strides[d] < 1 || w.dilations[d] < 1) {
      return invalid_argument(label, ": kernel ", w.kernel[d], ", stride ", w.strides[d], ", dilation ",
                              w.dilations[d], " on spatial axis ", d, ", expected all >= 1");
    }
    if (w.pads[d] < 0 || w.pads[d + rank] < 0) {
      return invalid_argument(label, ": pads on spatial axis ", d, " are negative");
    }
    const int64_t in = input_spatial[d];
    const int64_t extent = (w.kernel[d] - 1) * w.dilations[d] + 1;
    const int64_t s = w.strides[d];
    switch (attrs.auto_pad) {
      case AutoPad::kSameUpper:
      case AutoPad::kSameLower: {
        const int64_t out = (in + s - 1) / s;
        const int64_t total = std::max<int64_t>(0, (out - 1) * s + extent - in);
        const int64_t small = total / 2;
        w.pads[d] = attrs.auto_pad == AutoPad::kSameUpper ? small : total - small;
        w.pads[d + rank] = total - w.pads[d];
        w.output[d] = out;
        break;
      }
      case AutoPad::kValid:
      case AutoPad::kNotSet: {
        const int64_t span = in + w.pads[d] + w.pads[d + rank] - extent;
        if (span < 0) {
          return invalid_argument(label, ": the window (extent ", extent, ") is larger than the padded input (",
                                  in + w.pads[d] + w.pads[d + rank], ") on spatial axis ", d);
        }
        int64_t out = span / s + 1;
        if (attrs.ceil_mode) {
          out = (span + s - 1) / s + 1;
          // A window may not start in the end padding (spec: those are dropped).
          if ((out - 1) * s >= in + w.pads[d]) --out;
        }
        w.output[d] = out;
        break;
      }
    }
  }
  return w;
}

// A window padded out to exactly three spatial dims.
struct Window3 {
  int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
};

inline Window3 to_3d(const nn::Window& w) {
  Window3 g;
  const size_t r = w.rank();
  for (size_t i = 0; i < 3; ++i) {
    const bool real = i >= 3 - r;
    const size_t j = real ? i - (3 - r) : 0;
    g.in[i] = real ? w.input[j] : 1;
    g.out[i] = real ? w.output[j] : 1;
    g.k[i] = real ? w.kernel[j] : 1;
    g.s[i] = real ? w.strides[j] : 1;
    g.d[i] = real ? w.dilations[j] : 1;
    g.pb[i] = real ? w.pads[j] : 0;
    g.pe[i] = real ? w.pads[j + r] : 0;
  }
  return g;
}

// The positions of the window starting at (sd, sh, sw) inside [-pad_begin,
// in + pad_end): AveragePool's divisor with count_include_pad, which counts
// explicit padding but not the extra room ceil_mode adds.
inline int64_t padded_window_count(const Window3& g, int64_t sd, int64_t sh, int64_t sw) {
  const int64_t start[3] = {sd, sh, sw};
  int64_t count = 1;
  for (int i = 0; i < 3; ++i) {
    int64_t n = 0;
    for (int64_t kk = 0; kk < g.k[i]; ++kk) n += (start[i] + kk * g.d[i] < g.in[i] + g.pe[i]) ? 1 : 0;
    count *= n;
  }
  return count;
}

// Converts a float16/bfloat16/double tensor to a new float tensor.
template <typename T>
Tensor to_float(const Tensor& t) {
  Tensor out(DataType::kFloat, t.shape());
  const T* src = t.data<T>();
  float* dst = out.data<float>();
  const int64_t n = t.size();
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]);
  return out;
}

template <typename T>
void from_float(const float* src, int64_t n, T* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(src[i]);
}

inline std::vector<int64_t> tail(const Shape& shape, size_t from) {
  return std::vector<int64_t>(shape.begin() + static_cast<std::ptrdiff_t>(std::min(from, shape.size())), shape.end());
}

}  // namespace onyx::cpu::nn
