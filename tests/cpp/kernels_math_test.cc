// Unit tests for the CPU element-wise kernels (src/providers/cpu/math) and the
// broadcasting helper: every result is checked against a plain reference loop.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "providers/cpu/broadcast.h"
#include "providers/cpu/dispatch.h"

namespace onyx {
namespace {

using testing::attr_float;
using testing::attr_int;
using testing::attr_string;
using testing::run_kernel;

// ---------------------------------------------------------------------------
// Helpers

// Deterministic test values: a pattern with negatives, zero and fractions.
template <typename T>
Tensor make_tensor(const Shape& shape, int seed = 0) {
  Tensor t(DataTypeOf<T>::value, shape);
  T* p = t.data<T>();
  for (int64_t i = 0; i < t.size(); ++i) {
    const int64_t v = (i * 7 + seed * 13) % 23 - 11;  // -11 .. 11
    if constexpr (std::is_same_v<T, bool>) {
      p[i] = (v % 3) == 0;
    } else if constexpr (std::is_same_v<T, std::string>) {
      p[i] = std::to_string(v % 4);
      p[i].insert(p[i].begin(), 's');
    } else if constexpr (std::is_floating_point_v<T>) {
      p[i] = static_cast<T>(v) * T(0.37);
    } else if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
      p[i] = T(static_cast<float>(v) * 0.375f);
    } else if constexpr (std::is_unsigned_v<T>) {
      p[i] = static_cast<T>(v + 11);
    } else {
      p[i] = static_cast<T>(v);
    }
  }
  return t;
}

// Index of the element of an input of shape `in` that output position
// `flat` (row-major over `out`) reads under NumPy broadcasting.
int64_t broadcast_source(const Shape& out, const Shape& in, int64_t flat) {
  int64_t index = 0;
  int64_t stride = 1;
  int64_t rest = flat;
  for (size_t d = out.size(); d-- > 0;) {
    const int64_t coord = rest % out[d];
    rest /= out[d];
    const size_t missing = out.size() - in.size();
    if (d >= missing) {
      const int64_t dim = in[d - missing];
      if (dim != 1) index += coord * stride;
      stride *= dim;
    }
  }
  return index;
}

Shape reference_broadcast_shape(const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const auto& s : shapes) {
    for (size_t i = 0; i < s.size(); ++i) {
      const size_t d = rank - s.size() + i;
      if (s[i] != 1) out[d] = s[i];
    }
  }
  return out;
}

double as_double(double v) { return v; }
template <typename T>
double as_double(T v) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<double>(v);
  } else {
    return static_cast<double>(static_cast<float>(v));
  }
}

template <typename T>
void expect_close(T got, double want, double rtol, const std::string& where) {
  const double g = as_double(got);
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(g)) << where << ": got " << g << ", expected nan";
  } else if (std::isinf(want)) {
    EXPECT_EQ(g, want) << where;
  } else {
    EXPECT_NEAR(g, want, rtol * std::max(1.0, std::fabs(want)) + 1e-7) << where;
  }
}

// Runs a binary op over a and b and checks every element against ref(a, b).
template <typename TA, typename TB, typename TOut, typename Ref>
void check_binary(const std::string& op, int opset, const Shape& shape_a, const Shape& shape_b, Ref ref,
                  const std::vector<graph::Attribute>& attrs = {}, int threads = 1, int seed_b = 5) {
  Tensor a = make_tensor<TA>(shape_a, 1);
  Tensor b = make_tensor<TB>(shape_b, seed_b);
  auto run = run_kernel(op, opset, {a, b}, attrs, 1, "", threads);
  const std::string where = op + " " + shape_to_string(shape_a) + " x " + shape_to_string(shape_b);
  ASSERT_TRUE(run.status.is_ok()) << where << ": " << run.status.message();
  const Tensor& y = run.outputs[0].tensor();
  const Shape out_shape = reference_broadcast_shape({shape_a, shape_b});
  ASSERT_EQ(y.shape(), out_shape) << where;
  ASSERT_EQ(y.dtype(), DataTypeOf<TOut>::value) << where;
  for (int64_t i = 0; i < y.size(); ++i) {
    const TA va = a.data<TA>()[broadcast_source(out_shape, shape_a, i)];
    const TB vb = b.data<TB>()[broadcast_source(out_shape, shape_b, i)];
    const auto want = ref(va, vb);
    if constexpr (std::is_floating_point_v<TOut> || std::is_same_v<TOut, Float16> ||
                  std::is_same_v<TOut, BFloat16>) {
      expect_close(y.data<TOut>()[i], as_double(want), std::is_same_v<TOut, BFloat16> ? 1e-2 : 1e-3,
                   where + " at " + std::to_string(i));
    } else {
      ASSERT_EQ(y.data<TOut>()[i], static_cast<TOut>(want)) << where << " at " << i;
    }
  }
}

const std::vector<std::pair<Shape, Shape>>& broadcast_cases() {
  static const std::vector<std::pair<Shape, Shape>> cases = {
      {{2, 3}, {2, 3}},        // same shape
      {{}, {2, 3}},            // scalar A
      {{2, 3}, {}},            // scalar B
      {{2, 3}, {1}},           // one-element B
      {{4, 5}, {5}},           // row
      {{4, 5}, {4, 1}},        // column
      {{4, 1}, {1, 5}},        // outer product
      {{2, 1, 4}, {3, 1}},     // general 3-D
      {{1, 3, 1}, {2, 1, 5}},  // general 3-D, both broadcast
      {{2, 3, 4, 5}, {3, 1, 5}},
      {{0, 3}, {3}},  // empty
  };
  return cases;
}

// ---------------------------------------------------------------------------
// The broadcasting helper

TEST(Broadcast, ShapesAndErrors) {
  auto ok = cpu::broadcast_shapes("N", {{2, 1, 4}, {3, 1}, {}});
  ASSERT_TRUE(ok.is_ok());
  EXPECT_EQ(ok.value(), (Shape{2, 3, 4}));
  auto bad = cpu::broadcast_shapes("Add 'x'", {{2, 3}, {4}}, {"A", "B"});
  ASSERT_FALSE(bad.is_ok());
  const std::string& m = bad.status().message();
  EXPECT_NE(m.find("Add 'x'"), std::string::npos) << m;
  EXPECT_NE(m.find("[2,3]"), std::string::npos) << m;
  EXPECT_NE(m.find("[4]"), std::string::npos) << m;
  EXPECT_TRUE(cpu::broadcasts_to({3, 1}, {2, 3, 4}));
  EXPECT_FALSE(cpu::broadcasts_to({2, 3, 4}, {3, 4}));
  EXPECT_FALSE(cpu::broadcasts_to({2}, {3}));
}

// Every piece for_each_span hands out must match the reference indexing, for
// whole ranges and for odd chunk boundaries (as parallel_for splits them).
TEST(Broadcast, SpanWalkMatchesReference) {
  const std::vector<std::vector<Shape>> cases = {
      {{2, 3}, {2, 3}},      {{}, {2, 3}},          {{4, 5}, {5}},          {{4, 5}, {4, 1}},
      {{2, 1, 4}, {3, 1}},   {{1, 3, 1}, {2, 1, 5}}, {{3, 1, 2}, {1, 4, 1}, {3, 4, 2}},
      {{2, 3, 4, 5}, {3, 1, 5}, {1}}, {{1, 1}, {1}},
  };
  for (const auto& shapes : cases) {
    auto plan = cpu::BroadcastPlan::make("test", shapes);
    ASSERT_TRUE(plan.is_ok()) << plan.status().message();
    const Shape out = reference_broadcast_shape(shapes);
    ASSERT_EQ(plan->output_shape(), out);
    const int64_t n = plan->output_size();
    for (int64_t chunk : {n, int64_t{1}, int64_t{3}, int64_t{7}}) {
      if (chunk <= 0) continue;
      std::vector<int> seen(static_cast<size_t>(n), 0);
      for (int64_t begin = 0; begin < n; begin += chunk) {
        plan->for_each_span(begin, std::min(n, begin + chunk), [&](const int64_t* offsets, int64_t o, int64_t count) {
          for (int64_t k = 0; k < count; ++k) {
            ++seen[static_cast<size_t>(o + k)];
            for (size_t i = 0; i < shapes.size(); ++i) {
              ASSERT_EQ(offsets[i] + k * plan->inner_stride(i), broadcast_source(out, shapes[i], o + k))
                  << "input " << i << " at " << o + k;
            }
          }
        });
      }
      for (int count : seen) ASSERT_EQ(count, 1);
    }
  }
}

