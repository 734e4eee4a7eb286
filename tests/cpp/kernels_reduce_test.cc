// Unit tests for the reduce family, ArgMax/ArgMin, TopK, CumSum, Einsum and
// Det, each against a plain reference loop written here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"

namespace onyx::testing {
namespace {

std::vector<float> random_floats(size_t n, unsigned seed, float lo = -2.0f, float hi = 2.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + idx[d];
  return flat;
}

// Reference: groups input elements by their output position, then applies fn.
std::vector<double> reference_reduce(const std::vector<float>& x, const Shape& shape, const std::vector<int64_t>& axes,
                                     const std::function<double(const std::vector<double>&)>& fn, Shape* out_shape) {
  std::vector<bool> red(shape.size(), axes.empty());
  for (int64_t a : axes) red[static_cast<size_t>(a < 0 ? a + static_cast<int64_t>(shape.size()) : a)] = true;
  Shape keep;
  for (size_t d = 0; d < shape.size(); ++d) keep.push_back(red[d] ? 1 : shape[d]);
  *out_shape = keep;
  std::vector<std::vector<double>> groups(static_cast<size_t>(shape_size(keep)));
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
    auto idx = unravel(i, shape);
    for (size_t d = 0; d < shape.size(); ++d) if (red[d]) idx[d] = 0;
    groups[static_cast<size_t>(ravel(idx, keep))].push_back(x[static_cast<size_t>(i)]);
  }
  std::vector<double> out;
  for (auto& g : groups) out.push_back(fn(g));
  return out;
}

struct ReduceCase {
  const char* op;
  std::function<double(const std::vector<double>&)> fn;
};

std::vector<ReduceCase> reduce_cases() {
  auto sum = [](const std::vector<double>& g) { double s = 0; for (double v : g) s += v; return s; };
  return {
      {"ReduceSum", sum},
      {"ReduceMean", [=](const std::vector<double>& g) { return sum(g) / static_cast<double>(g.size()); }},
      {"ReduceMax", [](const std::vector<double>& g) { return *std::max_element(g.begin(), g.end()); }},
      {"ReduceMin", [](const std::vector<double>& g) { return *std::min_element(g.begin(), g.end()); }},
      {"ReduceProd", [](const std::vector<double>& g) { double p = 1; for (double v : g) p *= v; return p; }},
      {"ReduceL1", [](const std::vector<double>& g) { double s = 0; for (double v : g) s += std::fabs(v); return s; }},
      {"ReduceL2", [](const std::vector<double>& g) { double s = 0; for (double v : g) s += v * v; return std::sqrt(s); }},
      {"ReduceLogSum", [](const std::vector<double>& g) { double s = 0; for (double v : g) s += std::fabs(v); return std::log(s); }},
      {"ReduceLogSumExp", [](const std::vector<double>& g) { double s = 0; for (double v : g) s += std::exp(v); return std::log(s); }},
      {"ReduceSumSquare", [](const std::vector<double>& g) { double s = 0; for (double v : g) s += v * v; return s; }},
  };
}

TEST(ReduceKernels, AllOpsAllAxisSetsBothConventions) {
  const Shape shape{2, 3, 4, 5};
  const std::vector<std::vector<int64_t>> axis_sets{{}, {0}, {1}, {3}, {-1}, {0, 2}, {1, 3}, {1, 2}, {0, 1, 2, 3}};
  for (const auto& c : reduce_cases()) {
    std::vector<float> x = random_floats(static_cast<size_t>(shape_size(shape)), 7);
    // LogSum needs positive inputs.
    if (std::string(c.op) == "ReduceLogSum") for (auto& v : x) v = std::fabs(v) + 0.1f;
    for (const auto& axes : axis_sets) {
      for (int keepdims : {0, 1}) {
        Shape ref_shape;
        auto ref = reference_reduce(x, shape, axes, c.fn, &ref_shape);
        for (int opset : {11, 18}) {
          std::vector<Value> inputs{Tensor::from_vector(x, shape)};
          std::vector<graph::Attribute> attrs{attr_int("keepdims", keepdims)};
          const bool input_axes = opset >= 18;
          if (input_axes) {
            if (!axes.empty()) inputs.push_back(Tensor::from_vector(axes, {static_cast<int64_t>(axes.size())}));
          } else if (!axes.empty()) {
            attrs.push_back(attr_ints("axes", axes));
          }
          auto run = run_kernel(c.op, opset, inputs, attrs);
          ASSERT_TRUE(run.status.is_ok()) << c.op << ": " << run.status.message();
          const Tensor& y = run.outputs[0].tensor();
          Shape expect_shape;
          for (size_t d = 0; d < shape.size(); ++d) {
            if (ref_shape[d] == 1 && (axes.empty() || std::count(axes.begin(), axes.end(), d) ||
                                      std::count(axes.begin(), axes.end(), static_cast<int64_t>(d) - 4))) {
              if (keepdims) expect_shape.push_back(1);
            } else {
              expect_shape.push_back(shape[d]);
            }
          }
          ASSERT_EQ(y.shape(), expect_shape) << c.op;
          for (size_t i = 0; i < ref.size(); ++i) {
            EXPECT_NEAR(y.data<float>()[i], ref[i], 1e-4 * (1 + std::fabs(ref[i]))) << c.op << " at " << i;
          }
        }
      }
    }
  }
}

// Runs of 16 or more contiguous floats take the vector loops: every length
// from 16 to 41 (whole vectors, tails of each size), against the reference.
TEST(ReduceKernels, LongContiguousRunsMatchReference) {
  for (const auto& c : reduce_cases()) {
    for (int64_t len = 16; len <= 41; ++len) {
      const Shape shape{3, len};
      std::vector<float> x = random_floats(static_cast<size_t>(shape_size(shape)), static_cast<unsigned>(len));
      if (std::string(c.op) == "ReduceLogSum") for (auto& v : x) v = std::fabs(v) + 0.1f;
      Shape ref_shape;
      const auto ref = reference_reduce(x, shape, {1}, c.fn, &ref_shape);
      auto run = run_kernel(c.op, 18, {Tensor::from_vector(x, shape), Tensor::from_vector<int64_t>({1}, {1})},
                            {attr_int("keepdims", 0)});
      ASSERT_TRUE(run.status.is_ok()) << c.op << ": " << run.status.message();
      for (size_t i = 0; i < ref.size(); ++i) {
        EXPECT_NEAR(run.outputs[0].tensor().data<float>()[i], ref[i], 1e-5 * (1 + std::fabs(ref[i])))
            << c.op << " length " << len << " row " << i;
      }
    }
  }
}

// ReduceMax / ReduceMin give NaN for a NaN anywhere in the run, in the
// first vector, a later one or the scalar tail, and keep infinities.
TEST(ReduceKernels, LongRunsPropagateNaNAndKeepInfinities) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const int64_t len = 37;  // four vectors of 8, then a tail of 5
  for (const char* op : {"ReduceMax", "ReduceMin"}) {
    for (int64_t at : {int64_t{0}, int64_t{5}, int64_t{8}, int64_t{19}, int64_t{31}, int64_t{32}, int64_t{36}}) {
      std::vector<float> x = random_floats(static_cast<size_t>(len), 3);
      x[static_cast<size_t>(at)] = nan;
      auto run = run_kernel(op, 18, {Tensor::from_vector(x, {1, len}), Tensor::from_vector<int64_t>({1}, {1})},
                            {attr_int("keepdims", 0)});
      ASSERT_TRUE(run.status.is_ok()) << run.status.message();
      EXPECT_TRUE(std::isnan(run.outputs[0].tensor().data<float>()[0])) << op << " NaN at " << at;
    }
    std::vector<float> x = random_floats(static_cast<size_t>(len), 4);
    x[20] = inf;
    x[33] = -inf;
    auto run = run_kernel(op, 18, {Tensor::from_vector(x, {1, len}), Tensor::from_vector<int64_t>({1}, {1})},
                          {attr_int("keepdims", 0)});
    ASSERT_TRUE(run.status.is_ok()) << run.status.message();
    EXPECT_EQ(run.outputs[0].tensor().data<float>()[0], std::string(op) == "ReduceMax" ? inf : -inf) << op;
  }
}

