// Shared machinery of the RNN, GRU and LSTM kernels: activation functions by
// name with their alpha/beta, direction and layout parsing, loading the common
// inputs (X, W, R, B, sequence_lens, initial_h/initial_c, P) into time-major
// working buffers, the GEMM input projection, and writing Y / Y_h / Y_c back in
// either layout. In float, W and R are packed for the GEMM once (at kernel
// creation when they are constants, else once per run, never per step) and
// Sigmoid and Tanh run in vector loops.
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/cpu/gemm/sgemm.h"
#include "providers/cpu/math/fast_math.h"
#include "providers/kernel.h"

namespace onyx::cpu::rnn {

enum class ActivationKind {
  kRelu,
  kTanh,
  kSigmoid,
  kAffine,
  kLeakyRelu,
  kThresholdedRelu,
  kScaledTanh,
  kHardSigmoid,
  kElu,
  kSoftsign,
  kSoftplus,
};

// One activation with its parameters; apply() runs over a whole gate vector so
// the switch happens once per vector, not per element.
struct Activation {
  ActivationKind kind = ActivationKind::kTanh;
  float alpha = 0.0f;
  float beta = 0.0f;

  template <typename C>
  void apply(C* x, int64_t n) const {
    if constexpr (std::is_same_v<C, float>) {
      // The gate functions of every default LSTM and GRU: each step spends
      // about as long in them as in its recurrent GEMV when they are scalar.
      if (kind == ActivationKind::kSigmoid) return fast_sigmoid_array(x, x, n);
      if (kind == ActivationKind::kTanh) return fast_tanh_array(x, x, n);
    }
    const C a = static_cast<C>(alpha), b = static_cast<C>(beta);
    switch (kind) {
      case ActivationKind::kRelu:
        for (int64_t i = 0; i < n; ++i) x[i] = x[i] > C(0) ? x[i] : C(0);
        break;
      case ActivationKind::kTanh:
        for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i]);
        break;
      case ActivationKind::kSigmoid:
        for (int64_t i = 0; i < n; ++i) x[i] = C(1) / (C(1) + std::exp(-x[i]));
        break;
      case ActivationKind::kAffine:
        for (int64_t i = 0; i < n; ++i) x[i] = a * x[i] + b;
        break;
      case ActivationKind::kLeakyRelu:
        for (int64_t i = 0; i < n; ++i) x[i] = x[i] >= C(0) ? x[i] : a * x[i];
        break;
      case ActivationKind::kThresholdedRelu:
        for (int64_t i = 0; i < n; ++i) x[i] = x[i] > a ? x[i] : C(0);
        break;
      case ActivationKind::kScaledTanh:
        for (int64_t i = 0; i < n; ++i) x[i] = a * std::tanh(b * x[i]);
        break;
      case ActivationKind::kHardSigmoid:
        for (int64_t i = 0; i < n; ++i) x[i] = std::max(C(0), std::min(C(1), a * x[i] + b));
        break;
      case ActivationKind::kElu:
        for (int64_t i = 0; i < n; ++i) x[i] = x[i] >= C(0) ? x[i] : a * (std::exp(x[i]) - C(1));
        break;
      case ActivationKind::kSoftsign:
        for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (C(1) + std::fabs(x[i]));
        break;
      case ActivationKind::kSoftplus:
        // log(1 + e^x) without overflow for large x.
        for (int64_t i = 0; i < n; ++i) x[i] = x[i] > C(0) ? x[i] + std::log1p(std::exp(-x[i])) : std::log1p(std::exp(x[i]));
        break;
    }
  }
};

// Parses `activations`, `activation_alpha` and `activation_beta` for an op with
// `per_direction` activations per direction. alpha/beta values are consumed in
// list order by the activations that take them; missing ones take the defaults
// of the matching ONNX operators. One direction's list is reused for both
// directions of a bidirectional op when only one is given. Throws onyx::Error.
std::vector<Activation> parse_activations(const KernelInfo& info, int per_direction, int64_t num_directions,
                                          const std::vector<std::string>& defaults);

// 1 or 2 from the `direction` attribute; throws onyx::Error on an unknown value.
int64_t parse_direction(const KernelInfo& info, bool* reverse_only);