TEST(Broadcast, LegacyAxis) {
  auto padded = cpu::legacy_broadcast_shape("N", {2, 3, 4, 5}, {3, 4}, true, true, 1);
  ASSERT_TRUE(padded.is_ok());
  EXPECT_EQ(padded.value(), (Shape{1, 3, 4, 1}));
  auto suffix = cpu::legacy_broadcast_shape("N", {2, 3, 4, 5}, {5}, true, false, 0);
  ASSERT_TRUE(suffix.is_ok());
  EXPECT_EQ(suffix.value(), (Shape{1, 1, 1, 5}));
  EXPECT_FALSE(cpu::legacy_broadcast_shape("N", {2, 3}, {3}, false, false, 0).is_ok());
  EXPECT_FALSE(cpu::legacy_broadcast_shape("N", {2, 3}, {2}, true, false, 0).is_ok());
}

// ---------------------------------------------------------------------------
// Binary arithmetic

TEST(MathBinary, AddSubMulDivFloatAllBroadcasts) {
  for (const auto& [sa, sb] : broadcast_cases()) {
    check_binary<float, float, float>("Add", 14, sa, sb, [](float x, float y) { return x + y; });
    check_binary<float, float, float>("Sub", 14, sa, sb, [](float x, float y) { return x - y; });
    check_binary<float, float, float>("Mul", 14, sa, sb, [](float x, float y) { return x * y; });
    check_binary<float, float, float>("Div", 14, sa, sb, [](float x, float y) { return x / y; });
  }
}

TEST(MathBinary, ParallelLargeShapes) {
  for (const auto& [sa, sb] : std::vector<std::pair<Shape, Shape>>{
           {{64, 1000}, {1000}}, {{64, 1000}, {64, 1}}, {{64, 1000}, {64, 1000}}, {{}, {64, 1000}}, {{8, 1, 100}, {30, 1}}}) {
    check_binary<float, float, float>("Add", 14, sa, sb, [](float x, float y) { return x + y; }, {}, 4);
  }
}

template <typename T>
void check_add_mul_for_type() {
  using C = cpu::compute_t<T>;
  for (const auto& [sa, sb] : broadcast_cases()) {
    check_binary<T, T, T>("Add", 14, sa, sb, [](T x, T y) { return static_cast<T>(static_cast<C>(x) + static_cast<C>(y)); });
    check_binary<T, T, T>("Mul", 14, sa, sb, [](T x, T y) { return static_cast<T>(static_cast<C>(x) * static_cast<C>(y)); });
  }
}

TEST(MathBinary, EveryNumericType) {
  check_add_mul_for_type<double>();
  check_add_mul_for_type<Float16>();
  check_add_mul_for_type<BFloat16>();
  check_add_mul_for_type<int8_t>();
  check_add_mul_for_type<int16_t>();
  check_add_mul_for_type<int32_t>();
  check_add_mul_for_type<int64_t>();
  check_add_mul_for_type<uint8_t>();
  check_add_mul_for_type<uint16_t>();
  check_add_mul_for_type<uint32_t>();
  check_add_mul_for_type<uint64_t>();
}

TEST(MathBinary, IntegerDivisionTruncatesAndNeverTraps) {
  auto a = Tensor::from_vector<int32_t>({7, -7, 7, -7, 5, std::numeric_limits<int32_t>::min()}, {6});
  auto b = Tensor::from_vector<int32_t>({2, 2, -2, -2, 0, -1}, {6});
  auto run = run_kernel("Div", 14, {a, b});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  const int32_t* y = run.outputs[0].tensor().data<int32_t>();
  EXPECT_EQ(y[0], 3);
  EXPECT_EQ(y[1], -3);
  EXPECT_EQ(y[2], -3);
  EXPECT_EQ(y[3], 3);
  EXPECT_EQ(y[4], 0);  // division by zero: 0, no SIGFPE
  EXPECT_EQ(y[5], std::numeric_limits<int32_t>::min());  // wraps, no SIGFPE

  auto mod = run_kernel("Mod", 13, {a, b});
  ASSERT_TRUE(mod.status.is_ok()) << mod.status.message();
  EXPECT_EQ(mod.outputs[0].tensor().data<int32_t>()[4], 0);
  EXPECT_EQ(mod.outputs[0].tensor().data<int32_t>()[5], 0);
}

TEST(MathBinary, ModSignRules) {
  // fmod = 0: sign of the divisor (Python); fmod = 1: sign of the dividend (C).
  check_binary<int64_t, int64_t, int64_t>("Mod", 13, {4, 5}, {5}, [](int64_t x, int64_t y) -> int64_t {
    if (y == 0) return 0;
    int64_t r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return r;
  });
  check_binary<int32_t, int32_t, int32_t>(
      "Mod", 13, {4, 5}, {4, 1}, [](int32_t x, int32_t y) { return y == 0 ? 0 : x % y; }, {attr_int("fmod", 1)});
  check_binary<float, float, float>(
      "Mod", 13, {2, 3, 4}, {4}, [](float x, float y) { return std::fmod(x, y); }, {attr_int("fmod", 1)});
  check_binary<uint8_t, uint8_t, uint8_t>("Mod", 13, {3, 4}, {4},
                                          [](uint8_t x, uint8_t y) { return y == 0 ? 0 : x % y; });
}

TEST(MathBinary, PowMixedTypes) {
  check_binary<float, float, float>("Pow", 15, {3, 4}, {4}, [](float x, float y) { return std::pow(x, y); });
  check_binary<float, int64_t, float>("Pow", 15, {3, 4}, {1},
                                      [](float x, int64_t y) { return std::pow(x, static_cast<float>(y)); }, {}, 1, 2);
  check_binary<int32_t, int32_t, int32_t>(
      "Pow", 15, {3, 4}, {4},
      [](int32_t x, int32_t y) -> int32_t {
        if (y < 0) return x == 1 ? 1 : (x == -1 ? (y % 2 ? -1 : 1) : 0);
        int64_t r = 1;
        for (int i = 0; i < y; ++i) r = static_cast<int32_t>(static_cast<uint32_t>(r) * static_cast<uint32_t>(x));
        return static_cast<int32_t>(r);
      },
      {}, 1, 9);
  check_binary<int64_t, float, int64_t>("Pow", 15, {2, 3}, {}, [](int64_t x, float y) {
    const double v = std::pow(static_cast<double>(x), static_cast<double>(y));
    return std::isnan(v) ? int64_t{0} : static_cast<int64_t>(v);
  }, {}, 1, 12);
  check_binary<double, double, double>("Pow", 7, {2, 3}, {3}, [](double x, double y) { return std::pow(x, y); });
}