TEST(ReduceKernels, EmptySetAndNoop) {
  // A reduced dim of size 0: sum 0, prod 1, max -inf, min +inf, logsum -inf.
  Tensor x(DataType::kFloat, {2, 0, 3});
  struct Expect { const char* op; float value; };
  const float inf = std::numeric_limits<float>::infinity();
  for (auto e : {Expect{"ReduceSum", 0.f}, Expect{"ReduceProd", 1.f}, Expect{"ReduceMax", -inf},
                 Expect{"ReduceMin", inf}, Expect{"ReduceLogSum", -inf}, Expect{"ReduceLogSumExp", -inf},
                 Expect{"ReduceL1", 0.f}, Expect{"ReduceL2", 0.f}, Expect{"ReduceSumSquare", 0.f}}) {
    auto run = run_kernel(e.op, 18, {x, Tensor::from_vector<int64_t>({1}, {1})}, {attr_int("keepdims", 1)});
    ASSERT_TRUE(run.status.is_ok()) << e.op << run.status.message();
    const Tensor& y = run.outputs[0].tensor();
    ASSERT_EQ(y.shape(), (Shape{2, 1, 3}));
    for (int64_t i = 0; i < y.size(); ++i) EXPECT_EQ(y.data<float>()[i], e.value) << e.op;
  }
  // noop_with_empty_axes returns the input unchanged.
  auto data = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  auto run = run_kernel("ReduceSum", 13, {data}, {attr_int("noop_with_empty_axes", 1)});
  ASSERT_TRUE(run.status.is_ok());
  EXPECT_EQ(run.outputs[0].tensor().shape(), (Shape{2, 2}));
  EXPECT_EQ(run.outputs[0].tensor().data<float>()[3], 4.f);
}

