// Einsum: the general Einstein summation (implicit or explicit output,
// ellipsis broadcasting, repeated labels as diagonals). Two-operand
// contractions become a batched matmul; everything else runs one generic loop.
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

constexpr int kLetters = 52;  // 'A'..'Z' -> 0..25, 'a'..'z' -> 26..51; ellipsis dims follow

int letter_code(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  return -1;
}

// A term as parsed: letters, and where "..." stands (-1 when absent).
struct RawTerm {
  std::vector<int> letters;
  int ellipsis_at = -1;
};

Result<RawTerm> parse_term(const std::string& text, const std::string& label) {
  RawTerm term;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ') continue;
    if (c == '.') {
      if (term.ellipsis_at >= 0 || text.compare(i, 3, "...") != 0) {
        return invalid_argument(label, ": equation term '", text, "' has a malformed or repeated ellipsis");
      }
      term.ellipsis_at = static_cast<int>(term.letters.size());
      i += 2;
      continue;
    }
    const int code = letter_code(c);
    if (code < 0) return invalid_argument(label, ": equation term '", text, "' has the character '", c, "', expected letters");
    term.letters.push_back(code);
  }
  return term;
}

// Labels of a term after its ellipsis is expanded into ellipsis labels.
std::vector<int> expand(const RawTerm& term, int ellipsis_dims, int total_ellipsis) {
  std::vector<int> out;
  for (int i = 0; i <= static_cast<int>(term.letters.size()); ++i) {
    if (i == term.ellipsis_at) {
      for (int e = 0; e < ellipsis_dims; ++e) out.push_back(kLetters + total_ellipsis - ellipsis_dims + e);
    }
    if (i < static_cast<int>(term.letters.size())) out.push_back(term.letters[static_cast<size_t>(i)]);
  }
  return out;
}

// One operand in label space: its labels per dim, dims and data.
template <typename T>
struct Operand {
  std::vector<int> labels;
  Shape dims;
  const T* data;
};

// out[o] = sum over summed labels of prod over operands. `order` lists the
// output labels then the summed labels; sizes are per label code.
template <typename T, typename Out>
void generic_einsum(const std::vector<Operand<T>>& ops, const std::vector<int>& out_labels,
                    const std::vector<int>& sum_labels, const std::vector<int64_t>& size, Out* out,
                    ThreadPool* pool) {
  using C = compute_t<T>;
  const size_t n_ops = ops.size();
  const size_t n_out = out_labels.size(), n_sum = sum_labels.size();
  // strides[op][position in out_labels ++ sum_labels]
  std::vector<std::vector<int64_t>> strides(n_ops, std::vector<int64_t>(n_out + n_sum, 0));
  for (size_t k = 0; k < n_ops; ++k) {
    const Operand<T>& op = ops[k];
    int64_t stride = 1;
    for (size_t d = op.dims.size(); d-- > 0;) {
      if (op.dims[d] != 1) {
        for (size_t p = 0; p < n_out + n_sum; ++p) {
          const int lab = p < n_out ? out_labels[p] : sum_labels[p - n_out];
          if (lab == op.labels[d]) strides[k][p] += stride;
        }
      }
      stride *= op.dims[d];
    }
  }
  int64_t out_size = 1, sum_size = 1;
  for (int lab : out_labels) out_size *= size[static_cast<size_t>(lab)];
  for (int lab : sum_labels) sum_size *= size[static_cast<size_t>(lab)];
  parallel_for(pool, out_size, static_cast<double>(sum_size * static_cast<int64_t>(n_ops) + 1),
               [&](int64_t begin, int64_t end) {
                 std::vector<int64_t> base(n_ops), off(n_ops), index(n_sum);
                 for (int64_t o = begin; o < end; ++o) {
                   std::fill(base.begin(), base.end(), 0);
                   int64_t rest = o;
                   for (size_t p = n_out; p-- > 0;) {
                     const int64_t extent = size[static_cast<size_t>(out_labels[p])];
                     const int64_t i = rest % extent;
                     rest /= extent;
                     for (size_t k = 0; k < n_ops; ++k) base[k] += i * strides[k][p];
                   }
                   off = base;
                   std::fill(index.begin(), index.end(), 0);
                   C acc = C(0);
                   for (int64_t s = 0; s < sum_size; ++s) {
                     C prod = static_cast<C>(ops[0].data[off[0]]);
                     for (size_t k = 1; k < n_ops; ++k) prod *= static_cast<C>(ops[k].data[off[k]]);
                     acc += prod;
                     for (size_t q = n_sum; q-- > 0;) {
                       const int64_t extent = size[static_cast<size_t>(sum_labels[q])];
                       for (size_t k = 0; k < n_ops; ++k) off[k] += strides[k][n_out + q];
                       if (++index[q] < extent) break;
                       for (size_t k = 0; k < n_ops; ++k) off[k] -= extent * strides[k][n_out + q];
                       index[q] = 0;
                     }
                   }
                   out[o] = static_cast<Out>(acc);
                 }
               });
}