// Pow(x, 2) with a one-element float exponent is x * x: the same values as
// pow, infinities, NaN, signed zeros, overflow and underflow included. An
// exponent of shape [1, 1, 1] broadcasts X up a rank and keeps the general path.
TEST(MathBinary, PowSquareFastPath) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {0.0f, -0.0f, 1.5f, -3.25f, 1e20f, -1e-30f, 1e-40f, inf, -inf,
                                std::numeric_limits<float>::quiet_NaN(), 7.0f, -0.1f};
  for (const Shape& exponent_shape : {Shape{}, Shape{1}, Shape{1, 1, 1}}) {
    auto run = run_kernel("Pow", 15, {Tensor::from_vector<float>(x, {3, 4}), Tensor::from_vector<float>({2.0f}, exponent_shape)});
    ASSERT_TRUE(run.status.is_ok()) << run.status.message();
    const Tensor& z = run.outputs[0].tensor();
    ASSERT_EQ(z.shape(), exponent_shape.size() == 3 ? (Shape{1, 3, 4}) : (Shape{3, 4}));
    for (size_t i = 0; i < x.size(); ++i) {
      const float want = std::pow(x[i], 2.0f);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(z.data<float>()[i])) << i;
      } else {
        EXPECT_EQ(z.data<float>()[i], want) << "x = " << x[i];
      }
    }
  }
}

TEST(MathBinary, BitShift) {
  auto x = Tensor::from_vector<uint8_t>({16, 4, 1, 255}, {4});
  auto y = Tensor::from_vector<uint8_t>({1, 2, 9, 4}, {4});
  auto right = run_kernel("BitShift", 11, {x, y}, {attr_string("direction", "RIGHT")});
  ASSERT_TRUE(right.status.is_ok()) << right.status.message();
  EXPECT_EQ(right.outputs[0].tensor().data<uint8_t>()[0], 8);
  EXPECT_EQ(right.outputs[0].tensor().data<uint8_t>()[2], 0);
  EXPECT_EQ(right.outputs[0].tensor().data<uint8_t>()[3], 15);
  check_binary<uint32_t, uint32_t, uint32_t>(
      "BitShift", 11, {3, 4}, {4}, [](uint32_t a, uint32_t b) { return b >= 32 ? 0u : a << b; },
      {attr_string("direction", "LEFT")});
  auto bad = run_kernel("BitShift", 11, {x, y}, {attr_string("direction", "UP")});
  EXPECT_FALSE(bad.status.is_ok());
}

TEST(MathBinary, LegacyBroadcastAttributes) {
  Tensor a = make_tensor<float>({2, 3, 4, 5}, 1);
  Tensor b = make_tensor<float>({3, 4}, 2);
  auto run = run_kernel("Add", 6, {a, b}, {attr_int("broadcast", 1), attr_int("axis", 1)});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  const Tensor& y = run.outputs[0].tensor();
  ASSERT_EQ(y.shape(), a.shape());
  for (int64_t i = 0; i < y.size(); ++i) {
    const int64_t j = (i / 5) % 12;  // (c, h) of (n, c, h, w)
    ASSERT_FLOAT_EQ(y.data<float>()[i], a.data<float>()[i] + b.data<float>()[j]);
  }
  // Without broadcast=1 the legacy versions need equal shapes.
  auto strict = run_kernel("Mul", 1, {a, b});
  EXPECT_FALSE(strict.status.is_ok());
  // Suffix alignment by default.
  Tensor c = make_tensor<float>({5}, 3);
  auto suffix = run_kernel("Sub", 6, {a, c}, {attr_int("broadcast", 1)});
  ASSERT_TRUE(suffix.status.is_ok()) << suffix.status.message();
  EXPECT_FLOAT_EQ(suffix.outputs[0].tensor().data<float>()[7], a.data<float>()[7] - c.data<float>()[2]);
}

TEST(MathBinary, IncompatibleShapesNameNodeAndShapes) {
  auto run = run_kernel("Add", 14, {make_tensor<float>({2, 3}), make_tensor<float>({4})});
  ASSERT_FALSE(run.status.is_ok());
  const std::string& m = run.status.message();
  EXPECT_NE(m.find("test node"), std::string::npos) << m;
  EXPECT_NE(m.find("[2,3]"), std::string::npos) << m;
  EXPECT_NE(m.find("[4]"), std::string::npos) << m;
  auto types = run_kernel("Add", 14, {make_tensor<float>({2}), make_tensor<double>({2})});
  EXPECT_FALSE(types.status.is_ok());
  auto missing = run_kernel("Add", 14, {make_tensor<float>({2})});
  EXPECT_FALSE(missing.status.is_ok());
}

// ---------------------------------------------------------------------------
// Variadic

TEST(MathVariadic, MinMaxSumMeanBroadcast) {
  const std::vector<Shape> shapes = {{2, 1, 4}, {3, 1}, {4}};
  std::vector<Value> inputs;
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < shapes.size(); ++i) {
    tensors.push_back(make_tensor<float>(shapes[i], static_cast<int>(i) * 3));
    inputs.emplace_back(tensors.back());
  }
  const Shape out = reference_broadcast_shape(shapes);
  const std::vector<std::pair<std::string, std::function<float(float, float, float)>>> ops = {
      {"Min", [](float a, float b, float c) { return std::min(a, std::min(b, c)); }},
      {"Max", [](float a, float b, float c) { return std::max(a, std::max(b, c)); }},
      {"Sum", [](float a, float b, float c) { return a + b + c; }},
      {"Mean", [](float a, float b, float c) { return (a + b + c) / 3; }},
  };
  for (const auto& [op, ref] : ops) {
    auto run = run_kernel(op, 13, inputs);
    ASSERT_TRUE(run.status.is_ok()) << op << ": " << run.status.message();
    const Tensor& y = run.outputs[0].tensor();
    ASSERT_EQ(y.shape(), out);
    for (int64_t i = 0; i < y.size(); ++i) {
      const float a = tensors[0].data<float>()[broadcast_source(out, shapes[0], i)];
      const float b = tensors[1].data<float>()[broadcast_source(out, shapes[1], i)];
      const float c = tensors[2].data<float>()[broadcast_source(out, shapes[2], i)];
      ASSERT_NEAR(y.data<float>()[i], ref(a, b, c), 1e-5) << op << " at " << i;
    }
  }
  // One input: a copy.
  auto single = run_kernel("Max", 13, {inputs[0]});
  ASSERT_TRUE(single.status.is_ok());
  EXPECT_EQ(single.outputs[0].tensor().data<float>()[3], tensors[0].data<float>()[3]);
  // NaN propagates through Min/Max like numpy.minimum/maximum.
  auto nan = run_kernel("Min", 13, {Tensor::from_vector<float>({NAN, 1.0f}, {2}), Tensor::from_vector<float>({0.0f, NAN}, {2})});
  ASSERT_TRUE(nan.status.is_ok());
  EXPECT_TRUE(std::isnan(nan.outputs[0].tensor().data<float>()[0]));
  EXPECT_TRUE(std::isnan(nan.outputs[0].tensor().data<float>()[1]));
  // Integer Max (opset 12+).
  check_binary<int64_t, int64_t, int64_t>("Max", 13, {3, 4}, {4}, [](int64_t a, int64_t b) { return std::max(a, b); });
  check_binary<uint8_t, uint8_t, uint8_t>("Min", 13, {3, 4}, {3, 1}, [](uint8_t a, uint8_t b) { return std::min(a, b); });
  auto bad = run_kernel("Sum", 13, {make_tensor<float>({2, 3}), make_tensor<float>({3}), make_tensor<float>({2})});
  ASSERT_FALSE(bad.status.is_ok());
  EXPECT_NE(bad.status.message().find("data_2"), std::string::npos) << bad.status.message();
}

// ---------------------------------------------------------------------------
// Comparison and logic