TEST(ReduceKernels, IntegerBoolAndHalfTypes) {
  auto xi = Tensor::from_vector<int32_t>({1, -2, 3, 4, 5, -6}, {2, 3});
  auto run = run_kernel("ReduceSum", 13, {xi, Tensor::from_vector<int64_t>({1}, {1})}, {attr_int("keepdims", 0)});
  ASSERT_TRUE(run.status.is_ok());
  EXPECT_EQ(run.outputs[0].tensor().data<int32_t>()[0], 2);
  EXPECT_EQ(run.outputs[0].tensor().data<int32_t>()[1], 3);
  auto xb = Tensor::from_vector<bool>({false, true, false, false}, {2, 2});
  run = run_kernel("ReduceMax", 20, {xb, Tensor::from_vector<int64_t>({1}, {1})}, {attr_int("keepdims", 0)});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  EXPECT_TRUE(run.outputs[0].tensor().data<bool>()[0]);
  EXPECT_FALSE(run.outputs[0].tensor().data<bool>()[1]);
  std::vector<Float16> h;
  for (float v : {0.5f, 1.5f, 2.0f, 4.0f}) h.push_back(Float16(v));
  run = run_kernel("ReduceMean", 11, {Tensor::from_vector(h, {4})}, {attr_int("keepdims", 0)});
  ASSERT_TRUE(run.status.is_ok());
  EXPECT_EQ(static_cast<float>(run.outputs[0].tensor().data<Float16>()[0]), 2.0f);
}