// Clamps the values to [-clip, clip] when clip > 0.
template <typename C>
inline void clip_values(C* x, int64_t n, float clip) {
  if (clip <= 0.0f) return;
  const C c = static_cast<C>(clip);
  for (int64_t i = 0; i < n; ++i) x[i] = std::max(-c, std::min(c, x[i]));
}

// The common inputs in compute type C, time-major and direction-major.
template <typename C>
struct RecurrentInputs {
  int64_t seq = 0, batch = 0, input_size = 0, hidden = 0, num_directions = 1;
  std::vector<C> x;        // [seq, batch, input]
  std::vector<C> w;        // [dirs, gates*hidden, input]
  std::vector<C> r;        // [dirs, gates*hidden, hidden]
  std::vector<C> bias;     // [dirs, 2*gates*hidden], zeros when B is absent
  std::vector<int64_t> lens;  // [batch], seq when sequence_lens is absent
  std::vector<C> initial_h;   // [dirs, batch, hidden], zeros when absent
  std::vector<C> initial_c;   // LSTM only
  std::vector<C> peepholes;   // LSTM only: [dirs, 3*hidden], zeros when absent
};

template <typename C>
inline void load_as(const Tensor& t, std::vector<C>& out) {
  out.resize(static_cast<size_t>(t.size()));
  (void)dispatch_float(t.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<C>(static_cast<compute_t<T>>(p[i]));
    return Status::ok();
  });
}

template <typename C>
inline void store_as(const C* values, Tensor& out) {
  (void)dispatch_float(out.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    T* p = out.data<T>();
    const int64_t n = out.size();  // a product over the shape: not recomputed per element
    if constexpr (std::is_same_v<T, C>) {
      std::copy(values, values + n, p);
    } else {
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(static_cast<compute_t<T>>(values[i]));
    }
    return Status::ok();
  });
}

// (a, b, rest) -> (b, a, rest): swaps the first two axes of a dense buffer.
template <typename C>
inline std::vector<C> swap_leading_axes(const std::vector<C>& src, int64_t a, int64_t b, int64_t rest) {
  std::vector<C> dst(src.size());
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j)
      std::copy(&src[static_cast<size_t>((i * b + j) * rest)], &src[static_cast<size_t>((i * b + j) * rest)] + rest,
                &dst[static_cast<size_t>((j * a + i) * rest)]);
  return dst;
}

// W and R of every direction packed for the float GEMM, as the right operands
// of X W^T (input projection, all steps at once) and h R^T (every step). R is
// packed in blocks of gate rows (LSTM: one block of 4 gates; GRU: z and r,
// then h, which multiplies r * h when linear_before_reset is 0).
struct PackedWeights {
  std::vector<PackedMatrix> w;  // [direction]; empty matrices when input_size is 0
  std::vector<PackedMatrix> r;  // [direction * blocks + block]
  int64_t blocks = 1;
  bool empty() const { return r.empty(); }
  const PackedMatrix& r_block(int64_t direction, int64_t block) const {
    return r[static_cast<size_t>(direction * blocks + block)];
  }
};

// Packs W [D, G*H, I] and R [D, G*H, H] (float, row-major); `block_gates`
// lists the gates of each block of R, in order, summing to G.
PackedWeights pack_weights(const float* w, const float* r, int64_t num_directions, int64_t gates, int64_t hidden,
                           int64_t input_size, const std::vector<int64_t>& block_gates);

// For a kernel's constructor: W (input 1) and R (input 2) packed when both are
// constant float, float16 or bfloat16 tensors of consistent shapes; empty
// otherwise (compute() then packs them once per run).
PackedWeights pack_constant_weights(const KernelInfo& info, int64_t gates, int64_t num_directions,
                                    const std::vector<int64_t>& block_gates);

