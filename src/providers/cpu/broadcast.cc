// Broadcast shape rules (current and pre-opset-7 legacy) and the planning of
// the collapsed-dimension walk that BroadcastPlan::for_each_span follows.
#include "providers/cpu/broadcast.h"

namespace onyx::cpu {
namespace {

std::string input_name(const std::vector<std::string>& names, size_t i) {
  if (i < names.size() && !names[i].empty()) return "input " + names[i];
  return "input " + std::to_string(i);
}

// Dimension `d` (counted from the left of a rank-`rank` shape) of `shape`
// right-aligned to that rank: missing leading dimensions are 1.
int64_t aligned_dim(const Shape& shape, size_t rank, size_t d) {
  const size_t missing = rank - shape.size();
  return d < missing ? 1 : shape[d - missing];
}

}  // namespace

Result<Shape> broadcast_shapes(const std::string& label, const std::vector<Shape>& shapes,
                               const std::vector<std::string>& names) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  std::vector<size_t> owner(rank, 0);  // which input set each output dim, for the error
  for (size_t d = 0; d < rank; ++d) {
    bool set = false;
    for (size_t i = 0; i < shapes.size(); ++i) {
      const int64_t dim = aligned_dim(shapes[i], rank, d);
      if (dim == 1) continue;
      if (!set) {
        out[d] = dim;
        owner[d] = i;
        set = true;
      } else if (dim != out[d]) {
        return invalid_argument(label, ": ", input_name(names, owner[d]), " ", shape_to_string(shapes[owner[d]]),
                                " and ", input_name(names, i), " ", shape_to_string(shapes[i]),
                                " cannot be broadcast together (output dimension ", d, ": ", out[d], " vs ", dim,
                                ")");
      }
    }
  }
  return out;
}

bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const size_t missing = to.size() - from.size();
  for (size_t d = 0; d < from.size(); ++d) {
    if (from[d] != 1 && from[d] != to[d + missing]) return false;
  }
  return true;
}

Result<Shape> legacy_broadcast_shape(const std::string& label, const Shape& a, const Shape& b, bool broadcast,
                                     bool has_axis, int64_t axis) {
  if (!broadcast) {
    if (a != b) {
      return invalid_argument(label, ": input A ", shape_to_string(a), " and input B ", shape_to_string(b),
                              " differ in shape and the node does not set broadcast=1 (opset < 7 rules)");
    }
    return b;
  }
  const int64_t rank_a = static_cast<int64_t>(a.size());
  const int64_t rank_b = static_cast<int64_t>(b.size());
  if (rank_b > rank_a) {
    return invalid_argument(label, ": input B ", shape_to_string(b), " has a higher rank than input A ",
                            shape_to_string(a), " (legacy broadcast=1 needs rank(B) <= rank(A))");
  }
  int64_t start = has_axis ? axis : rank_a - rank_b;
  if (start < 0) start += rank_a;
  if (start < 0 || start + rank_b > rank_a) {
    return invalid_argument(label, ": axis ", axis, " does not place input B ", shape_to_string(b),
                            " inside input A ", shape_to_string(a));
  }
  Shape padded(a.size(), 1);
  for (int64_t j = 0; j < rank_b; ++j) {
    const int64_t dim_b = b[static_cast<size_t>(j)];
    const int64_t dim_a = a[static_cast<size_t>(start + j)];
    if (dim_b != dim_a && dim_b != 1) {
      return invalid_argument(label, ": input B ", shape_to_string(b), " does not match input A ",
                              shape_to_string(a), " at axis ", start + j, " (", dim_b, " vs ", dim_a,
                              ", legacy broadcast=1)");
    }
    padded[static_cast<size_t>(start + j)] = dim_b;
  }
  return padded;
}

Result<BroadcastPlan> BroadcastPlan::make(const std::string& label, const std::vector<Shape>& inputs,
                                          const std::vector<std::string>& names) {
  ONYX_ASSIGN_OR_RETURN(Shape output, broadcast_shapes(label, inputs, names));
  return make_for_output(label, output, inputs);
}

Result<BroadcastPlan> BroadcastPlan::make_for_output(const std::string& label, const Shape& output,
                                                     const std::vector<Shape>& inputs) {
  if (inputs.empty() || inputs.size() > kMaxInputs) {
    return invalid_argument(label, ": broadcasting supports 1 to ", kMaxInputs, " inputs, got ", inputs.size());
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!broadcasts_to(inputs[i], output)) {
      return invalid_argument(label, ": input ", i, " of shape ", shape_to_string(inputs[i]),
                              " cannot be broadcast to shape ", shape_to_string(output));
    }
  }
  BroadcastPlan plan;
  plan.output_shape_ = output;
  plan.output_size_ = shape_size(output);
  plan.input_count_ = inputs.size();
  for (size_t i = 0; i < inputs.size(); ++i) plan.input_sizes_[i] = shape_size(inputs[i]);
  if (plan.output_size_ == 0) return plan;  // nothing to walk

  // Keep the output dims larger than 1, merging neighbours whose broadcast
  // pattern (which inputs repeat along them) is the same.
  const size_t rank = output.size();
  std::vector<std::array<bool, kMaxInputs>> patterns;
  for (size_t d = 0; d < rank; ++d) {
    if (output[d] == 1) continue;
    std::array<bool, kMaxInputs> repeated{};
    for (size_t i = 0; i < inputs.size(); ++i) repeated[i] = aligned_dim(inputs[i], rank, d) == 1;
    if (!patterns.empty() && patterns.back() == repeated) {
      plan.dims_.back() *= output[d];
    } else {
      patterns.push_back(repeated);
      plan.dims_.push_back(output[d]);
    }
  }
  // Element strides of each input along the collapsed dims: dense products of
  // the dims it does not repeat, 0 along the ones it does.
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<int64_t>& strides = plan.strides_[i];
    strides.assign(plan.dims_.size(), 0);
    int64_t running = 1;
    for (size_t d = plan.dims_.size(); d-- > 0;) {
      if (patterns[d][i]) continue;
      strides[d] = running;
      running *= plan.dims_[d];
    }
  }
  return plan;
}

}  // namespace onyx::cpu