TEST(MathCompare, OrderingsAndEquality) {
  for (const auto& [sa, sb] : broadcast_cases()) {
    check_binary<float, float, bool>("Less", 13, sa, sb, [](float a, float b) { return a < b; });
    check_binary<int32_t, int32_t, bool>("LessOrEqual", 16, sa, sb, [](int32_t a, int32_t b) { return a <= b; });
    check_binary<int64_t, int64_t, bool>("Greater", 13, sa, sb, [](int64_t a, int64_t b) { return a > b; });
    check_binary<double, double, bool>("GreaterOrEqual", 16, sa, sb, [](double a, double b) { return a >= b; });
    check_binary<uint8_t, uint8_t, bool>("Equal", 19, sa, sb, [](uint8_t a, uint8_t b) { return a == b; });
    check_binary<std::string, std::string, bool>("Equal", 19, sa, sb,
                                                 [](const std::string& a, const std::string& b) { return a == b; });
    check_binary<bool, bool, bool>("Equal", 13, sa, sb, [](bool a, bool b) { return a == b; });
  }
  check_binary<Float16, Float16, bool>("Less", 13, {3, 4}, {4},
                                       [](Float16 a, Float16 b) { return float(a) < float(b); });
}

TEST(MathLogic, AndOrXorNotBitwise) {
  for (const auto& [sa, sb] : broadcast_cases()) {
    check_binary<bool, bool, bool>("And", 7, sa, sb, [](bool a, bool b) { return a && b; }, {}, 1, 2);
    check_binary<bool, bool, bool>("Or", 7, sa, sb, [](bool a, bool b) { return a || b; }, {}, 1, 2);
    check_binary<bool, bool, bool>("Xor", 7, sa, sb, [](bool a, bool b) { return a != b; }, {}, 1, 2);
    check_binary<uint8_t, uint8_t, uint8_t>("BitwiseAnd", 18, sa, sb, [](uint8_t a, uint8_t b) { return a & b; });
    check_binary<int32_t, int32_t, int32_t>("BitwiseOr", 18, sa, sb, [](int32_t a, int32_t b) { return a | b; });
    check_binary<uint64_t, uint64_t, uint64_t>("BitwiseXor", 18, sa, sb, [](uint64_t a, uint64_t b) { return a ^ b; });
  }
  Tensor b = make_tensor<bool>({7});
  auto n = run_kernel("Not", 1, {b});
  ASSERT_TRUE(n.status.is_ok());
  for (int i = 0; i < 7; ++i) EXPECT_EQ(n.outputs[0].tensor().data<bool>()[i], !b.data<bool>()[i]);
  Tensor i16 = make_tensor<int16_t>({5});
  auto bn = run_kernel("BitwiseNot", 18, {i16});
  ASSERT_TRUE(bn.status.is_ok());
  for (int i = 0; i < 5; ++i) EXPECT_EQ(bn.outputs[0].tensor().data<int16_t>()[i], static_cast<int16_t>(~i16.data<int16_t>()[i]));
  // Legacy And with broadcast=1, axis=0.
  auto legacy = run_kernel("And", 1, {make_tensor<bool>({3, 4}), make_tensor<bool>({3}, 1)},
                           {attr_int("broadcast", 1), attr_int("axis", 0)});
  ASSERT_TRUE(legacy.status.is_ok()) << legacy.status.message();
  EXPECT_FALSE(run_kernel("And", 7, {make_tensor<float>({2}), make_tensor<float>({2})}).status.is_ok());
}

// ---------------------------------------------------------------------------
// Where

template <typename T>
void check_where(const Shape& sc, const Shape& sx, const Shape& sy, int threads = 1) {
  Tensor c = make_tensor<bool>(sc, 1);
  Tensor x = make_tensor<T>(sx, 2);
  Tensor y = make_tensor<T>(sy, 3);
  auto run = run_kernel("Where", 16, {c, x, y}, {}, 1, "", threads);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  const Shape out = reference_broadcast_shape({sc, sx, sy});
  const Tensor& o = run.outputs[0].tensor();
  ASSERT_EQ(o.shape(), out);
  for (int64_t i = 0; i < o.size(); ++i) {
    const bool cond = c.data<bool>()[broadcast_source(out, sc, i)];
    const T want = cond ? x.data<T>()[broadcast_source(out, sx, i)] : y.data<T>()[broadcast_source(out, sy, i)];
    ASSERT_TRUE(o.data<T>()[i] == want) << "at " << i;
  }
}

TEST(MathWhere, ThreeWayBroadcastAnyType) {
  check_where<float>({2, 3}, {2, 3}, {2, 3});
  check_where<float>({3, 1}, {1, 4}, {});
  check_where<int64_t>({2, 1, 4}, {3, 1}, {4});
  check_where<std::string>({4}, {3, 1}, {3, 4});
  check_where<Float16>({}, {2, 2}, {2});
  check_where<uint8_t>({1, 5}, {4, 1}, {4, 5});
  check_where<float>({256, 1}, {1, 512}, {256, 512}, 4);
  auto bad = run_kernel("Where", 16, {make_tensor<bool>({2}), make_tensor<float>({3}), make_tensor<float>({3})});
  ASSERT_FALSE(bad.status.is_ok());
  EXPECT_NE(bad.status.message().find("condition"), std::string::npos) << bad.status.message();
}

// ---------------------------------------------------------------------------
// Unary math

template <typename T>
void check_unary(const std::string& op, int opset, const std::vector<float>& values, double (*ref)(double),
                 const std::vector<graph::Attribute>& attrs = {}, double rtol = 1e-5) {
  std::vector<T> typed;
  for (float v : values) typed.push_back(static_cast<T>(v));
  Tensor x = Tensor::from_vector<T>(typed, {static_cast<int64_t>(typed.size())});
  auto run = run_kernel(op, opset, {x}, attrs);
  ASSERT_TRUE(run.status.is_ok()) << op << ": " << run.status.message();
  const Tensor& y = run.outputs[0].tensor();
  ASSERT_EQ(y.dtype(), x.dtype());
  for (size_t i = 0; i < typed.size(); ++i) {
    const double want = ref(as_double(typed[i]));
    expect_close(y.data<T>()[i], want, rtol, op + " of " + std::to_string(values[i]));
  }
}

TEST(MathUnary, FloatFunctions) {
  const std::vector<float> any = {-3.5f, -1.25f, -0.5f, 0.0f, 0.3f, 1.0f, 2.5f, 7.0f};
  const std::vector<float> positive = {0.01f, 0.5f, 1.0f, 2.5f, 100.0f};
  const std::vector<float> unit = {-0.99f, -0.5f, 0.0f, 0.25f, 0.9f};
  const std::vector<float> at_least_one = {1.0f, 1.5f, 10.0f};
  struct Case {
    const char* op;
    int opset;
    const std::vector<float>* values;
    double (*ref)(double);
  };
  const std::vector<Case> cases = {
      {"Sqrt", 13, &positive, [](double v) { return std::sqrt(v); }},
      {"Exp", 13, &any, [](double v) { return std::exp(v); }},
      {"Log", 13, &positive, [](double v) { return std::log(v); }},
      {"Reciprocal", 13, &positive, [](double v) { return 1.0 / v; }},
      {"Floor", 13, &any, [](double v) { return std::floor(v); }},
      {"Ceil", 13, &any, [](double v) { return std::ceil(v); }},
      {"Erf", 13, &any, [](double v) { return std::erf(v); }},
      {"Tanh", 13, &any, [](double v) { return std::tanh(v); }},
      {"Sigmoid", 13, &any, [](double v) { return 1.0 / (1.0 + std::exp(-v)); }},
      {"Sin", 7, &any, [](double v) { return std::sin(v); }},
      {"Cos", 7, &any, [](double v) { return std::cos(v); }},
      {"Tan", 7, &unit, [](double v) { return std::tan(v); }},
      {"Asin", 7, &unit, [](double v) { return std::asin(v); }},
      {"Acos", 7, &unit, [](double v) { return std::acos(v); }},
      {"Atan", 7, &any, [](double v) { return std::atan(v); }},
      {"Sinh", 9, &any, [](double v) { return std::sinh(v); }},
      {"Cosh", 9, &any, [](double v) { return std::cosh(v); }},
      {"Asinh", 9, &any, [](double v) { return std::asinh(v); }},
      {"Acosh", 9, &at_least_one, [](double v) { return std::acosh(v); }},
      {"Atanh", 9, &unit, [](double v) { return std::atanh(v); }},
      {"Abs", 13, &any, [](double v) { return std::fabs(v); }},
      {"Neg", 13, &any, [](double v) { return -v; }},
      {"Sign", 13, &any, [](double v) { return double((v > 0) - (v < 0)); }},
  };
  for (const Case& c : cases) {
    check_unary<float>(c.op, c.opset, *c.values, c.ref);
    check_unary<double>(c.op, c.opset, *c.values, c.ref);
    check_unary<Float16>(c.op, c.opset, *c.values, c.ref, {}, 2e-3);
    check_unary<BFloat16>(c.op, c.opset, *c.values, c.ref, {}, 1e-2);
  }
  // Legacy version 1 and 6 kernels exist too.
  check_unary<float>("Sqrt", 1, positive, [](double v) { return std::sqrt(v); });
  check_unary<float>("Exp", 6, any, [](double v) { return std::exp(v); });
}