// Checks and loads inputs 0..7 of RNN/GRU/LSTM (`lstm` adds initial_c and P).
// With `load_weights` false, W and R are checked but not copied (the kernel
// holds them packed).
template <typename C>
Status load_recurrent_inputs(KernelContext& ctx, int gates, int64_t hidden_attr, int64_t num_directions, bool batch_major,
                             bool lstm, RecurrentInputs<C>& in, bool load_weights = true) {
  auto input = [&](size_t i) { return ctx.input_count() > i ? ctx.input_tensor(i) : nullptr; };
  const Tensor *x = input(0), *w = input(1), *r = input(2), *b = input(3), *lens = input(4), *h0 = input(5);
  const Tensor* c0 = lstm ? input(6) : nullptr;
  const Tensor* p = lstm ? input(7) : nullptr;
  if (x == nullptr || w == nullptr || r == nullptr) return invalid_argument(ctx.label(), ": inputs X, W and R are required");
  const DataType dtype = x->dtype();
  if (dtype != DataType::kFloat && dtype != DataType::kDouble && dtype != DataType::kFloat16 && dtype != DataType::kBFloat16) {
    return invalid_argument(ctx.label(), ": input X has element type ", dtype_name(dtype), ", expected a float type");
  }
  if (x->rank() != 3) {
    return invalid_argument(ctx.label(), ": input X is ", x->describe(), ", expected rank 3 ",
                            batch_major ? "[batch, seq, input]" : "[seq, batch, input]");
  }
  in.num_directions = num_directions;
  in.seq = batch_major ? x->dim(1) : x->dim(0);
  in.batch = batch_major ? x->dim(0) : x->dim(1);
  in.input_size = x->dim(2);
  in.hidden = hidden_attr > 0 ? hidden_attr : (r->rank() == 3 ? r->dim(2) : 0);
  const int64_t D = num_directions, H = in.hidden, G = gates;
  if (H <= 0) return invalid_argument(ctx.label(), ": hidden_size is ", H, ", expected a positive value");
  auto check = [&](const Tensor* t, const char* name, const Shape& want) -> Status {
    if (t == nullptr) return Status::ok();
    if (t->dtype() != dtype || t->shape() != want) {
      return invalid_argument(ctx.label(), ": input ", name, " is ", t->describe(), ", expected ", dtype_name(dtype),
                              shape_to_string(want));
    }
    return Status::ok();
  };
  ONYX_RETURN_IF_ERROR(check(w, "W", {D, G * H, in.input_size}));
  ONYX_RETURN_IF_ERROR(check(r, "R", {D, G * H, H}));
  ONYX_RETURN_IF_ERROR(check(b, "B", {D, 2 * G * H}));
  const Shape state_shape = batch_major ? Shape{in.batch, D, H} : Shape{D, in.batch, H};
  ONYX_RETURN_IF_ERROR(check(h0, "initial_h", state_shape));
  ONYX_RETURN_IF_ERROR(check(c0, "initial_c", state_shape));
  ONYX_RETURN_IF_ERROR(check(p, "P", {D, 3 * H}));

  load_as(*x, in.x);
  if (batch_major) in.x = swap_leading_axes(in.x, in.batch, in.seq, in.input_size);
  if (load_weights) {
    load_as(*w, in.w);
    load_as(*r, in.r);
  }
  if (b) {
    load_as(*b, in.bias);
  } else {
    in.bias.assign(static_cast<size_t>(D * 2 * G * H), C(0));
  }
  in.lens.assign(static_cast<size_t>(in.batch), in.seq);
  if (lens != nullptr) {
    if ((lens->dtype() != DataType::kInt32 && lens->dtype() != DataType::kInt64) || lens->rank() != 1 || lens->dim(0) != in.batch) {
      return invalid_argument(ctx.label(), ": input sequence_lens is ", lens->describe(), ", expected int32[", in.batch, "]");
    }
    for (int64_t i = 0; i < in.batch; ++i) {
      const int64_t len = lens->dtype() == DataType::kInt32 ? lens->data<int32_t>()[i] : lens->data<int64_t>()[i];
      if (len < 0 || len > in.seq) {
        return invalid_argument(ctx.label(), ": sequence_lens[", i, "] is ", len, ", expected a value in [0, ", in.seq, "]");
      }
      in.lens[static_cast<size_t>(i)] = len;
    }
  }
  auto load_state = [&](const Tensor* t, std::vector<C>& out) {
    if (t == nullptr) {
      out.assign(static_cast<size_t>(D * in.batch * H), C(0));
      return;
    }
    load_as(*t, out);
    if (batch_major) out = swap_leading_axes(out, in.batch, D, H);
  };
  load_state(h0, in.initial_h);
  if (lstm) {
    load_state(c0, in.initial_c);
    if (p) {
      load_as(*p, in.peepholes);
    } else {
      in.peepholes.assign(static_cast<size_t>(D * 3 * H), C(0));
    }
  }
  return Status::ok();
}

