// Tests of the RNN, GRU and LSTM kernels against per-element reference loops
// (one batch entry and one time step at a time, no GEMM), over directions,
// layouts, sequence_lens, initial states, activations, clip and types.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "model_builder.h"
#include "onyx/session.h"

namespace onyx {
namespace {

using testing::attr_float;
using testing::attr_floats;
using testing::attr_int;
using testing::attr_string;
using testing::random_floats;
using testing::run_kernel;

graph::Attribute attr_strings(const std::string& name, std::vector<std::string> v) {
  graph::Attribute a;
  a.name = name;
  a.type = graph::AttributeType::kStrings;
  a.strings = std::move(v);
  return a;
}

Tensor make(const std::vector<float>& v, Shape shape) { return Tensor::from_vector<float>(v, std::move(shape)); }

void expect_near_all(const Tensor& got, const std::vector<double>& want, double tol = 1e-4) {
  ASSERT_EQ(got.size(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    double g = 0;
    if (got.dtype() == DataType::kFloat) g = got.data<float>()[i];
    else if (got.dtype() == DataType::kDouble) g = got.data<double>()[i];
    else if (got.dtype() == DataType::kFloat16) g = float(got.data<Float16>()[i]);
    ASSERT_NEAR(g, want[i], tol * (1.0 + std::fabs(want[i]))) << "at element " << i;
  }
}

struct Act {
  std::string name;
  double alpha = 0, beta = 0;
  double operator()(double x) const {
    if (name == "Sigmoid") return 1 / (1 + std::exp(-x));
    if (name == "Tanh") return std::tanh(x);
    if (name == "Relu") return x > 0 ? x : 0;
    if (name == "LeakyRelu") return x >= 0 ? x : alpha * x;
    if (name == "HardSigmoid") return std::max(0.0, std::min(1.0, alpha * x + beta));
    if (name == "Affine") return alpha * x + beta;
    if (name == "ScaledTanh") return alpha * std::tanh(beta * x);
    if (name == "ThresholdedRelu") return x > alpha ? x : 0;
    if (name == "Elu") return x >= 0 ? x : alpha * (std::exp(x) - 1);
    if (name == "Softsign") return x / (1 + std::fabs(x));
    if (name == "Softplus") return std::log(1 + std::exp(x));
    ADD_FAILURE() << "unknown activation " << name;
    return 0;
  }
};

// The problem, time-major: X [S,B,I], W [D,G*H,I], R [D,G*H,H], Bias [D,2*G*H],
// h0/c0 [D,B,H], P [D,3H], lens [B].
struct Problem {
  int64_t S, B, I, H, D, G;
  std::vector<float> x, w, r, bias, h0, c0, p;
  std::vector<int32_t> lens;
};

Problem make_problem(int64_t S, int64_t B, int64_t I, int64_t H, int64_t D, int64_t G, uint32_t seed) {
  Problem pr{S, B, I, H, D, G, {}, {}, {}, {}, {}, {}, {}, {}};
  pr.x = random_floats(static_cast<size_t>(S * B * I), seed);
  pr.w = random_floats(static_cast<size_t>(D * G * H * I), seed + 1, -0.6f, 0.6f);
  pr.r = random_floats(static_cast<size_t>(D * G * H * H), seed + 2, -0.6f, 0.6f);
  pr.bias = random_floats(static_cast<size_t>(D * 2 * G * H), seed + 3, -0.3f, 0.3f);
  pr.h0 = random_floats(static_cast<size_t>(D * B * H), seed + 4);
  pr.c0 = random_floats(static_cast<size_t>(D * B * H), seed + 5);
  pr.p = random_floats(static_cast<size_t>(D * 3 * H), seed + 6, -0.5f, 0.5f);
  pr.lens.assign(static_cast<size_t>(B), static_cast<int32_t>(S));
  return pr;
}

// Pre-activation of gate k, unit j: W x + R h + Wb + Rb (rb_scale 0 drops Rb).
double gate_pre(const Problem& pr, int64_t d, int64_t k, int64_t j, const double* x, const std::vector<double>& h,
                bool with_r = true, bool with_rb = true) {
  const int64_t row = k * pr.H + j;
  double v = pr.bias[static_cast<size_t>(d * 2 * pr.G * pr.H + row)];
  if (with_rb) v += pr.bias[static_cast<size_t>(d * 2 * pr.G * pr.H + pr.G * pr.H + row)];
  for (int64_t i = 0; i < pr.I; ++i) v += pr.w[static_cast<size_t>((d * pr.G * pr.H + row) * pr.I + i)] * x[i];
  if (with_r) {
    for (int64_t i = 0; i < pr.H; ++i) v += pr.r[static_cast<size_t>((d * pr.G * pr.H + row) * pr.H + i)] * h[static_cast<size_t>(i)];
  }
  return v;
}

double clipped(double v, double clip) { return clip > 0 ? std::max(-clip, std::min(clip, v)) : v; }

// Reference for all three ops; returns Y [S,D,B,H], Y_h and Y_c [D,B,H].
struct RefOut {
  std::vector<double> y, y_h, y_c;
};
RefOut reference(const std::string& op, const Problem& pr, const std::string& direction, const std::vector<Act>& acts,
                 double clip = 0, bool linear_before_reset = false, bool input_forget = false, bool peepholes = false) {
  const int64_t S = pr.S, B = pr.B, H = pr.H, D = pr.D;
  RefOut out;
  out.y.assign(static_cast<size_t>(S * D * B * H), 0.0);
  out.y_h.assign(static_cast<size_t>(D * B * H), 0.0);
  out.y_c.assign(static_cast<size_t>(D * B * H), 0.0);
  const size_t per = acts.size() / static_cast<size_t>(D);
  for (int64_t d = 0; d < D; ++d) {
    const bool reverse = direction == "reverse" || (direction == "bidirectional" && d == 1);
    const Act* a = &acts[static_cast<size_t>(d) * per];
    for (int64_t b = 0; b < B; ++b) {
      std::vector<double> h(static_cast<size_t>(H)), c(static_cast<size_t>(H));
      for (int64_t j = 0; j < H; ++j) {
        h[static_cast<size_t>(j)] = pr.h0[static_cast<size_t>((d * B + b) * H + j)];
        c[static_cast<size_t>(j)] = pr.c0[static_cast<size_t>((d * B + b) * H + j)];
      }
      const int64_t len = pr.lens[static_cast<size_t>(b)];
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = reverse ? len - 1 - s : s;
        std::vector<double> xd(static_cast<size_t>(pr.I));
        for (int64_t i = 0; i < pr.I; ++i) xd[static_cast<size_t>(i)] = pr.x[static_cast<size_t>((t * B + b) * pr.I + i)];
        std::vector<double> nh(static_cast<size_t>(H)), nc(static_cast<size_t>(H));
        for (int64_t j = 0; j < H; ++j) {
          if (op == "RNN") {
            nh[static_cast<size_t>(j)] = a[0](clipped(gate_pre(pr, d, 0, j, xd.data(), h), clip));
          } else if (op == "GRU") {
            const double z = a[0](clipped(gate_pre(pr, d, 0, j, xd.data(), h), clip));
            const double r_j = a[0](clipped(gate_pre(pr, d, 1, j, xd.data(), h), clip));
            double pre;
            if (linear_before_reset) {
              // Wh x + Wbh + r * (Rh h + Rbh)
              const double input_part = gate_pre(pr, d, 2, j, xd.data(), h, false, false);
              double rec = pr.bias[static_cast<size_t>(d * 6 * H + 5 * H + j)];
              for (int64_t i = 0; i < H; ++i) rec += pr.r[static_cast<size_t>((d * 3 * H + 2 * H + j) * H + i)] * h[static_cast<size_t>(i)];
              pre = input_part + r_j * rec;
            } else {
              pre = gate_pre(pr, d, 2, j, xd.data(), h, false, true);
              for (int64_t i = 0; i < H; ++i) {
                // r for unit i multiplies h_i before the matmul.
                const double r_i = a[0](clipped(gate_pre(pr, d, 1, i, xd.data(), h), clip));
                pre += pr.r[static_cast<size_t>((d * 3 * H + 2 * H + j) * H + i)] * r_i * h[static_cast<size_t>(i)];
              }
            }
            const double cand = a[1](clipped(pre, clip));
            nh[static_cast<size_t>(j)] = (1 - z) * cand + z * h[static_cast<size_t>(j)];
          } else {  // LSTM, gates i, o, f, c
            const double pi = peepholes ? pr.p[static_cast<size_t>(d * 3 * H + j)] : 0.0;
            const double po = peepholes ? pr.p[static_cast<size_t>(d * 3 * H + H + j)] : 0.0;
            const double pf = peepholes ? pr.p[static_cast<size_t>(d * 3 * H + 2 * H + j)] : 0.0;
            const double cj = c[static_cast<size_t>(j)];
            const double ig = a[0](clipped(gate_pre(pr, d, 0, j, xd.data(), h) + pi * cj, clip));
            const double fg = input_forget ? 1 - ig : a[0](clipped(gate_pre(pr, d, 2, j, xd.data(), h) + pf * cj, clip));
            const double cc = a[1](clipped(gate_pre(pr, d, 3, j, xd.data(), h), clip));
            const double ct = fg * cj + ig * cc;
            const double og = a[0](clipped(gate_pre(pr, d, 1, j, xd.data(), h) + po * ct, clip));
            nc[static_cast<size_t>(j)] = ct;
            nh[static_cast<size_t>(j)] = og * a[2](ct);
          }
        }
        h = nh;
        if (op == "LSTM") c = nc;
        for (int64_t j = 0; j < H; ++j) out.y[static_cast<size_t>(((t * D + d) * B + b) * H + j)] = h[static_cast<size_t>(j)];
      }
      for (int64_t j = 0; j < H; ++j) {
        out.y_h[static_cast<size_t>((d * B + b) * H + j)] = h[static_cast<size_t>(j)];
        out.y_c[static_cast<size_t>((d * B + b) * H + j)] = c[static_cast<size_t>(j)];
      }
    }
  }
  return out;
}

// Inputs in op order: X, W, R, B, sequence_lens, initial_h (+ initial_c, P for LSTM).
std::vector<Value> make_inputs(const Problem& pr, bool lstm, bool with_lens, bool with_peepholes) {
  std::vector<Value> in;
  in.push_back(make(pr.x, {pr.S, pr.B, pr.I}));
  in.push_back(make(pr.w, {pr.D, pr.G * pr.H, pr.I}));
  in.push_back(make(pr.r, {pr.D, pr.G * pr.H, pr.H}));
  in.push_back(make(pr.bias, {pr.D, 2 * pr.G * pr.H}));
  if (with_lens) {
    in.push_back(Tensor::from_vector<int32_t>(pr.lens, {pr.B}));
  } else {
    in.push_back(Value());
  }
  in.push_back(make(pr.h0, {pr.D, pr.B, pr.H}));
  if (lstm) {
    in.push_back(make(pr.c0, {pr.D, pr.B, pr.H}));
    if (with_peepholes) in.push_back(make(pr.p, {pr.D, 3 * pr.H}));
  }
  return in;
}

TEST(Rnn, EveryDirectionWithSequenceLensAndActivations) {
  for (const std::string direction : {"forward", "reverse", "bidirectional"}) {
    const int64_t D = direction == "bidirectional" ? 2 : 1;
    Problem pr = make_problem(5, 3, 4, 6, D, 1, 11);
    pr.lens = {5, 2, 0};
    std::vector<Act> acts = {{"LeakyRelu", 0.3, 0}};
    std::vector<std::string> names = {"LeakyRelu"};
    std::vector<float> alphas = {0.3f};
    if (D == 2) {
      acts.push_back({"HardSigmoid", 0.25, 0.4});
      names.push_back("HardSigmoid");
      alphas.push_back(0.25f);
    }
    const RefOut want = reference("RNN", pr, direction, acts);
    auto run = run_kernel("RNN", 22, make_inputs(pr, false, true, false),
                          {attr_int("hidden_size", pr.H), attr_string("direction", direction), attr_strings("activations", names),
                           attr_floats("activation_alpha", alphas), attr_floats("activation_beta", {0.4f})},
                          2);
    ASSERT_TRUE(run.status.is_ok()) << run.status.message();
    expect_near_all(run.outputs[0].tensor(), want.y);
    expect_near_all(run.outputs[1].tensor(), want.y_h);
  }
}

TEST(Rnn, DefaultsWithClipAndThreads) {
  Problem pr = make_problem(4, 5, 3, 7, 1, 1, 21);
  for (auto& v : pr.x) v *= 4;
  const RefOut want = reference("RNN", pr, "forward", {{"Tanh"}}, 0.5);
  auto run = run_kernel("RNN", 7, make_inputs(pr, false, false, false), {attr_int("hidden_size", pr.H), attr_float("clip", 0.5f)},
                        2, "", 3);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  expect_near_all(run.outputs[0].tensor(), want.y);
  expect_near_all(run.outputs[1].tensor(), want.y_h);
}

TEST(Gru, LinearBeforeResetBothWaysEveryDirection) {
  for (int lbr = 0; lbr < 2; ++lbr)
    for (const std::string direction : {"forward", "reverse", "bidirectional"}) {
      const int64_t D = direction == "bidirectional" ? 2 : 1;
      Problem pr = make_problem(4, 3, 5, 4, D, 3, 31 + lbr);
      pr.lens = {4, 3, 1};
      std::vector<Act> acts;
      for (int64_t d = 0; d < D; ++d) {
        acts.push_back({"Sigmoid"});
        acts.push_back({"Tanh"});
      }
      const RefOut want = reference("GRU", pr, direction, acts, 0, lbr == 1);
      auto run = run_kernel("GRU", 14, make_inputs(pr, false, true, false),
                            {attr_int("hidden_size", pr.H), attr_string("direction", direction), attr_int("linear_before_reset", lbr)}, 2);
      ASSERT_TRUE(run.status.is_ok()) << run.status.message();
      expect_near_all(run.outputs[0].tensor(), want.y);
      expect_near_all(run.outputs[1].tensor(), want.y_h);
    }
}

TEST(Gru, CustomActivationsAndBatchMajorLayout) {
  Problem pr = make_problem(3, 2, 3, 5, 1, 3, 41);
  const std::vector<Act> acts = {{"HardSigmoid", 0.3, 0.6}, {"Softsign"}};
  const RefOut want = reference("GRU", pr, "forward", acts);
  // Batch-major copies of X and initial_h.
  std::vector<float> xb(pr.x.size()), hb(pr.h0.size());
  for (int64_t s = 0; s < pr.S; ++s)
    for (int64_t b = 0; b < pr.B; ++b)
      for (int64_t i = 0; i < pr.I; ++i) xb[static_cast<size_t>((b * pr.S + s) * pr.I + i)] = pr.x[static_cast<size_t>((s * pr.B + b) * pr.I + i)];
  for (int64_t b = 0; b < pr.B; ++b)
    for (int64_t j = 0; j < pr.H; ++j) hb[static_cast<size_t>(b * pr.H + j)] = pr.h0[static_cast<size_t>(b * pr.H + j)];
  std::vector<Value> in = {make(xb, {pr.B, pr.S, pr.I}), make(pr.w, {1, 3 * pr.H, pr.I}), make(pr.r, {1, 3 * pr.H, pr.H}),
                           make(pr.bias, {1, 6 * pr.H}), Value(), make(hb, {pr.B, 1, pr.H})};
  auto run = run_kernel("GRU", 22, in,
                        {attr_int("hidden_size", pr.H), attr_int("layout", 1), attr_strings("activations", {"HardSigmoid", "Softsign"}),
                         attr_floats("activation_alpha", {0.3f}), attr_floats("activation_beta", {0.6f})},
                        2);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  const Tensor& y = run.outputs[0].tensor();
  ASSERT_EQ(y.shape(), (Shape{pr.B, pr.S, 1, pr.H}));
  std::vector<double> want_y(want.y.size());
  for (int64_t s = 0; s < pr.S; ++s)
    for (int64_t b = 0; b < pr.B; ++b)
      for (int64_t j = 0; j < pr.H; ++j)
        want_y[static_cast<size_t>((b * pr.S + s) * pr.H + j)] = want.y[static_cast<size_t>((s * pr.B + b) * pr.H + j)];
  expect_near_all(y, want_y);
  ASSERT_EQ(run.outputs[1].tensor().shape(), (Shape{pr.B, 1, pr.H}));
  expect_near_all(run.outputs[1].tensor(), want.y_h);
}

TEST(Lstm, PeepholesAndEveryDirection) {
  for (const std::string direction : {"forward", "reverse", "bidirectional"}) {
    const int64_t D = direction == "bidirectional" ? 2 : 1;
    Problem pr = make_problem(5, 3, 4, 3, D, 4, 51);
    pr.lens = {2, 5, 4};
    std::vector<Act> acts;
    for (int64_t d = 0; d < D; ++d) {
      acts.push_back({"Sigmoid"});
      acts.push_back({"Tanh"});
      acts.push_back({"Tanh"});
    }
    const RefOut want = reference("LSTM", pr, direction, acts, 0, false, false, true);
    auto run = run_kernel("LSTM", 22, make_inputs(pr, true, true, true),
                          {attr_int("hidden_size", pr.H), attr_string("direction", direction)}, 3);
    ASSERT_TRUE(run.status.is_ok()) << run.status.message();
    expect_near_all(run.outputs[0].tensor(), want.y);
    expect_near_all(run.outputs[1].tensor(), want.y_h);
    expect_near_all(run.outputs[2].tensor(), want.y_c);
  }
}

TEST(Lstm, InputForgetClipAndActivations) {
  Problem pr = make_problem(4, 2, 3, 5, 1, 4, 61);
  for (auto& v : pr.x) v *= 3;
  const std::vector<Act> acts = {{"Sigmoid"}, {"ScaledTanh", 1.5, 0.7}, {"Elu", 0.8, 0}};
  const RefOut want = reference("LSTM", pr, "forward", acts, 1.2, false, true, false);
  auto run = run_kernel("LSTM", 14, make_inputs(pr, true, false, false),
                        {attr_int("hidden_size", pr.H), attr_int("input_forget", 1), attr_float("clip", 1.2f),
                         attr_strings("activations", {"Sigmoid", "ScaledTanh", "Elu"}), attr_floats("activation_alpha", {1.5f, 0.8f}),
                         attr_floats("activation_beta", {0.7f})},
                        3);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  expect_near_all(run.outputs[0].tensor(), want.y);
  expect_near_all(run.outputs[2].tensor(), want.y_c);
}

TEST(Lstm, DoubleAndFloat16) {
  Problem pr = make_problem(3, 2, 3, 4, 1, 4, 71);
  const RefOut want = reference("LSTM", pr, "forward", {{"Sigmoid"}, {"Tanh"}, {"Tanh"}});
  {
    std::vector<Value> in = make_inputs(pr, true, false, false);
    for (auto& v : in) {
      if (!v.is_tensor() || v.tensor().dtype() != DataType::kFloat) continue;
      const Tensor& t = v.tensor();
      std::vector<double> d(t.data<float>(), t.data<float>() + t.size());
      v = Tensor::from_vector<double>(d, t.shape());
    }
    auto run = run_kernel("LSTM", 22, in, {attr_int("hidden_size", pr.H)}, 2);
    ASSERT_TRUE(run.status.is_ok()) << run.status.message();
    ASSERT_EQ(run.outputs[0].tensor().dtype(), DataType::kDouble);
    expect_near_all(run.outputs[0].tensor(), want.y, 1e-9);
  }
  {
    // Round the problem's values to half first so the reference sees the same inputs.
    for (auto* vec : {&pr.x, &pr.w, &pr.r, &pr.bias, &pr.h0, &pr.c0})
      for (auto& v : *vec) v = float(Float16(v));
    const RefOut want16 = reference("LSTM", pr, "forward", {{"Sigmoid"}, {"Tanh"}, {"Tanh"}});
    std::vector<Value> in = make_inputs(pr, true, false, false);
    for (auto& v : in) {
      if (!v.is_tensor() || v.tensor().dtype() != DataType::kFloat) continue;
      const Tensor& t = v.tensor();
      std::vector<Float16> h;
      for (int64_t i = 0; i < t.size(); ++i) h.push_back(Float16(t.data<float>()[i]));
      v = Tensor::from_vector<Float16>(h, t.shape());
    }
    auto run = run_kernel("LSTM", 22, in, {attr_int("hidden_size", pr.H)}, 2);
    ASSERT_TRUE(run.status.is_ok()) << run.status.message();
    ASSERT_EQ(run.outputs[0].tensor().dtype(), DataType::kFloat16);
    expect_near_all(run.outputs[0].tensor(), want16.y, 2e-3);
  }
}

// W and R as initializers: the kernels pack them once, at creation, and the
// session may drop the originals. Hidden sizes span several GEMM panels, batch
// 1 takes the packed row (GEMV) path, and a second run reuses the packs.
TEST(Recurrent, ConstantWeightsPackedAtCreation) {
  struct Case {
    std::string op;
    int64_t gates;
    bool linear_before_reset;
    std::string direction;
  };
  for (const Case& c : {Case{"RNN", 1, false, "bidirectional"}, Case{"GRU", 3, false, "forward"},
                        Case{"GRU", 3, true, "bidirectional"}, Case{"LSTM", 4, false, "reverse"},
                        Case{"LSTM", 4, false, "bidirectional"}}) {
    const int64_t D = c.direction == "bidirectional" ? 2 : 1;
    for (int64_t B : {1, 3}) {
      Problem pr = make_problem(5, B, 19, 37, D, c.gates, 91);
      const bool lstm = c.op == "LSTM";
      std::vector<Act> acts;
      for (int64_t d = 0; d < D; ++d) {
        if (c.op == "RNN") acts.push_back({"Tanh"});
        if (c.op != "RNN") acts.push_back({"Sigmoid"});
        if (c.op != "RNN") acts.push_back({"Tanh"});
        if (lstm) acts.push_back({"Tanh"});
      }
      const RefOut want = reference(c.op, pr, c.direction, acts, 0, c.linear_before_reset);
      const int64_t H = pr.H, GH = c.gates * H;
      testing::ModelBuilder mb(14);
      mb.input("x", {pr.S, B, pr.I})
          .initializer("w", {D, GH, pr.I}, pr.w)
          .initializer("r", {D, GH, H}, pr.r)
          .initializer("b", {D, 2 * GH}, pr.bias)
          .initializer("h0", {D, B, H}, pr.h0);
      std::vector<std::string> inputs = {"x", "w", "r", "b", "", "h0"};
      std::vector<std::string> outputs = {"y", "y_h"};
      if (lstm) {
        mb.initializer("c0", {D, B, H}, pr.c0);
        inputs.push_back("c0");
        outputs.push_back("y_c");
      }
      mb.node(c.op, inputs, outputs, "rec");
      auto& attributes = mb.proto().graph->node.back().attribute;
      attributes.push_back(testing::int_attr("hidden_size", H));
      attributes.push_back(testing::string_attr("direction", c.direction));
      if (c.linear_before_reset) attributes.push_back(testing::int_attr("linear_before_reset", 1));
      for (const std::string& o : outputs) mb.output(o);
      auto session = InferenceSession::from_bytes(mb.bytes());
      const std::string what = c.op + " " + c.direction + " batch " + std::to_string(B);
      for (int round = 0; round < 2; ++round) {
        auto out = session->run({}, {{"x", Value(make(pr.x, {pr.S, B, pr.I}))}});
        SCOPED_TRACE(what + ", run " + std::to_string(round));
        expect_near_all(out[0].tensor(), want.y);
        expect_near_all(out[1].tensor(), want.y_h);
        if (lstm) expect_near_all(out[2].tensor(), want.y_c);
      }
    }
  }
}

TEST(RecurrentErrors, BadShapesAttributesAndLengths) {
  Problem pr = make_problem(3, 2, 3, 4, 1, 1, 81);
  std::vector<Value> in = make_inputs(pr, false, false, false);
  in[1] = make(pr.w, {1, pr.H, pr.I + 1});  // W with the wrong input size
  auto run = run_kernel("RNN", 22, in, {attr_int("hidden_size", pr.H)}, 2);
  EXPECT_FALSE(run.status.is_ok());
  EXPECT_NE(run.status.message().find("input W"), std::string::npos) << run.status.message();

  run = run_kernel("RNN", 22, make_inputs(pr, false, false, false), {attr_int("hidden_size", pr.H), attr_string("direction", "sideways")}, 2);
  EXPECT_FALSE(run.status.is_ok());

  run = run_kernel("RNN", 22, make_inputs(pr, false, false, false),
                   {attr_int("hidden_size", pr.H), attr_strings("activations", {"Cosine"})}, 2);
  EXPECT_FALSE(run.status.is_ok());

  pr.lens = {7, 1};  // longer than the sequence
  run = run_kernel("RNN", 22, make_inputs(pr, false, true, false), {attr_int("hidden_size", pr.H)}, 2);
  EXPECT_FALSE(run.status.is_ok());
  EXPECT_NE(run.status.message().find("sequence_lens"), std::string::npos) << run.status.message();

  // Bidirectional with a single-direction W.
  run = run_kernel("GRU", 22, make_inputs(make_problem(3, 2, 3, 4, 1, 3, 82), false, false, false),
                   {attr_int("hidden_size", 4), attr_string("direction", "bidirectional")}, 2);
  EXPECT_FALSE(run.status.is_ok());
}

}  // namespace
}  // namespace onyx