TEST(MathUnary, RoundHalfToEven) {
  check_unary<float>("Round", 11, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f, 2.6f, -2.6f},
                     [](double v) { return std::nearbyint(v); });
  auto run = run_kernel("Round", 22, {Tensor::from_vector<float>({0.5f, 2.5f, -1.5f}, {3})});
  ASSERT_TRUE(run.status.is_ok());
  EXPECT_EQ(run.outputs[0].tensor().data<float>()[0], 0.0f);
  EXPECT_EQ(run.outputs[0].tensor().data<float>()[1], 2.0f);
  EXPECT_EQ(run.outputs[0].tensor().data<float>()[2], -2.0f);
}

TEST(MathUnary, IntegerAbsNegSign) {
  auto x = Tensor::from_vector<int8_t>({-128, -5, 0, 7, 127}, {5});
  auto abs = run_kernel("Abs", 13, {x});
  ASSERT_TRUE(abs.status.is_ok());
  const int8_t want_abs[] = {-128, 5, 0, 7, 127};  // |-128| wraps like two's complement
  for (int i = 0; i < 5; ++i) EXPECT_EQ(abs.outputs[0].tensor().data<int8_t>()[i], want_abs[i]);
  auto neg = run_kernel("Neg", 13, {x});
  ASSERT_TRUE(neg.status.is_ok());
  EXPECT_EQ(neg.outputs[0].tensor().data<int8_t>()[1], 5);
  auto sign = run_kernel("Sign", 13, {x});
  ASSERT_TRUE(sign.status.is_ok());
  const int8_t want_sign[] = {-1, -1, 0, 1, 1};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(sign.outputs[0].tensor().data<int8_t>()[i], want_sign[i]);
  auto u = run_kernel("Sign", 13, {Tensor::from_vector<uint32_t>({0, 3}, {2})});
  ASSERT_TRUE(u.status.is_ok());
  EXPECT_EQ(u.outputs[0].tensor().data<uint32_t>()[1], 1u);
  // Float-only ops refuse integers with a message naming the node.
  auto bad = run_kernel("Sqrt", 13, {x});
  ASSERT_FALSE(bad.status.is_ok());
  EXPECT_NE(bad.status.message().find("test node"), std::string::npos) << bad.status.message();
}

TEST(MathUnary, IsNaNIsInf) {
  auto x = Tensor::from_vector<float>({1.0f, NAN, INFINITY, -INFINITY, 0.0f}, {5});
  auto nan = run_kernel("IsNaN", 13, {x});
  ASSERT_TRUE(nan.status.is_ok());
  const bool want_nan[] = {false, true, false, false, false};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(nan.outputs[0].tensor().data<bool>()[i], want_nan[i]);
  auto inf = run_kernel("IsInf", 10, {x});
  ASSERT_TRUE(inf.status.is_ok());
  const bool want_inf[] = {false, false, true, true, false};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(inf.outputs[0].tensor().data<bool>()[i], want_inf[i]);
  auto pos = run_kernel("IsInf", 20, {x}, {attr_int("detect_negative", 0)});
  ASSERT_TRUE(pos.status.is_ok());
  EXPECT_TRUE(pos.outputs[0].tensor().data<bool>()[2]);
  EXPECT_FALSE(pos.outputs[0].tensor().data<bool>()[3]);
  auto neg = run_kernel("IsInf", 20, {Tensor::from_vector<double>({INFINITY, -INFINITY}, {2})},
                        {attr_int("detect_positive", 0)});
  ASSERT_TRUE(neg.status.is_ok());
  EXPECT_FALSE(neg.outputs[0].tensor().data<bool>()[0]);
  EXPECT_TRUE(neg.outputs[0].tensor().data<bool>()[1]);
}

// ---------------------------------------------------------------------------
// Activations

TEST(MathActivation, AllWithReferences) {
  const std::vector<float> v = {-4.0f, -1.5f, -0.5f, -0.1f, 0.0f, 0.2f, 0.7f, 1.0f, 2.5f, 6.0f};
  const double alpha = 0.3;
  check_unary<float>("Relu", 14, v, [](double x) { return x < 0 ? 0.0 : x; });
  check_unary<float>("LeakyRelu", 16, v, [](double x) { return x < 0 ? 0.3 * x : x; }, {attr_float("alpha", 0.3f)});
  check_unary<float>("LeakyRelu", 6, v, [](double x) { return x < 0 ? 0.01 * x : x; });
  check_unary<float>("Elu", 6, v, [](double x) { return x < 0 ? 0.3 * (std::exp(x) - 1) : x; }, {attr_float("alpha", 0.3f)});
  check_unary<float>("Selu", 6, v, [](double x) {
    const double a = 1.67326319217681884765625, g = 1.05070102214813232421875;
    return x > 0 ? g * x : g * (a * std::exp(x) - a);
  });
  check_unary<float>("Celu", 12, v, [](double x) { return std::max(0.0, x) + std::min(0.0, 2.0 * (std::exp(x / 2.0) - 1)); },
                     {attr_float("alpha", 2.0f)});
  check_unary<float>("HardSigmoid", 6, v, [](double x) { return std::max(0.0, std::min(1.0, 0.2 * x + 0.5)); });
  check_unary<float>("HardSwish", 14, v, [](double x) { return x * std::max(0.0, std::min(1.0, x / 6 + 0.5)); });
  check_unary<float>("Softplus", 1, v, [](double x) { return std::log(std::exp(x) + 1); });
  check_unary<float>("Softsign", 1, v, [](double x) { return x / (1 + std::fabs(x)); });
  check_unary<float>("ThresholdedRelu", 10, v, [](double x) { return x > 1.0 ? x : 0.0; });
  check_unary<float>("Shrink", 9, v, [](double x) { return x < -0.5 ? x + 0.1 : (x > 0.5 ? x - 0.1 : 0.0); },
                     {attr_float("bias", 0.1f)});
  check_unary<float>("Mish", 18, v, [](double x) { return x * std::tanh(std::log1p(std::exp(x))); });
  check_unary<float>("Gelu", 20, v, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); });
  check_unary<float>("Gelu", 20, v, [](double x) {
    return 0.5 * x * (1 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
  }, {attr_string("approximate", "tanh")});
  check_unary<Float16>("Relu", 14, v, [](double x) { return x < 0 ? 0.0 : x; });
  check_unary<double>("Elu", 22, v, [](double x) { return x < 0 ? std::exp(x) - 1 : x; });
  (void)alpha;
  // Relu on signed integers (opset 14) and Shrink on integers.
  auto relu = run_kernel("Relu", 14, {Tensor::from_vector<int32_t>({-3, 0, 5}, {3})});
  ASSERT_TRUE(relu.status.is_ok());
  EXPECT_EQ(relu.outputs[0].tensor().data<int32_t>()[0], 0);
  EXPECT_EQ(relu.outputs[0].tensor().data<int32_t>()[2], 5);
  auto shrink = run_kernel("Shrink", 9, {Tensor::from_vector<int8_t>({-3, 0, 5}, {3})},
                           {attr_float("lambd", 1.5f), attr_float("bias", 1.5f)});
  ASSERT_TRUE(shrink.status.is_ok());
  EXPECT_EQ(shrink.outputs[0].tensor().data<int8_t>()[0], -1);  // -3 + 1.5 = -1.5 -> truncated
  EXPECT_EQ(shrink.outputs[0].tensor().data<int8_t>()[1], 0);
  EXPECT_EQ(shrink.outputs[0].tensor().data<int8_t>()[2], 3);
  EXPECT_FALSE(run_kernel("Gelu", 20, {Tensor::from_vector<float>({1.0f}, {1})}, {attr_string("approximate", "x")})
                   .status.is_ok());
}