// xw[seq*batch, G*H] = X W_d^T + bias: the time-independent half of every
// gate, computed for all steps at once with one GEMM.
template <typename C>
std::vector<C> project_inputs(const RecurrentInputs<C>& in, int64_t direction, int gates, const std::vector<C>& gate_bias,
                              ThreadPool* pool) {
  const int64_t rows = in.seq * in.batch, cols = gates * in.hidden;
  std::vector<C> xw(static_cast<size_t>(rows * cols));
  if (rows == 0) return xw;
  for (int64_t i = 0; i < rows; ++i) std::copy(gate_bias.begin(), gate_bias.end(), &xw[static_cast<size_t>(i * cols)]);
  if (in.input_size > 0) {
    gemm<C>(false, true, rows, cols, in.input_size, C(1), in.x.data(), in.input_size,
            &in.w[static_cast<size_t>(direction * cols * in.input_size)], in.input_size, C(1), xw.data(), cols, pool);
  }
  return xw;
}

// The same in float with W packed: the bias is added in the GEMM's write-back.
inline std::vector<float> project_inputs(const RecurrentInputs<float>& in, const PackedMatrix& w, int gates,
                                         const std::vector<float>& gate_bias, ThreadPool* pool) {
  const int64_t rows = in.seq * in.batch, cols = gates * in.hidden;
  std::vector<float> xw(static_cast<size_t>(rows * cols));
  if (rows == 0) return xw;
  if (in.input_size == 0 || w.empty()) {
    for (int64_t i = 0; i < rows; ++i) std::copy(gate_bias.begin(), gate_bias.end(), &xw[static_cast<size_t>(i * cols)]);
    return xw;
  }
  GemmEpilogue bias;
  bias.col_bias = gate_bias.data();
  sgemm_packed_b(false, rows, 1.0f, in.x.data(), in.input_size, w, 0.0f, xw.data(), cols, pool, bias);
  return xw;
}

// Writes Y [seq, dirs, batch, H] (or [batch, seq, dirs, H] batch-major) and
// the final states [dirs, batch, H] (or [batch, dirs, H]) to the outputs that
// were requested, in element type `dtype`.
template <typename C>
void write_outputs(KernelContext& ctx, DataType dtype, bool batch_major, const RecurrentInputs<C>& in, const std::vector<C>& y,
                   const std::vector<C>& y_h, const std::vector<C>* y_c = nullptr) {
  const int64_t S = in.seq, D = in.num_directions, B = in.batch, H = in.hidden;
  if (ctx.output_count() > 0 && ctx.output_requested(0)) {
    if (batch_major) {
      Tensor& out = ctx.allocate_output(0, dtype, {B, S, D, H});
      // [S, D, B, H] -> [B, S, D, H]
      std::vector<C> t(y.size());
      for (int64_t s = 0; s < S; ++s)
        for (int64_t d = 0; d < D; ++d)
          for (int64_t b = 0; b < B; ++b)
            std::copy(&y[static_cast<size_t>(((s * D + d) * B + b) * H)], &y[static_cast<size_t>(((s * D + d) * B + b) * H)] + H,
                      &t[static_cast<size_t>(((b * S + s) * D + d) * H)]);
      store_as(t.data(), out);
    } else {
      Tensor& out = ctx.allocate_output(0, dtype, {S, D, B, H});
      store_as(y.data(), out);
    }
  }
  auto write_state = [&](size_t index, const std::vector<C>& state) {
    if (ctx.output_count() <= index || !ctx.output_requested(index)) return;
    if (batch_major) {
      Tensor& out = ctx.allocate_output(index, dtype, {B, D, H});
      store_as(swap_leading_axes(state, D, B, H).data(), out);
    } else {
      Tensor& out = ctx.allocate_output(index, dtype, {D, B, H});
      store_as(state.data(), out);
    }
  };
  write_state(1, y_h);
  if (y_c) write_state(2, *y_c);
}

}  // namespace onyx::cpu::rnn