TEST(ReduceKernels, BadAxisNamesTheNode) {
  auto x = Tensor::from_vector<float>({1, 2}, {2});
  auto run = run_kernel("ReduceSum", 13, {x, Tensor::from_vector<int64_t>({3}, {1})});
  ASSERT_FALSE(run.status.is_ok());
  EXPECT_NE(run.status.message().find("test node"), std::string::npos);
  EXPECT_NE(run.status.message().find("out of range"), std::string::npos);
}

TEST(ArgKernels, MaxMinFirstAndLast) {
  auto x = Tensor::from_vector<float>({1, 3, 3, 0, 2, 2, 0, 5}, {2, 4});
  auto run = run_kernel("ArgMax", 13, {x}, {attr_int("axis", 1), attr_int("keepdims", 0)});
  ASSERT_TRUE(run.status.is_ok());
  EXPECT_EQ(run.outputs[0].tensor().shape(), (Shape{2}));
  EXPECT_EQ(run.outputs[0].tensor().data<int64_t>()[0], 1);
  EXPECT_EQ(run.outputs[0].tensor().data<int64_t>()[1], 3);
  run = run_kernel("ArgMax", 13, {x}, {attr_int("axis", -1), attr_int("select_last_index", 1)});
  ASSERT_TRUE(run.status.is_ok());
  EXPECT_EQ(run.outputs[0].tensor().shape(), (Shape{2, 1}));
  EXPECT_EQ(run.outputs[0].tensor().data<int64_t>()[0], 2);
  run = run_kernel("ArgMin", 13, {x}, {attr_int("axis", 0)});
  ASSERT_TRUE(run.status.is_ok());
  const std::vector<int64_t> expect{0, 1, 1, 0};
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(run.outputs[0].tensor().data<int64_t>()[i], expect[i]);
  run = run_kernel("ArgMin", 13, {x}, {attr_int("axis", 2)});
  EXPECT_FALSE(run.status.is_ok());
}

TEST(TopKKernel, MatchesStableSortReference) {
  const Shape shape{3, 7, 2};
  std::vector<float> x = random_floats(42, 3);
  x[2] = x[4];  // a tie in the first column
  for (int largest : {0, 1}) {
    for (int64_t k : {0, 1, 4, 7}) {
      auto run = run_kernel("TopK", 11, {Tensor::from_vector(x, shape), Tensor::from_vector<int64_t>({k}, {1})},
                            {attr_int("axis", 1), attr_int("largest", largest)}, 2);
      ASSERT_TRUE(run.status.is_ok()) << run.status.message();
      const Tensor& v = run.outputs[0].tensor();
      const Tensor& ix = run.outputs[1].tensor();
      ASSERT_EQ(v.shape(), (Shape{3, k, 2}));
      for (int64_t i = 0; i < 3; ++i) {
        for (int64_t j = 0; j < 2; ++j) {
          std::vector<int64_t> order(7);
          for (int64_t a = 0; a < 7; ++a) order[static_cast<size_t>(a)] = a;
          std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
            const float va = x[static_cast<size_t>(i * 14 + a * 2 + j)], vb = x[static_cast<size_t>(i * 14 + b * 2 + j)];
            return largest ? va > vb : va < vb;
          });
          for (int64_t a = 0; a < k; ++a) {
            EXPECT_EQ(ix.data<int64_t>()[i * k * 2 + a * 2 + j], order[static_cast<size_t>(a)]);
            EXPECT_EQ(v.data<float>()[i * k * 2 + a * 2 + j], x[static_cast<size_t>(i * 14 + order[static_cast<size_t>(a)] * 2 + j)]);
          }
        }
      }
    }
  }
  auto run = run_kernel("TopK", 1, {Tensor::from_vector(x, shape)}, {attr_int("k", 2), attr_int("axis", 1)}, 2);
  ASSERT_TRUE(run.status.is_ok());
  EXPECT_EQ(run.outputs[0].tensor().shape(), (Shape{3, 2, 2}));
  run = run_kernel("TopK", 11, {Tensor::from_vector(x, shape), Tensor::from_vector<int64_t>({8}, {1})},
                   {attr_int("axis", 1)}, 2);
  EXPECT_FALSE(run.status.is_ok());
}

