// Where Slice reads: shared by the Slice kernel and the SliceGrad kernel of
// gradient graphs (src/providers/cpu/training/slice_grad.cc), which writes the
// gradient back to the same elements.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "onyx/status.h"
#include "onyx/tensor.h"
#include "providers/kernel.h"

namespace onyx::cpu {

// The elements of the data that a Slice reads: `shape` is the result's shape,
// element i of the result is data element `offset` + sum_d i_d * strides[d]
// (strides in elements, negative for negative steps).
struct SliceBox {
  Shape shape;
  int64_t offset = 0;
  std::vector<int64_t> strides;
};

// The box of a Slice of data of shape `data`; empty axes mean 0, 1, ...;
// empty steps mean ones.
Result<SliceBox> slice_box(const Shape& data, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                           std::vector<int64_t> axes, std::vector<int64_t> steps, const std::string& label);

// The same with starts, ends and the optional axes and steps read from
// inputs first .. first + 3 (Slice from opset 10).
Result<SliceBox> slice_box_from_inputs(const KernelContext& ctx, size_t first, const Shape& data);

}  // namespace onyx::cpu
