// ConvTranspose's geometry (output size, begin pads) from its attributes and
// the shapes of X and W, as the spec gives it: shared by the CPU kernel and
// the device providers' ConvTranspose.
#pragma once

#include <string>
#include <vector>

#include "providers/cpu/nn/im2col.h"
#include "providers/cpu/nn/nn_util.h"

namespace onyx::cpu::nn {

struct ConvTransposeAttributes {
  AutoPad auto_pad = AutoPad::kNotSet;
  std::vector<int64_t> kernel_shape, strides, dilations, pads, output_padding, output_shape;

  static ConvTransposeAttributes from(const KernelInfo& info) {
    ConvTransposeAttributes a;
    a.auto_pad = parse_auto_pad(info);
    a.kernel_shape = info.attr_ints("kernel_shape");
    a.strides = info.attr_ints("strides");
    a.dilations = info.attr_ints("dilations");
    a.pads = info.attr_ints("pads");
    a.output_padding = info.attr_ints("output_padding");
    a.output_shape = info.attr_ints("output_shape");
    return a;
  }
};

// Python-style floor division, as the spec's pad formula uses for negative totals.
inline int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0); }

// The geometry for X of `x_shape` (N, C, spatial...) and W of `w_shape`
// (C, M/group, kernel...); errors name `label`.
inline Result<Geometry> resolve_conv_transpose(const std::string& label, const ConvTransposeAttributes& attrs,
                                               const Shape& x_shape, const Shape& w_shape) {
  const size_t rank = x_shape.size() - 2;
  Geometry geo;
  geo.input = tail(x_shape, 2);
  geo.kernel = tail(w_shape, 2);
  if (!attrs.kernel_shape.empty() && attrs.kernel_shape != geo.kernel) {
    return invalid_argument(label, ": kernel_shape ", shape_to_string(attrs.kernel_shape),
                            " does not match W's spatial shape ", shape_to_string(geo.kernel));
  }
  auto take = [&](const std::vector<int64_t>& v, size_t n, int64_t dflt, const char* name,
                  std::vector<int64_t>& out) -> Status {
    if (v.empty()) {
      out.assign(n, dflt);
    } else if (v.size() != n) {
      return invalid_argument(label, ": attribute ", name, " has ", v.size(), " values, expected ", n);
    } else {
      out = v;
    }
    return Status::ok();
  };
  std::vector<int64_t> pads, output_padding, output_shape;
  ONYX_RETURN_IF_ERROR(take(attrs.strides, rank, 1, "strides", geo.strides));
  ONYX_RETURN_IF_ERROR(take(attrs.dilations, rank, 1, "dilations", geo.dilations));
  ONYX_RETURN_IF_ERROR(take(attrs.output_padding, rank, 0, "output_padding", output_padding));
  // Some exporters write output_shape with the N and C dims in front.
  std::vector<int64_t> given_shape = attrs.output_shape;
  if (given_shape.size() == rank + 2) given_shape.erase(given_shape.begin(), given_shape.begin() + 2);
  if (!given_shape.empty() && given_shape.size() != rank) {
    return invalid_argument(label, ": attribute output_shape has ", attrs.output_shape.size(), " values, expected ",
                            rank);
  }
  const bool same = attrs.auto_pad == AutoPad::kSameUpper || attrs.auto_pad == AutoPad::kSameLower;
  geo.output.assign(rank, 0);
  geo.pads_begin.assign(rank, 0);
  if (same && attrs.pads.empty()) {
    for (size_t d = 0; d < rank; ++d) {
      const int64_t out = given_shape.empty() ? geo.input[d] * geo.strides[d] : given_shape[d];
      const int64_t total =
          geo.strides[d] * (geo.input[d] - 1) + output_padding[d] + (geo.kernel[d] - 1) * geo.dilations[d] + 1 - out;
      const int64_t half = floor_div(total, 2);
      geo.pads_begin[d] = attrs.auto_pad == AutoPad::kSameUpper ? half : total - half;
      geo.output[d] = out;
    }
  } else {
    ONYX_RETURN_IF_ERROR(
        take(attrs.auto_pad == AutoPad::kValid ? std::vector<int64_t>{} : attrs.pads, 2 * rank, 0, "pads", pads));
    for (size_t d = 0; d < rank; ++d) {
      geo.pads_begin[d] = pads[d];
      geo.output[d] = given_shape.empty() ? geo.strides[d] * (geo.input[d] - 1) + output_padding[d] +
                                                (geo.kernel[d] - 1) * geo.dilations[d] + 1 - pads[d] - pads[d + rank]
                                          : given_shape[d];
    }
  }
  for (size_t d = 0; d < rank; ++d) {
    if (geo.strides[d] < 1 || geo.dilations[d] < 1 || geo.kernel[d] < 1 || geo.output[d] < 0) {
      return invalid_argument(label, ": spatial axis ", d, " has stride ", geo.strides[d], ", dilation ",
                              geo.dilations[d], ", kernel ", geo.kernel[d], ", output size ", geo.output[d],
                              "; expected positive strides, dilations and kernel and a non-negative output");
    }
  }
  return geo;
}

}  // namespace onyx::cpu::nn