TEST(CumSumKernel, ExclusiveReverse) {
  const Shape shape{2, 3, 4};
  std::vector<float> x = random_floats(24, 5);
  for (int exclusive : {0, 1}) {
    for (int reverse : {0, 1}) {
      for (int64_t axis : {0, 1, -1}) {
        auto run = run_kernel("CumSum", 14, {Tensor::from_vector(x, shape), Tensor::scalar<int64_t>(axis)},
                              {attr_int("exclusive", exclusive), attr_int("reverse", reverse)});
        ASSERT_TRUE(run.status.is_ok()) << run.status.message();
        const int64_t a = axis < 0 ? axis + 3 : axis;
        for (int64_t flat = 0; flat < 24; ++flat) {
          auto idx = unravel(flat, shape);
          double ref = 0;
          for (int64_t t = 0; t < shape[static_cast<size_t>(a)]; ++t) {
            const int64_t pos = idx[static_cast<size_t>(a)];
            const bool include = reverse ? (exclusive ? t > pos : t >= pos) : (exclusive ? t < pos : t <= pos);
            if (!include) continue;
            auto j = idx;
            j[static_cast<size_t>(a)] = t;
            ref += x[static_cast<size_t>(ravel(j, shape))];
          }
          EXPECT_NEAR(run.outputs[0].tensor().data<float>()[flat], ref, 1e-5);
        }
      }
    }
  }
}

// Reference einsum for tests: loops over every label combination.
std::vector<double> reference_einsum(const std::vector<std::string>& terms, const std::string& out,
                                     const std::vector<std::vector<float>>& data, const std::vector<Shape>& shapes,
                                     Shape* out_shape) {
  std::string all;
  for (auto& t : terms) for (char c : t) if (all.find(c) == std::string::npos) all += c;
  std::vector<int64_t> sz(256, 0);
  for (size_t i = 0; i < terms.size(); ++i)
    for (size_t d = 0; d < terms[i].size(); ++d) sz[static_cast<unsigned char>(terms[i][d])] = shapes[i][d];
  out_shape->clear();
  for (char c : out) out_shape->push_back(sz[static_cast<unsigned char>(c)]);
  std::vector<double> result(static_cast<size_t>(shape_size(*out_shape)), 0.0);
  Shape all_shape;
  for (char c : all) all_shape.push_back(sz[static_cast<unsigned char>(c)]);
  for (int64_t flat = 0; flat < shape_size(all_shape); ++flat) {
    auto idx = unravel(flat, all_shape);
    auto at = [&](char c) { return idx[all.find(c)]; };
    double prod = 1;
    for (size_t i = 0; i < terms.size(); ++i) {
      std::vector<int64_t> ii;
      for (char c : terms[i]) ii.push_back(at(c));
      prod *= data[i][static_cast<size_t>(ravel(ii, shapes[i]))];
    }
    std::vector<int64_t> oi;
    for (char c : out) oi.push_back(at(c));
    result[static_cast<size_t>(ravel(oi, *out_shape))] += prod;
  }
  return result;
}

