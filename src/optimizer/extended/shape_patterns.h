// What fusions of transformer exports need to prove about shapes computed at
// run time: the elements of a shape tensor built by Shape/Gather/Concat/...
// (ShapeTerm), whether two values share their leading dims, and whether a
// Reshape only splits or merges trailing dims. Exports build Reshape targets
// from Shape() of some other tensor, so these checks look through that.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "optimizer/pass.h"

namespace onyx::optimizer {

// One element of a shape tensor: a constant, dim `axis` of value `value`,
// or something not understood.
struct ShapeTerm {
  enum class Kind { kConstant, kDim, kUnknown } kind = Kind::kUnknown;
  int64_t constant = 0;
  int32_t value = -1;
  int64_t axis = 0;
  static ShapeTerm of_constant(int64_t c) { return {Kind::kConstant, c, -1, 0}; }
  static ShapeTerm of_dim(int32_t v, int64_t a) { return {Kind::kDim, 0, v, a}; }
  bool is_constant(int64_t c) const { return kind == Kind::kConstant && constant == c; }
};

// The elements of an integer shape tensor, or nullopt when its length is not
// known. `visited` collects the nodes of the computation (for callers that
// remove the Reshape it feeds).
std::optional<std::vector<ShapeTerm>> shape_terms(const PassContext& ctx, int32_t shape, std::vector<size_t>* visited = nullptr);

// Follows `value` back through ops that keep its leading dims (all but the
// last): MatMul by a matrix, bias adds, normalizations over the last axis,
// activations, Split on the last axis, attention, Reshapes that keep them.
int32_t leading_root(const PassContext& ctx, int32_t value);

// True when dim `axis` of `a` is dim `axis` of `b` at run time, for a leading
// axis (known equal numbers, the same symbol, or the same leading root).
bool same_leading_dim(const PassContext& ctx, int32_t a, int32_t b, int64_t axis);

// True when Reshape node `reshape` turns its input x into
// [x.dims[0..keep), tail...]: each of the first `keep` target elements is 0
// (allowzero=0), that dim of x (or of `source`, a value the caller knows to
// share x's leading dims), its known number, or a single -1; each `tail`
// element is the expected number or a single -1. The elements per leading
// index, `trailing_product` (or, when -1, the product of x's known trailing
// dims), must equal the product of `tail` so that any -1 resolves right.
bool reshape_keeps_leading(const PassContext& ctx, const graph::Node& reshape, int32_t source, size_t keep,
                           const std::vector<int64_t>& tail, int64_t trailing_product = -1,
                           std::vector<size_t>* visited = nullptr);

// True when Reshape node `reshape` flattens a rank-3 [., ., K] input to 2-D
// [., K] (row-major, so this is the flattening of the leading dims).
bool reshape_flattens_to_2d(const PassContext& ctx, const graph::Node& reshape, std::vector<size_t>* visited = nullptr);

// Ids of graph nodes computing shape tensors only (Shape, Gather, Concat,
// Unsqueeze, ...), reached backwards from `value`; used to drop a pattern's
// shape computations together with it.
void collect_shape_nodes(const PassContext& ctx, int32_t value, std::vector<size_t>& nodes);

// Integer elements of a constant, when it is a small integer tensor.
std::optional<std::vector<int64_t>> constant_ints(const PassContext& ctx, int32_t value);

// The axis list of Unsqueeze/Squeeze (attribute before opset 13, input after).
std::optional<std::vector<int64_t>> axes_of(const PassContext& ctx, const graph::Node& node);

// Rank of a value when known.
std::optional<size_t> rank_of(const PassContext& ctx, int32_t value);

}  // namespace onyx::optimizer
