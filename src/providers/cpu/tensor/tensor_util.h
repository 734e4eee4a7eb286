// Shared helpers for the CPU tensor-manipulation kernels: a type-generic
// strided copier (the engine behind Transpose, Slice, Concat, Split, Expand,
// Tile, Pad, DepthToSpace...), axis normalisation and reading index tensors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/thread_pool.h"
#include "onyx/status.h"
#include "onyx/tensor.h"
#include "providers/kernel.h"

namespace onyx::cpu {

// A 16-byte element (complex128) moved as one unit.
struct Bytes16 {
  uint64_t lo, hi;
  bool operator==(const Bytes16& o) const { return lo == o.lo && hi == o.hi; }
};

// Calls fn(TypeTag-like pointer) with a null pointer whose pointee is the type
// that moves one element of `dtype`: std::string for strings, else an
// unsigned integer (or Bytes16) of the element's size. For ops that only move
// elements, this covers every type (float8, complex...) with five instances.
template <typename Fn>
void dispatch_storage(DataType dtype, Fn&& fn) {
  if (dtype == DataType::kString) {
    fn(static_cast<std::string*>(nullptr));
    return;
  }
  switch (dtype_size(dtype)) {
    case 1: fn(static_cast<uint8_t*>(nullptr)); break;
    case 2: fn(static_cast<uint16_t*>(nullptr)); break;
    case 4: fn(static_cast<uint32_t*>(nullptr)); break;
    case 8: fn(static_cast<uint64_t*>(nullptr)); break;
    case 16: fn(static_cast<Bytes16*>(nullptr)); break;
    default: break;
  }
}

// Row-major strides (in elements) of a dense tensor of `shape`.
std::vector<int64_t> contiguous_strides(const Shape& shape);

// Copies the elements of an n-d box of extent `shape` from `src` to `dst`;
// strides are in elements and may be 0 (broadcast a source element) or
// negative (walk backwards, as Slice with negative steps does). Adjacent dims
// that are contiguous in both source and destination are collapsed first, so
// the inner loop is one memcpy per run wherever the layout allows. Works for
// every element type: strings are assigned, everything else moves as bytes.
void strided_copy(DataType dtype, void* dst, const std::vector<int64_t>& dst_strides, const void* src,
                  const std::vector<int64_t>& src_strides, const Shape& shape, ThreadPool* pool = nullptr);

// Copies `count` contiguous elements (assignment for strings, memcpy otherwise).
void copy_elements(DataType dtype, void* dst, const void* src, int64_t count);
// Sets `count` contiguous elements to the element at `value`.
void fill_elements(DataType dtype, void* dst, const void* value, int64_t count);
// Sets every element of `t` to zero (empty string for strings, false for bool).
void zero_fill(Tensor& t);

// Pointer to element `index` of a type-erased buffer.
inline void* element_at(void* base, DataType dtype, int64_t index) {
  return static_cast<char*>(base) + index * static_cast<int64_t>(dtype_size(dtype));
}
inline const void* element_at(const void* base, DataType dtype, int64_t index) {
  return static_cast<const char*>(base) + index * static_cast<int64_t>(dtype_size(dtype));
}

// Maps a possibly negative axis into [0, rank); the error names the node.
Result<int64_t> normalize_axis(int64_t axis, int64_t rank, const std::string& label, const char* what = "axis");

// The values of an integer tensor (int8..uint64) as int64; other types give an error.
Result<std::vector<int64_t>> read_ints(const Tensor& t, const std::string& label, const char* input_name);
// The first element of a numeric scalar (or 1-element) tensor as double.
Result<double> read_scalar_double(const Tensor& t, const std::string& label, const char* input_name);

// The required tensor input i, or an error naming the node and input.
Result<const Tensor*> required_input(const KernelContext& ctx, size_t i, const char* name);

// What an input is, for an error message: its type and shape, or "missing".
std::string describe_or_missing(const Tensor* t);

}  // namespace onyx::cpu