class EinsumKernel final : public Kernel {
 public:
  explicit EinsumKernel(const KernelInfo& info) {
    equation_ = info.attr_string("equation", "");
    if (!info.has_attr("equation")) throw Error(invalid_model(info.label(), ": attribute equation is required"));
  }

  Status compute(KernelContext& ctx) const override {
    const size_t n_inputs = ctx.input_count();
    std::vector<const Tensor*> inputs;
    for (size_t i = 0; i < n_inputs; ++i) {
      const Tensor* t = ctx.input_tensor(i);
      if (t == nullptr) return invalid_argument(ctx.label(), ": input ", i, " is missing");
      if (!inputs.empty() && t->dtype() != inputs[0]->dtype()) {
        return invalid_argument(ctx.label(), ": input ", i, " has type ", dtype_name(t->dtype()), ", expected ",
                                dtype_name(inputs[0]->dtype()), " like input 0");
      }
      inputs.push_back(t);
    }
    if (inputs.empty()) return invalid_argument(ctx.label(), ": Einsum needs at least one input");

    // Split "lhs->rhs" and the lhs terms.
    const size_t arrow = equation_.find("->");
    const std::string lhs = equation_.substr(0, arrow);
    std::vector<std::string> term_texts;
    for (size_t start = 0;;) {
      const size_t comma = lhs.find(',', start);
      term_texts.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (term_texts.size() != inputs.size()) {
      return invalid_argument(ctx.label(), ": equation '", equation_, "' has ", term_texts.size(), " terms but the node has ",
                              inputs.size(), " inputs");
    }
    std::vector<RawTerm> raw;
    int total_ellipsis = 0;
    std::vector<int> ellipsis_dims(inputs.size(), 0);
    for (size_t i = 0; i < inputs.size(); ++i) {
      ONYX_ASSIGN_OR_RETURN(RawTerm term, parse_term(term_texts[i], ctx.label()));
      const int64_t letters = static_cast<int64_t>(term.letters.size());
      const int64_t rank = inputs[i]->rank();
      if ((term.ellipsis_at < 0 && letters != rank) || (term.ellipsis_at >= 0 && letters > rank)) {
        return invalid_argument(ctx.label(), ": equation term '", term_texts[i], "' does not match input ", i, " of rank ", rank);
      }
      ellipsis_dims[i] = static_cast<int>(rank - letters);
      total_ellipsis = std::max(total_ellipsis, ellipsis_dims[i]);
      raw.push_back(std::move(term));
    }
    std::vector<int64_t> size(static_cast<size_t>(kLetters + total_ellipsis), -1);
    std::vector<int> count(size.size(), 0);
    std::vector<std::vector<int>> labels(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      labels[i] = expand(raw[i], ellipsis_dims[i], total_ellipsis);
      for (size_t d = 0; d < labels[i].size(); ++d) {
        const size_t lab = static_cast<size_t>(labels[i][d]);
        const int64_t extent = inputs[i]->dim(static_cast<int64_t>(d));
        ++count[lab];
        if (size[lab] < 0 || size[lab] == 1) {
          size[lab] = (size[lab] == 1 && extent != 1) ? extent : std::max<int64_t>(size[lab], extent);
        } else if (extent != size[lab] && extent != 1) {
          return invalid_argument(ctx.label(), ": equation '", equation_, "': a label has size ", size[lab],
                                  " in one place and ", extent, " in input ", i);
        }
      }
    }
    std::vector<int> out_labels;
    if (arrow != std::string::npos) {
      ONYX_ASSIGN_OR_RETURN(RawTerm out_term, parse_term(equation_.substr(arrow + 2), ctx.label()));
      out_labels = expand(out_term, out_term.ellipsis_at >= 0 ? total_ellipsis : 0, total_ellipsis);
      std::vector<bool> seen(size.size(), false);
      for (int lab : out_labels) {
        if (size[static_cast<size_t>(lab)] < 0) {
          return invalid_argument(ctx.label(), ": equation '", equation_, "': an output label appears in no input");
        }
        if (seen[static_cast<size_t>(lab)]) {
          return invalid_argument(ctx.label(), ": equation '", equation_, "': an output label is repeated");
        }
        seen[static_cast<size_t>(lab)] = true;
      }
    } else {
      // Implicit output: the ellipsis dims, then letters seen exactly once in ASCII order.
      for (int e = 0; e < total_ellipsis; ++e) out_labels.push_back(kLetters + e);
      for (int lab = 0; lab < kLetters; ++lab) {
        if (count[static_cast<size_t>(lab)] == 1) out_labels.push_back(lab);
      }
    }
    std::vector<bool> in_out(size.size(), false);
    for (int lab : out_labels) in_out[static_cast<size_t>(lab)] = true;
    std::vector<int> sum_labels;
    for (size_t lab = 0; lab < size.size(); ++lab) {
      if (size[lab] >= 0 && !in_out[lab]) sum_labels.push_back(static_cast<int>(lab));
    }
    Shape out_shape;
    for (int lab : out_labels) out_shape.push_back(size[static_cast<size_t>(lab)]);

    Status status = dispatch_numeric(inputs[0]->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      Tensor& y = ctx.allocate_output(0, inputs[0]->dtype(), out_shape);
      std::vector<Operand<T>> ops;
      for (size_t i = 0; i < inputs.size(); ++i) ops.push_back({labels[i], inputs[i]->shape(), inputs[i]->template data<T>()});
      if (ops.size() == 2 && !has_broadcast(ops, size)) {
        contract_pair<T>(ops, out_labels, size, y.data<T>(), ctx.thread_pool());
      } else {
        generic_einsum<T, T>(ops, out_labels, sum_labels, size, y.data<T>(), ctx.thread_pool());
      }
      return Status::ok();
    });
    if (!status.is_ok()) return Status(status.code(), ctx.label() + ": " + status.message());
    return status;
  }