TEST(EinsumKernel, MatchesReference) {
  struct Case { std::string eq; std::vector<std::string> terms; std::string out; std::vector<Shape> shapes; };
  const std::vector<Case> cases{
      {"ij,jk->ik", {"ij", "jk"}, "ik", {{3, 4}, {4, 5}}},
      {"ij,jk", {"ij", "jk"}, "ik", {{3, 4}, {4, 5}}},
      {"bij,bjk->bik", {"bij", "bjk"}, "bik", {{2, 3, 4}, {2, 4, 5}}},
      {"ij->ji", {"ij"}, "ji", {{3, 4}}},
      {"ii->i", {"ii"}, "i", {{4, 4}}},
      {"ii", {"ii"}, "", {{4, 4}}},
      {"ij->", {"ij"}, "", {{3, 4}}},
      {"i,i", {"i", "i"}, "", {{5}, {5}}},
      {"i,j->ij", {"i", "j"}, "ij", {{3}, {4}}},
      {"bhqd,bhkd->bhqk", {"bhqd", "bhkd"}, "bhqk", {{2, 2, 3, 4}, {2, 2, 5, 4}}},
      {"abc,cd,de->ae", {"abc", "cd", "de"}, "ae", {{2, 3, 4}, {4, 2}, {2, 3}}},
      {"iij,jk->ik", {"iij", "jk"}, "ik", {{3, 3, 2}, {2, 4}}},
      {"Ab,bc->cA", {"Ab", "bc"}, "cA", {{3, 2}, {2, 4}}},
  };
  unsigned seed = 11;
  for (const auto& c : cases) {
    std::vector<std::vector<float>> data;
    std::vector<Value> inputs;
    for (const auto& s : c.shapes) {
      data.push_back(random_floats(static_cast<size_t>(shape_size(s)), seed++));
      inputs.push_back(Tensor::from_vector(data.back(), s));
    }
    Shape ref_shape;
    auto ref = reference_einsum(c.terms, c.out, data, c.shapes, &ref_shape);
    auto run = run_kernel("Einsum", 12, inputs, {attr_string("equation", c.eq)});
    ASSERT_TRUE(run.status.is_ok()) << c.eq << ": " << run.status.message();
    const Tensor& y = run.outputs[0].tensor();
    ASSERT_EQ(y.shape(), ref_shape) << c.eq;
    for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(y.data<float>()[i], ref[i], 1e-4) << c.eq;
  }
}

TEST(EinsumKernel, EllipsisBroadcast) {
  // "...ij,...jk->...ik" with batch dims [2,1] and [3]: broadcast to [2,3].
  auto a = random_floats(2 * 1 * 2 * 3, 1);
  auto b = random_floats(3 * 3 * 2, 2);
  auto run = run_kernel("Einsum", 12, {Tensor::from_vector(a, {2, 1, 2, 3}), Tensor::from_vector(b, {3, 3, 2})},
                        {attr_string("equation", "...ij,...jk->...ik")});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  const Tensor& y = run.outputs[0].tensor();
  ASSERT_EQ(y.shape(), (Shape{2, 3, 2, 2}));
  for (int64_t p = 0; p < 2; ++p)
    for (int64_t q = 0; q < 3; ++q)
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t k = 0; k < 2; ++k) {
          double ref = 0;
          for (int64_t j = 0; j < 3; ++j) ref += a[static_cast<size_t>(p * 6 + i * 3 + j)] * b[static_cast<size_t>(q * 6 + j * 2 + k)];
          EXPECT_NEAR(y.data<float>()[((p * 3 + q) * 2 + i) * 2 + k], ref, 1e-5);
        }
  run = run_kernel("Einsum", 12, {Tensor::from_vector(a, {2, 1, 2, 3})}, {attr_string("equation", "ij->i")});
  EXPECT_FALSE(run.status.is_ok());
}

TEST(DetKernel, MatchesCofactorExpansion) {
  auto x = random_floats(2 * 9, 9);
  auto run = run_kernel("Det", 11, {Tensor::from_vector(x, {2, 3, 3})});
  ASSERT_TRUE(run.status.is_ok());
  for (int b = 0; b < 2; ++b) {
    const float* m = x.data() + b * 9;
    const double ref = m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) + m[2] * (m[3] * m[7] - m[4] * m[6]);
    EXPECT_NEAR(run.outputs[0].tensor().data<float>()[b], ref, 1e-4);
  }
}

}  // namespace
}  // namespace onyx::testing