// HardSigmoid and HardSwish run a vector loop on float tensors (16 or 8
// lanes, the rest scalar): every lane position and the tail, with NaN and
// infinities, against the spec's formula in double.
TEST(MathActivation, HardSigmoidAndHardSwishVectorLoopsKeepNaNAndInfinities) {
  std::vector<float> v;
  for (int i = 0; i < 37; ++i) v.push_back(0.37f * static_cast<float>(i) - 6.5f);
  v[3] = NAN;
  v[17] = INFINITY;
  v[20] = -INFINITY;
  v[35] = NAN;
  const int64_t n = static_cast<int64_t>(v.size());
  struct Case {
    const char* op;
    int opset;
    double alpha, beta;
    bool times_x;
  };
  for (const Case& c : {Case{"HardSigmoid", 6, 0.3, 0.4, false}, Case{"HardSwish", 14, 1.0 / 6.0, 0.5, true}}) {
    std::vector<graph::Attribute> attrs;
    if (!c.times_x) attrs = {attr_float("alpha", 0.3f), attr_float("beta", 0.4f)};
    auto r = run_kernel(c.op, c.opset, {Tensor::from_vector<float>(v, {n})}, attrs);
    ASSERT_TRUE(r.status.is_ok()) << r.status.message();
    const float* y = r.outputs[0].tensor().data<float>();
    for (int64_t i = 0; i < n; ++i) {
      const double x = v[static_cast<size_t>(i)];
      const double t = std::isnan(x) ? x : std::max(0.0, std::min(1.0, c.alpha * x + c.beta));
      const double want = c.times_x ? x * t : t;
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(y[i])) << c.op << " at " << i << " of " << x;
      } else if (std::isinf(want)) {
        EXPECT_EQ(y[i], want) << c.op << " at " << i << " of " << x;
      } else {
        EXPECT_NEAR(y[i], want, 1e-6 * std::max(1.0, std::fabs(want))) << c.op << " at " << i << " of " << x;
      }
    }
  }
}

TEST(MathActivation, PReluBroadcastsSlope) {
  check_binary<float, float, float>("PRelu", 16, {2, 3, 4, 5}, {3, 1, 1},
                                    [](float x, float s) { return x < 0 ? x * s : x; });
  check_binary<float, float, float>("PRelu", 9, {2, 3, 4}, {4}, [](float x, float s) { return x < 0 ? x * s : x; });
  check_binary<int32_t, int32_t, int32_t>("PRelu", 16, {3, 4}, {1},
                                          [](int32_t x, int32_t s) { return x < 0 ? x * s : x; });
  // Legacy per-channel 1-D slope.
  Tensor x = make_tensor<float>({2, 3, 2, 2}, 1);
  Tensor s = Tensor::from_vector<float>({0.1f, 0.2f, 0.3f}, {3});
  auto run = run_kernel("PRelu", 6, {x, s});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  for (int64_t i = 0; i < x.size(); ++i) {
    const float v = x.data<float>()[i];
    const float slope = s.data<float>()[(i / 4) % 3];
    ASSERT_FLOAT_EQ(run.outputs[0].tensor().data<float>()[i], v < 0 ? v * slope : v);
  }
  // The slope may not grow X.
  EXPECT_FALSE(run_kernel("PRelu", 16, {make_tensor<float>({3}), make_tensor<float>({2, 3})}).status.is_ok());
}

TEST(MathActivation, ClipVersions) {
  const std::vector<float> v = {-5.0f, -1.0f, 0.0f, 0.5f, 3.0f, NAN};
  check_unary<float>("Clip", 6, v, [](double x) { return std::isnan(x) ? x : std::min(1.0, std::max(-1.0, x)); },
                     {attr_float("min", -1.0f), attr_float("max", 1.0f)});
  check_unary<float>("Clip", 6, v, [](double x) { return std::isnan(x) ? x : std::max(0.0, x); }, {attr_float("min", 0.0f)});
  Tensor x = Tensor::from_vector<float>(v, {6});
  auto both = run_kernel("Clip", 11, {x, Tensor::scalar<float>(-2.0f), Tensor::scalar<float>(2.0f)});
  ASSERT_TRUE(both.status.is_ok()) << both.status.message();
  EXPECT_EQ(both.outputs[0].tensor().data<float>()[0], -2.0f);
  EXPECT_EQ(both.outputs[0].tensor().data<float>()[4], 2.0f);
  auto only_max = run_kernel("Clip", 13, {x, Value(), Tensor::scalar<float>(0.25f)});
  ASSERT_TRUE(only_max.status.is_ok()) << only_max.status.message();
  EXPECT_EQ(only_max.outputs[0].tensor().data<float>()[0], -5.0f);
  EXPECT_EQ(only_max.outputs[0].tensor().data<float>()[3], 0.25f);
  auto ints = run_kernel("Clip", 13, {Tensor::from_vector<int64_t>({-9, 4, 100}, {3}), Tensor::scalar<int64_t>(0)});
  ASSERT_TRUE(ints.status.is_ok()) << ints.status.message();
  EXPECT_EQ(ints.outputs[0].tensor().data<int64_t>()[0], 0);
  EXPECT_EQ(ints.outputs[0].tensor().data<int64_t>()[2], 100);
  auto bad = run_kernel("Clip", 13, {x, Tensor::from_vector<float>({0, 1}, {2})});
  EXPECT_FALSE(bad.status.is_ok());
}

// ---------------------------------------------------------------------------
// Cast

template <typename From, typename To>
void check_cast_numbers() {
  std::vector<From> values;
  for (int v : {-3, -1, 0, 1, 2, 5, 100}) {
    if constexpr (std::is_unsigned_v<From> || std::is_same_v<From, bool>) {
      if (v < 0) continue;
    }
    if constexpr (std::is_same_v<From, bool>) {
      values.push_back(v != 0);
    } else {
      values.push_back(static_cast<From>(static_cast<cpu::compute_t<From>>(v)));
    }
  }
  Tensor x = Tensor::from_vector<From>(values, {static_cast<int64_t>(values.size())});
  auto run = run_kernel("Cast", 13, {x}, {attr_int("to", static_cast<int64_t>(DataTypeOf<To>::value))});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  const Tensor& y = run.outputs[0].tensor();
  ASSERT_EQ(y.dtype(), DataTypeOf<To>::value);
  for (size_t i = 0; i < values.size(); ++i) {
    const double v = std::is_same_v<From, bool> ? (values[i] ? 1.0 : 0.0) : as_double(values[i]);
    double want = v;
    if constexpr (std::is_same_v<To, bool>) {
      want = v != 0 ? 1.0 : 0.0;
    } else if constexpr (std::is_integral_v<To>) {
      want = static_cast<double>(static_cast<To>(static_cast<int64_t>(v)));  // wraps when narrower
    }
    const To got = y.data<To>()[i];
    const double g = std::is_same_v<To, bool> ? (got ? 1.0 : 0.0) : as_double(got);
    ASSERT_EQ(g, want) << dtype_name(DataTypeOf<From>::value) << " -> " << dtype_name(DataTypeOf<To>::value)
                       << " of " << v;
  }
}