 private:
  template <typename T>
  static bool has_broadcast(const std::vector<Operand<T>>& ops, const std::vector<int64_t>& size) {
    for (const auto& op : ops) {
      for (size_t d = 0; d < op.dims.size(); ++d) {
        if (op.dims[d] != size[static_cast<size_t>(op.labels[d])]) return true;
      }
    }
    return false;
  }

  // A (x) B -> out as: A' = A[batch, M, K], B' = B[batch, K, N] (each summing
  // its private labels and taking diagonals), C = A' B', then permute C.
  template <typename T>
  static void contract_pair(const std::vector<Operand<T>>& ops, const std::vector<int>& out_labels,
                            const std::vector<int64_t>& size, T* out, ThreadPool* pool) {
    using C = compute_t<T>;
    const size_t n_labels = size.size();
    std::vector<bool> in_a(n_labels, false), in_b(n_labels, false), in_out(n_labels, false);
    for (int lab : ops[0].labels) in_a[static_cast<size_t>(lab)] = true;
    for (int lab : ops[1].labels) in_b[static_cast<size_t>(lab)] = true;
    for (int lab : out_labels) in_out[static_cast<size_t>(lab)] = true;
    std::vector<int> batch, m_labels, n_labels_list, k_labels, a_only, b_only;
    for (int lab : out_labels) {
      const size_t l = static_cast<size_t>(lab);
      if (in_a[l] && in_b[l]) batch.push_back(lab);
      else if (in_a[l]) m_labels.push_back(lab);
      else n_labels_list.push_back(lab);
    }
    for (size_t l = 0; l < n_labels; ++l) {
      if (in_out[l]) continue;
      if (in_a[l] && in_b[l]) k_labels.push_back(static_cast<int>(l));
      else if (in_a[l]) a_only.push_back(static_cast<int>(l));
      else if (in_b[l]) b_only.push_back(static_cast<int>(l));
    }
    auto product = [&](const std::vector<int>& ls) {
      int64_t p = 1;
      for (int lab : ls) p *= size[static_cast<size_t>(lab)];
      return p;
    };
    const int64_t nb = product(batch), nm = product(m_labels), nn = product(n_labels_list), nk = product(k_labels);
    auto concat = [](std::vector<int> a, const std::vector<int>& b, const std::vector<int>& c) {
      a.insert(a.end(), b.begin(), b.end());
      a.insert(a.end(), c.begin(), c.end());
      return a;
    };
    std::vector<C> a(static_cast<size_t>(nb * nm * nk)), b(static_cast<size_t>(nb * nk * nn));
    generic_einsum<T, C>({ops[0]}, concat(batch, m_labels, k_labels), a_only, size, a.data(), pool);
    generic_einsum<T, C>({ops[1]}, concat(batch, k_labels, n_labels_list), b_only, size, b.data(), pool);
    std::vector<C> c(static_cast<size_t>(nb * nm * nn), C(0));
    parallel_for(pool, nb * nm, static_cast<double>(nk * nn), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const int64_t bi = row / nm;
        const C* pa = a.data() + row * nk;
        const C* pb = b.data() + bi * nk * nn;
        C* pc = c.data() + row * nn;
        for (int64_t k = 0; k < nk; ++k) {
          const C av = pa[k];
          const C* brow = pb + k * nn;
          for (int64_t j = 0; j < nn; ++j) pc[j] += av * brow[j];
        }
      }
    });
    // Permute C (labels batch ++ M ++ N) into the output order.
    std::vector<int> c_labels = concat(batch, m_labels, n_labels_list);
    Shape c_dims;
    for (int lab : c_labels) c_dims.push_back(size[static_cast<size_t>(lab)]);
    std::vector<Operand<C>> c_op{{c_labels, c_dims, c.data()}};
    generic_einsum<C, T>(c_op, out_labels, {}, size, out, pool);
  }

  std::string equation_;
};

ONYX_REGISTER_CPU_KERNEL("", "Einsum", 12, kLatestVersion, types::numeric(), EinsumKernel);

}  // namespace
}  // namespace onyx::cpu