template <typename From>
void check_cast_from() {
  check_cast_numbers<From, float>();
  check_cast_numbers<From, double>();
  check_cast_numbers<From, Float16>();
  check_cast_numbers<From, BFloat16>();
  check_cast_numbers<From, int8_t>();
  check_cast_numbers<From, int16_t>();
  check_cast_numbers<From, int32_t>();
  check_cast_numbers<From, int64_t>();
  check_cast_numbers<From, uint8_t>();
  check_cast_numbers<From, uint16_t>();
  check_cast_numbers<From, uint32_t>();
  check_cast_numbers<From, uint64_t>();
  check_cast_numbers<From, bool>();
}

TEST(MathCast, EveryNumberPair) {
  check_cast_from<float>();
  check_cast_from<double>();
  check_cast_from<Float16>();
  check_cast_from<BFloat16>();
  check_cast_from<int8_t>();
  check_cast_from<int16_t>();
  check_cast_from<int32_t>();
  check_cast_from<int64_t>();
  check_cast_from<uint8_t>();
  check_cast_from<uint16_t>();
  check_cast_from<uint32_t>();
  check_cast_from<uint64_t>();
  check_cast_from<bool>();
}

TEST(MathCast, SpecRules) {
  // 200 (int16) -> -56 (int8): high bits discarded.
  auto narrow = run_kernel("Cast", 13, {Tensor::from_vector<int16_t>({200}, {1})}, {attr_int("to", 3)});
  ASSERT_TRUE(narrow.status.is_ok());
  EXPECT_EQ(narrow.outputs[0].tensor().data<int8_t>()[0], -56);
  // Float truncates toward zero; -0.0 and NaN to bool.
  auto trunc = run_kernel("Cast", 13, {Tensor::from_vector<float>({2.7f, -2.7f}, {2})}, {attr_int("to", 7)});
  ASSERT_TRUE(trunc.status.is_ok());
  EXPECT_EQ(trunc.outputs[0].tensor().data<int64_t>()[0], 2);
  EXPECT_EQ(trunc.outputs[0].tensor().data<int64_t>()[1], -2);
  auto to_bool = run_kernel("Cast", 13, {Tensor::from_vector<float>({-0.0f, NAN, 0.1f}, {3})}, {attr_int("to", 9)});
  ASSERT_TRUE(to_bool.status.is_ok());
  EXPECT_FALSE(to_bool.outputs[0].tensor().data<bool>()[0]);
  EXPECT_TRUE(to_bool.outputs[0].tensor().data<bool>()[1]);
  EXPECT_TRUE(to_bool.outputs[0].tensor().data<bool>()[2]);
  // Out-of-range float to int never traps.
  auto oor = run_kernel("Cast", 13, {Tensor::from_vector<float>({1e30f, NAN, -1e30f}, {3})}, {attr_int("to", 6)});
  EXPECT_TRUE(oor.status.is_ok());
  // Same type: the output shares the input's buffer.
  Tensor same = make_tensor<float>({4});
  auto alias = run_kernel("Cast", 19, {same}, {attr_int("to", 1)});
  ASSERT_TRUE(alias.status.is_ok());
  EXPECT_TRUE(alias.outputs[0].tensor().shares_buffer_with(same));
  // Version 1 names the type as a string.
  auto v1 = run_kernel("Cast", 1, {Tensor::from_vector<int32_t>({3}, {1})}, {attr_string("to", "FLOAT")});
  ASSERT_TRUE(v1.status.is_ok()) << v1.status.message();
  EXPECT_EQ(v1.outputs[0].tensor().data<float>()[0], 3.0f);
  // Unsupported target types are reported, not crashed on.
  EXPECT_FALSE(run_kernel("Cast", 19, {same}, {attr_int("to", 14)}).status.is_ok());  // complex64
  EXPECT_FALSE(run_kernel("Cast", 19, {same}, {attr_int("to", 999)}).status.is_ok());
}

TEST(MathCast, Strings) {
  auto from = run_kernel(
      "Cast", 13,
      {Tensor::from_vector<std::string>({"3.14", "1e-3", "1E8", "INF", "-inf", "+INF", "NaN", " 7 "}, {8})},
      {attr_int("to", 1)});
  ASSERT_TRUE(from.status.is_ok()) << from.status.message();
  const float* f = from.outputs[0].tensor().data<float>();
  EXPECT_FLOAT_EQ(f[0], 3.14f);
  EXPECT_FLOAT_EQ(f[1], 1e-3f);
  EXPECT_FLOAT_EQ(f[2], 1e8f);
  EXPECT_TRUE(std::isinf(f[3]) && f[3] > 0);
  EXPECT_TRUE(std::isinf(f[4]) && f[4] < 0);
  EXPECT_TRUE(std::isinf(f[5]) && f[5] > 0);
  EXPECT_TRUE(std::isnan(f[6]));
  EXPECT_FLOAT_EQ(f[7], 7.0f);

  auto ints = run_kernel("Cast", 13, {Tensor::from_vector<std::string>({"9223372036854775807", "-12", "100.5"}, {3})},
                         {attr_int("to", 7)});
  ASSERT_TRUE(ints.status.is_ok()) << ints.status.message();
  EXPECT_EQ(ints.outputs[0].tensor().data<int64_t>()[0], std::numeric_limits<int64_t>::max());
  EXPECT_EQ(ints.outputs[0].tensor().data<int64_t>()[1], -12);
  EXPECT_EQ(ints.outputs[0].tensor().data<int64_t>()[2], 100);

  auto bad = run_kernel("Cast", 13, {Tensor::from_vector<std::string>({"1", "Hello"}, {2})}, {attr_int("to", 1)});
  ASSERT_FALSE(bad.status.is_ok());
  EXPECT_NE(bad.status.message().find("Hello"), std::string::npos) << bad.status.message();

  auto to_string = run_kernel("Cast", 13, {Tensor::from_vector<float>({0.1f, 100.0f, 1e-5f, -2.5f, NAN, INFINITY, 3.14159f, 1e20f}, {8})},
                              {attr_int("to", 8)});
  ASSERT_TRUE(to_string.status.is_ok()) << to_string.status.message();
  const std::string* s = to_string.outputs[0].tensor().data<std::string>();
  EXPECT_EQ(s[0], "0.1");
  EXPECT_EQ(s[1], "100.0");
  EXPECT_EQ(s[2], "1e-05");
  EXPECT_EQ(s[3], "-2.5");
  EXPECT_EQ(s[4], "nan");
  EXPECT_EQ(s[5], "inf");
  EXPECT_EQ(s[6], "3.14159");
  EXPECT_EQ(s[7], "1e+20");
  // Every float survives a round trip through its string.
  Tensor values = make_tensor<float>({23});
  auto text = run_kernel("Cast", 13, {values}, {attr_int("to", 8)});
  ASSERT_TRUE(text.status.is_ok());
  auto back = run_kernel("Cast", 13, {text.outputs[0]}, {attr_int("to", 1)});
  ASSERT_TRUE(back.status.is_ok());
  for (int64_t i = 0; i < 23; ++i) EXPECT_EQ(back.outputs[0].tensor().data<float>()[i], values.data<float>()[i]);

  auto int_text = run_kernel("Cast", 13, {Tensor::from_vector<int64_t>({-42, 7}, {2})}, {attr_int("to", 8)});
  ASSERT_TRUE(int_text.status.is_ok());
  EXPECT_EQ(int_text.outputs[0].tensor().data<std::string>()[0], "-42");
}

// A tensor of one of the one-byte-per-element small types, from its codes.
Tensor small_tensor(DataType dtype, const std::vector<uint8_t>& codes) {
  Tensor t(dtype, {static_cast<int64_t>(codes.size())});
  for (size_t i = 0; i < codes.size(); ++i) t.data<uint8_t>()[i] = codes[i];
  return t;
}

std::vector<float> cast_small_to_float(DataType dtype, const std::vector<uint8_t>& codes) {
  auto run = run_kernel("Cast", 25, {small_tensor(dtype, codes)}, {attr_int("to", 1)});
  EXPECT_TRUE(run.status.is_ok()) << run.status.message();
  if (!run.status.is_ok()) return {};
  const float* p = run.outputs[0].tensor().data<float>();
  return std::vector<float>(p, p + codes.size());
}

std::vector<uint8_t> cast_float_to_small(DataType dtype, const std::vector<float>& values,
                                         const std::vector<graph::Attribute>& extra = {}) {
  std::vector<graph::Attribute> attrs = extra;
  attrs.push_back(attr_int("to", static_cast<int64_t>(dtype)));
  auto run = run_kernel("Cast", 25, {Tensor::from_vector<float>(values, {static_cast<int64_t>(values.size())})}, attrs);
  EXPECT_TRUE(run.status.is_ok()) << run.status.message();
  if (!run.status.is_ok()) return {};
  const uint8_t* p = run.outputs[0].tensor().data<uint8_t>();
  return std::vector<uint8_t>(p, p + values.size());
}

TEST(MathCast, Float8RoundTripsEveryCode) {
  for (DataType dtype : {DataType::kFloat8E4M3FN, DataType::kFloat8E4M3FNUZ, DataType::kFloat8E5M2,
                         DataType::kFloat8E5M2FNUZ}) {
    std::vector<uint8_t> codes;
    for (int c = 0; c < 256; ++c) codes.push_back(static_cast<uint8_t>(c));
    const std::vector<float> values = cast_small_to_float(dtype, codes);
    ASSERT_EQ(values.size(), codes.size());
    const std::vector<uint8_t> back = cast_float_to_small(dtype, values, {attr_int("saturate", 0)});
    ASSERT_EQ(back.size(), codes.size());
    for (int c = 0; c < 256; ++c) {
      if (std::isnan(values[static_cast<size_t>(c)])) continue;
      EXPECT_EQ(back[static_cast<size_t>(c)], c) << dtype_name(dtype) << " value " << values[static_cast<size_t>(c)];
    }
  }
  // Known codes from the spec's tables: the largest finite value, saturation and NaN.
  EXPECT_EQ(cast_small_to_float(DataType::kFloat8E4M3FN, {0x7E})[0], 448.0f);
  EXPECT_EQ(cast_small_to_float(DataType::kFloat8E4M3FNUZ, {0x7F})[0], 240.0f);
  EXPECT_EQ(cast_small_to_float(DataType::kFloat8E5M2, {0x7B})[0], 57344.0f);
  EXPECT_TRUE(std::isinf(cast_small_to_float(DataType::kFloat8E5M2, {0x7C})[0]));
  EXPECT_TRUE(std::isnan(cast_small_to_float(DataType::kFloat8E5M2FNUZ, {0x80})[0]));
  EXPECT_EQ(cast_float_to_small(DataType::kFloat8E4M3FN, {1e6f, -INFINITY, NAN}), (std::vector<uint8_t>{0x7E, 0xFE, 0x7F}));
  EXPECT_EQ(cast_float_to_small(DataType::kFloat8E4M3FN, {1e6f}, {attr_int("saturate", 0)})[0], 0x7F);
  EXPECT_EQ(cast_float_to_small(DataType::kFloat8E5M2, {INFINITY}, {attr_int("saturate", 0)})[0], 0x7C);
  EXPECT_EQ(cast_float_to_small(DataType::kFloat8E4M3FNUZ, {-1e-7f})[0], 0x00);  // no negative zero
  // Round half to even: 0.46875 and 0.5 are neighbours in E4M3; the midpoint goes to the even code.
  EXPECT_EQ(cast_float_to_small(DataType::kFloat8E4M3FN, {0.484375f})[0], 0x30);
}

TEST(MathCast, Float4E8M0AndSmallIntegers) {
  // float4e2m1 holds 0, 0.5, 1, 1.5, 2, 3, 4, 6 and saturates.
  EXPECT_EQ(cast_float_to_small(DataType::kFloat4E2M1, {0.48f, 0.25f, 1.05f, -3.5f, -8.0f, 9.0f, -0.0f}),
            (std::vector<uint8_t>{0x1, 0x0, 0x2, 0xE, 0xF, 0x7, 0x8}));
  EXPECT_EQ(cast_small_to_float(DataType::kFloat4E2M1, {0x3, 0x7, 0xD}), (std::vector<float>{1.5f, 6.0f, -3.0f}));
  // float8e8m0: powers of two, rounded up by default.
  EXPECT_EQ(cast_float_to_small(DataType::kFloat8E8M0, {0.124f, 0.25f, 1.1f, 8.0f}),
            (std::vector<uint8_t>{124, 125, 128, 130}));
  EXPECT_EQ(cast_float_to_small(DataType::kFloat8E8M0, {1.1f}, {attr_string("round_mode", "down")})[0], 127);
  EXPECT_EQ(cast_small_to_float(DataType::kFloat8E8M0, {127, 130})[0], 1.0f);
  // 4- and 2-bit integers wrap like any narrowing integer cast.
  EXPECT_EQ(cast_float_to_small(DataType::kInt4, {-9.0f, 7.0f, 8.0f}), (std::vector<uint8_t>{7, 7, 0xF8}));
  EXPECT_EQ(cast_float_to_small(DataType::kUInt4, {-1.0f, 15.0f, 16.0f}), (std::vector<uint8_t>{15, 15, 0}));
  EXPECT_EQ(cast_float_to_small(DataType::kInt2, {-3.0f, 2.0f}), (std::vector<uint8_t>{1, 0xFE}));
  auto widen = run_kernel("Cast", 25, {small_tensor(DataType::kInt4, {0xF8, 0x07})}, {attr_int("to", 3)});
  ASSERT_TRUE(widen.status.is_ok()) << widen.status.message();
  EXPECT_EQ(widen.outputs[0].tensor().data<int8_t>()[0], -8);
  EXPECT_EQ(widen.outputs[0].tensor().data<int8_t>()[1], 7);
  EXPECT_FALSE(run_kernel("Cast", 25, {make_tensor<float>({2})}, {attr_int("to", 1), attr_string("round_mode", "x")})
                   .status.is_ok());
}

TEST(MathCast, CastLike) {
  auto run = run_kernel("CastLike", 15, {Tensor::from_vector<double>({1.5, -2.0}, {2}), Tensor::scalar<Float16>(Float16(0.0f))});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  const Tensor& y = run.outputs[0].tensor();
  ASSERT_EQ(y.dtype(), DataType::kFloat16);
  EXPECT_EQ(static_cast<float>(y.data<Float16>()[0]), 1.5f);
  EXPECT_EQ(static_cast<float>(y.data<Float16>()[1]), -2.0f);
}

}  // namespace
}  // namespace onyx
