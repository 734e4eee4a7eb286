// Unit tests for the CPU tensor-manipulation kernels (src/providers/cpu/tensor):
// each compares against a small reference loop written here.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "kernel_test_util.h"

namespace onyx::testing {
namespace {

Tensor iota_f(const Shape& shape, float start = 0.0f) {
  Tensor t(DataType::kFloat, shape);
  for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = start + static_cast<float>(i);
  return t;
}

Tensor iota_s(const Shape& shape) {
  Tensor t(DataType::kString, shape);
  for (int64_t i = 0; i < t.size(); ++i) t.data<std::string>()[i] = str_cat("s", i);
  return t;
}

Tensor i64(std::vector<int64_t> v, Shape shape = {-1}) {
  if (shape == Shape{-1}) shape = {static_cast<int64_t>(v.size())};
  return Tensor::from_vector<int64_t>(v, shape);
}

template <typename T>
std::vector<T> values(const Value& v) {
  const Tensor& t = v.tensor();
  return std::vector<T>(t.data<T>(), t.data<T>() + t.size());
}

// Row-major flat index of `index` in `shape`.
int64_t flat(const Shape& shape, const std::vector<int64_t>& index) {
  int64_t f = 0;
  for (size_t i = 0; i < shape.size(); ++i) f = f * shape[i] + index[i];
  return f;
}

// Calls fn(index) for every multi-index of shape, row-major.
template <typename Fn>
void for_each_index(const Shape& shape, Fn fn) {
  if (shape_size(shape) == 0) return;
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t n = 0; n < shape_size(shape); ++n) {
    fn(index);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

void expect_error(const KernelRun& run, const std::string& fragment) {
  ASSERT_FALSE(run.status.is_ok());
  EXPECT_NE(run.status.message().find(fragment), std::string::npos) << run.status.message();
}

TEST(TensorKernels, ReshapeIsZeroCopyAndInfers) {
  Tensor x = iota_f({2, 3, 4});
  auto run = run_kernel("Reshape", 14, {x, i64({0, -1})});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  EXPECT_EQ(run.outputs[0].tensor().shape(), (Shape{2, 12}));
  EXPECT_TRUE(run.outputs[0].tensor().shares_buffer_with(x));
  // allowzero keeps a literal 0 dim.
  auto empty = run_kernel("Reshape", 14, {Tensor(DataType::kFloat, {0, 3}), i64({3, 0})}, {attr_int("allowzero", 1)});
  ASSERT_TRUE(empty.status.is_ok()) << empty.status.message();
  EXPECT_EQ(empty.outputs[0].tensor().shape(), (Shape{3, 0}));
  // v1 reads the attribute.
  auto v1 = run_kernel("Reshape", 1, {x}, {attr_ints("shape", {4, 6})});
  ASSERT_TRUE(v1.status.is_ok()) << v1.status.message();
  EXPECT_EQ(v1.outputs[0].tensor().shape(), (Shape{4, 6}));
  expect_error(run_kernel("Reshape", 14, {x, i64({5, -1})}), "cannot reshape");
}

TEST(TensorKernels, SqueezeUnsqueezeFlattenAcrossVersions) {
  Tensor x = iota_f({1, 3, 1, 2});
  auto sq = run_kernel("Squeeze", 13, {x, i64({-2})});
  ASSERT_TRUE(sq.status.is_ok()) << sq.status.message();
  EXPECT_EQ(sq.outputs[0].tensor().shape(), (Shape{1, 3, 2}));
  EXPECT_TRUE(sq.outputs[0].tensor().shares_buffer_with(x));
  auto all = run_kernel("Squeeze", 11, {x});
  EXPECT_EQ(all.outputs[0].tensor().shape(), (Shape{3, 2}));
  expect_error(run_kernel("Squeeze", 11, {x}, {attr_ints("axes", {1})}), "expected 1");
  auto un = run_kernel("Unsqueeze", 11, {x}, {attr_ints("axes", {0, -1})});
  ASSERT_TRUE(un.status.is_ok()) << un.status.message();
  EXPECT_EQ(un.outputs[0].tensor().shape(), (Shape{1, 1, 3, 1, 2, 1}));
  auto un13 = run_kernel("Unsqueeze", 13, {iota_s({2}), i64({1})});
  ASSERT_TRUE(un13.status.is_ok()) << un13.status.message();
  EXPECT_EQ(un13.outputs[0].tensor().shape(), (Shape{2, 1}));
  auto fl = run_kernel("Flatten", 13, {x}, {attr_int("axis", -1)});
  EXPECT_EQ(fl.outputs[0].tensor().shape(), (Shape{3, 2}));
  expect_error(run_kernel("Unsqueeze", 13, {x, i64({7})}), "out of range");
}

TEST(TensorKernels, IdentityPassesSequencesThrough) {
  Value seq = Value::sequence({Value(iota_f({2})), Value(iota_f({3}))});
  auto run = run_kernel("Identity", 16, {seq});
  ASSERT_TRUE(run.status.is_ok());
  ASSERT_TRUE(run.outputs[0].is_sequence());
  EXPECT_EQ(run.outputs[0].items().size(), 2u);
}

TEST(TensorKernels, TransposeMatchesReference) {
  const Shape shape = {2, 3, 4, 5};
  const std::vector<int64_t> perm = {2, 0, 3, 1};
  for (bool strings : {false, true}) {
    Tensor x = strings ? iota_s(shape) : iota_f(shape);
    auto run = run_kernel("Transpose", 13, {x}, {attr_ints("perm", perm)});
    ASSERT_TRUE(run.status.is_ok()) << run.status.message();
    const Tensor& y = run.outputs[0].tensor();
    const Shape out_shape = {4, 2, 5, 3};
    ASSERT_EQ(y.shape(), out_shape);
    for_each_index(out_shape, [&](const std::vector<int64_t>& o) {
      std::vector<int64_t> in(4);
      for (size_t i = 0; i < 4; ++i) in[static_cast<size_t>(perm[i])] = o[i];
      if (strings) {
        ASSERT_EQ(y.data<std::string>()[flat(out_shape, o)], x.data<std::string>()[flat(shape, in)]);
      } else {
        ASSERT_EQ(y.data<float>()[flat(out_shape, o)], x.data<float>()[flat(shape, in)]);
      }
    });
  }
  expect_error(run_kernel("Transpose", 13, {iota_f({2, 3})}, {attr_ints("perm", {0, 0})}), "permutation");
}

TEST(TensorKernels, TransposeAndSliceAgreeAcrossThreads) {
  // Large enough that parallel_for splits the work: each chunk restarts the
  // strided copier's odometer mid-tensor.
  const Shape shape = {64, 48, 33};
  Tensor x = iota_f(shape);
  auto one = run_kernel("Transpose", 13, {x}, {attr_ints("perm", {1, 2, 0})}, 1, "", 1);
  auto four = run_kernel("Transpose", 13, {x}, {attr_ints("perm", {1, 2, 0})}, 1, "", 4);
  ASSERT_TRUE(one.status.is_ok() && four.status.is_ok());
  EXPECT_EQ(values<float>(one.outputs[0]), values<float>(four.outputs[0]));
  const Tensor& y = four.outputs[0].tensor();
  for_each_index(y.shape(), [&](const std::vector<int64_t>& o) {
    ASSERT_EQ(y.data<float>()[flat(y.shape(), o)], x.data<float>()[flat(shape, {o[2], o[0], o[1]})]);
  });
  auto sliced = run_kernel("Slice", 13, {x, i64({60, 1}), i64({-1000, 40}), i64({0, 2}), i64({-3, 2})}, {}, 1, "", 4);
  ASSERT_TRUE(sliced.status.is_ok()) << sliced.status.message();
  const Tensor& z = sliced.outputs[0].tensor();
  ASSERT_EQ(z.shape(), (Shape{21, 48, 16}));
  for_each_index(z.shape(), [&](const std::vector<int64_t>& o) {
    ASSERT_EQ(z.data<float>()[flat(z.shape(), o)], x.data<float>()[flat(shape, {60 - 3 * o[0], o[1], 1 + 2 * o[2]})]);
  });
}

// 4-byte transposes go through 4 x 4 tiles in bands of 64 source columns:
// NCHW <-> NHWC and head splits with extents on both sides of 4 and 64, int32
// as well as float, at 1 and 3 threads, against the index formula.
TEST(TensorKernels, TiledTransposesMatchReference) {
  struct Case {
    Shape shape;
    std::vector<int64_t> perm;
  };
  const std::vector<Case> cases = {
      {{1, 56, 7, 96}, {0, 3, 1, 2}}, {{1, 96, 7, 9}, {0, 2, 3, 1}}, {{2, 5, 3, 67}, {0, 3, 1, 2}},
      {{3, 7, 130}, {0, 2, 1}},       {{4, 4}, {1, 0}},              {{1, 9, 6, 5, 4}, {0, 2, 1, 4, 3}},
      {{2, 65, 4, 6}, {0, 2, 3, 1}},  {{5, 3}, {1, 0}},
  };
  for (const Case& c : cases) {
    const int64_t rank = static_cast<int64_t>(c.shape.size());
    Shape out_shape(c.shape.size());
    for (int64_t i = 0; i < rank; ++i) out_shape[static_cast<size_t>(i)] = c.shape[static_cast<size_t>(c.perm[static_cast<size_t>(i)])];
    for (int threads : {1, 3}) {
      for (bool ints : {false, true}) {
        Tensor x = iota_f(c.shape);
        if (ints) {
          Tensor xi(DataType::kInt32, c.shape);
          for (int64_t i = 0; i < xi.size(); ++i) xi.data<int32_t>()[i] = static_cast<int32_t>(i * 7 - 5);
          x = xi;
        }
        auto run = run_kernel("Transpose", 13, {x}, {attr_ints("perm", c.perm)}, 1, "", threads);
        ASSERT_TRUE(run.status.is_ok()) << run.status.message();
        const Tensor& y = run.outputs[0].tensor();
        ASSERT_EQ(y.shape(), out_shape);
        for_each_index(out_shape, [&](const std::vector<int64_t>& o) {
          std::vector<int64_t> in(static_cast<size_t>(rank));
          for (size_t i = 0; i < o.size(); ++i) in[static_cast<size_t>(c.perm[i])] = o[i];
          if (ints) {
            ASSERT_EQ(y.data<int32_t>()[flat(out_shape, o)], x.data<int32_t>()[flat(c.shape, in)]);
          } else {
            ASSERT_EQ(y.data<float>()[flat(out_shape, o)], x.data<float>()[flat(c.shape, in)]);
          }
        });
      }
    }
  }
}

TEST(TensorKernels, ConcatAndSplitRoundTrip) {
  Tensor a = iota_s({2, 1, 3}), b = iota_s({2, 2, 3}), empty(DataType::kString, {2, 0, 3});
  auto run = run_kernel("Concat", 13, {a, empty, b}, {attr_int("axis", -2)});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  const Tensor& y = run.outputs[0].tensor();
  ASSERT_EQ(y.shape(), (Shape{2, 3, 3}));
  for_each_index(y.shape(), [&](const std::vector<int64_t>& i) {
    const std::string expected = i[1] < 1 ? a.data<std::string>()[flat(a.shape(), i)]
                                          : b.data<std::string>()[flat(b.shape(), {i[0], i[1] - 1, i[2]})];
    ASSERT_EQ(y.data<std::string>()[flat(y.shape(), i)], expected);
  });
  expect_error(run_kernel("Concat", 13, {iota_f({2, 3}), iota_f({3, 3})}, {attr_int("axis", 1)}), "shape");

  auto split = run_kernel("Split", 13, {y, i64({1, 2})}, {attr_int("axis", 1)}, 2);
  ASSERT_TRUE(split.status.is_ok()) << split.status.message();
  EXPECT_EQ(values<std::string>(split.outputs[0]), values<std::string>(Value(a)));
  EXPECT_EQ(values<std::string>(split.outputs[1]), values<std::string>(Value(b)));
  // v18 num_outputs: 7 split 3 ways is 3, 3, 1.
  auto uneven = run_kernel("Split", 18, {iota_f({7})}, {attr_int("num_outputs", 3)}, 3);
  ASSERT_TRUE(uneven.status.is_ok()) << uneven.status.message();
  EXPECT_EQ(values<float>(uneven.outputs[2]), std::vector<float>{6});
  expect_error(run_kernel("Split", 13, {iota_f({7}), i64({3, 3})}, {}, 2), "sums to");
}

// A channel concat of large float inputs: copied in 64 KiB pieces shared by
// the threads (several pieces per input, inputs of different sizes, batch 2).
TEST(TensorKernels, LargeConcatInPiecesMatchesReference) {
  for (int64_t batch : {1, 2}) {
    const std::vector<int64_t> channels = {5, 33, 17};
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < channels.size(); ++i) {
      Tensor t = iota_f({batch, channels[i], 40, 40});
      for (int64_t k = 0; k < t.size(); ++k) t.data<float>()[k] += static_cast<float>(1000000 * (i + 1));
      inputs.push_back(t);
    }
    auto run = run_kernel("Concat", 13, {inputs[0], inputs[1], inputs[2]}, {attr_int("axis", 1)}, 1, "", 3);
    ASSERT_TRUE(run.status.is_ok()) << run.status.message();
    const Tensor& y = run.outputs[0].tensor();
    ASSERT_EQ(y.shape(), (Shape{batch, 55, 40, 40}));
    for_each_index(y.shape(), [&](const std::vector<int64_t>& i) {
      int64_t c = i[1];
      size_t which = 0;
      while (c >= channels[which]) c -= channels[which++];
      const Tensor& t = inputs[which];
      ASSERT_EQ(y.data<float>()[flat(y.shape(), i)], t.data<float>()[flat(t.shape(), {i[0], c, i[2], i[3]})]);
    });
  }
}

TEST(TensorKernels, SliceWithNegativeStepsMatchesReference) {
  const Shape shape = {4, 5, 6};
  Tensor x = iota_f(shape);
  // axes -1 and 0: dim 2 from 5 down past 0 step -2, dim 0 from 1 to end.
  auto run = run_kernel("Slice", 13, {x, i64({-1, 1}), i64({-100, 1000}), i64({-1, 0}), i64({-2, 1})});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  const Tensor& y = run.outputs[0].tensor();
  ASSERT_EQ(y.shape(), (Shape{3, 5, 3}));
  for_each_index(y.shape(), [&](const std::vector<int64_t>& o) {
    ASSERT_EQ(y.data<float>()[flat(y.shape(), o)], x.data<float>()[flat(shape, {1 + o[0], o[1], 5 - 2 * o[2]})]);
  });
  auto empty = run_kernel("Slice", 13, {x, i64({3}), i64({1}), i64({1})});
  ASSERT_TRUE(empty.status.is_ok());
  EXPECT_EQ(empty.outputs[0].tensor().shape(), (Shape{4, 0, 6}));
  auto v1 = run_kernel("Slice", 1, {x}, {attr_ints("starts", {1}), attr_ints("ends", {3}), attr_ints("axes", {2})});
  ASSERT_TRUE(v1.status.is_ok());
  EXPECT_EQ(v1.outputs[0].tensor().shape(), (Shape{4, 5, 2}));
  expect_error(run_kernel("Slice", 13, {x, i64({0}), i64({1}), i64({0}), i64({0})}), "steps");
}

TEST(TensorKernels, GatherHandlesNegativeIndicesAndRejectsBadOnes) {
  Tensor x = iota_s({3, 4});
  auto run = run_kernel("Gather", 13, {x, i64({-1, 0, 2}, {3})}, {attr_int("axis", -1)});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  const Tensor& y = run.outputs[0].tensor();
  ASSERT_EQ(y.shape(), (Shape{3, 3}));
  const int64_t cols[] = {3, 0, 2};
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(y.data<std::string>()[r * 3 + j], x.data<std::string>()[r * 4 + cols[j]]);
  }
  expect_error(run_kernel("Gather", 13, {x, i64({4})}, {attr_int("axis", 1)}), "index 4");
  expect_error(run_kernel("Gather", 13, {x, i64({-5})}, {attr_int("axis", 1)}), "index -5");
  auto empty = run_kernel("Gather", 13, {x, i64({}, {0, 2})});
  ASSERT_TRUE(empty.status.is_ok());
  EXPECT_EQ(empty.outputs[0].tensor().shape(), (Shape{0, 2, 4}));
}

TEST(TensorKernels, GatherElementsAndGatherND) {
  Tensor x = iota_f({3, 3});
  Tensor idx = i64({1, -1, 0, 2}, {2, 2});
  auto ge = run_kernel("GatherElements", 13, {x, idx}, {attr_int("axis", 0)});
  ASSERT_TRUE(ge.status.is_ok()) << ge.status.message();
  // out[i][j] = x[idx[i][j]][j]
  EXPECT_EQ(values<float>(ge.outputs[0]), (std::vector<float>{3, 7, 0, 7}));
  expect_error(run_kernel("GatherElements", 13, {x, i64({3}, {1, 1})}), "index 3");

  // batch_dims = 1: data [2,3,4], indices [2,1,1] -> out[b,0,:] = data[b, idx[b,0,0], :]
  Tensor d = iota_f({2, 3, 4});
  auto gnd = run_kernel("GatherND", 13, {d, i64({2, 1}, {2, 1, 1})}, {attr_int("batch_dims", 1)});
  ASSERT_TRUE(gnd.status.is_ok()) << gnd.status.message();
  ASSERT_EQ(gnd.outputs[0].tensor().shape(), (Shape{2, 1, 4}));
  std::vector<float> expected;
  const int64_t picks[] = {2, 1};
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t k = 0; k < 4; ++k) expected.push_back(d.data<float>()[(b * 3 + picks[b]) * 4 + k]);
  }
  EXPECT_EQ(values<float>(gnd.outputs[0]), expected);
  expect_error(run_kernel("GatherND", 13, {d, i64({0, 5}, {1, 2})}), "index 5");
}

TEST(TensorKernels, ScatterReductions) {
  Tensor data = iota_f({4, 2});
  Tensor updates = iota_f({3, 2}, 10);
  auto add = run_kernel("ScatterND", 16, {data, i64({1, 1, -1}, {3, 1}), updates}, {attr_string("reduction", "add")});
  ASSERT_TRUE(add.status.is_ok()) << add.status.message();
  std::vector<float> expected = values<float>(Value(data));
  const int64_t rows[] = {1, 1, 3};
  for (int64_t u = 0; u < 3; ++u) {
    for (int64_t k = 0; k < 2; ++k) expected[static_cast<size_t>(rows[u] * 2 + k)] += updates.data<float>()[u * 2 + k];
  }
  EXPECT_EQ(values<float>(add.outputs[0]), expected);
  expect_error(run_kernel("ScatterND", 16, {data, i64({4}, {1, 1}), iota_f({1, 2})}), "index 4");

  Tensor se_idx = i64({0, 0, 1}, {1, 3});
  auto mx = run_kernel("ScatterElements", 18, {iota_f({2, 3}), se_idx, iota_f({1, 3}, 1)},
                       {attr_int("axis", 0), attr_string("reduction", "max")});
  ASSERT_TRUE(mx.status.is_ok()) << mx.status.message();
  EXPECT_EQ(values<float>(mx.outputs[0]), (std::vector<float>{1, 2, 2, 3, 4, 5}));
  auto strings = run_kernel("Scatter", 11, {iota_s({2}), i64({-1}), Tensor::from_vector<std::string>({"z"}, {1})});
  ASSERT_TRUE(strings.status.is_ok()) << strings.status.message();
  EXPECT_EQ(values<std::string>(strings.outputs[0]), (std::vector<std::string>{"s0", "z"}));
}

TEST(TensorKernels, ExpandAndTileMatchReference) {
  Tensor x = iota_f({3, 1});
  auto ex = run_kernel("Expand", 13, {x, i64({2, 1, 4})});
  ASSERT_TRUE(ex.status.is_ok()) << ex.status.message();
  const Tensor& y = ex.outputs[0].tensor();
  ASSERT_EQ(y.shape(), (Shape{2, 3, 4}));
  for_each_index(y.shape(), [&](const std::vector<int64_t>& i) {
    ASSERT_EQ(y.data<float>()[flat(y.shape(), i)], x.data<float>()[i[1]]);
  });
  expect_error(run_kernel("Expand", 13, {iota_f({3}), i64({2})}), "broadcast");

  Tensor t = iota_s({2, 3});
  auto tile = run_kernel("Tile", 13, {t, i64({2, 3})});
  ASSERT_TRUE(tile.status.is_ok()) << tile.status.message();
  const Tensor& z = tile.outputs[0].tensor();
  ASSERT_EQ(z.shape(), (Shape{4, 9}));
  for_each_index(z.shape(), [&](const std::vector<int64_t>& i) {
    ASSERT_EQ(z.data<std::string>()[flat(z.shape(), i)], t.data<std::string>()[(i[0] % 2) * 3 + i[1] % 3]);
  });
}

TEST(TensorKernels, PadModesMatchReference) {
  const Shape shape = {3, 4};
  Tensor x = iota_f(shape);
  const std::vector<int64_t> pads = {2, 5, 1, -1};  // begin rows/cols, end rows/cols
  for (const char* mode : {"constant", "reflect", "edge", "wrap"}) {
    auto run = run_kernel("Pad", 19, {x, i64(pads), Tensor::scalar<float>(-1.0f)}, {attr_string("mode", mode)});
    ASSERT_TRUE(run.status.is_ok()) << mode << ": " << run.status.message();
    const Tensor& y = run.outputs[0].tensor();
    ASSERT_EQ(y.shape(), (Shape{6, 8})) << mode;
    auto map = [&](int64_t i, int64_t n) -> int64_t {
      const std::string m = mode;
      if (i >= 0 && i < n) return i;
      if (m == "constant") return -1;
      if (m == "edge") return i < 0 ? 0 : n - 1;
      if (m == "wrap") return ((i % n) + n) % n;
      while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;  // reflect
      return i;
    };
    for_each_index(y.shape(), [&](const std::vector<int64_t>& o) {
      const int64_t r = map(o[0] - pads[0], 3), c = map(o[1] - pads[1], 4);
      const float expected = (r < 0 || c < 0) ? -1.0f : x.data<float>()[r * 4 + c];
      ASSERT_EQ(y.data<float>()[flat(y.shape(), o)], expected) << mode << " at " << o[0] << "," << o[1];
    });
  }
  auto v2 = run_kernel("Pad", 2, {x}, {attr_ints("pads", {0, 1, 0, 1}), attr_float("value", 7.0f)});
  ASSERT_TRUE(v2.status.is_ok()) << v2.status.message();
  EXPECT_EQ(v2.outputs[0].tensor().data<float>()[0], 7.0f);
  expect_error(run_kernel("Pad", 19, {x, i64({1, 1})}), "pads has 2");
  auto ccp = run_kernel("CenterCropPad", 18, {iota_f({5, 2}), i64({3, 4})});
  ASSERT_TRUE(ccp.status.is_ok()) << ccp.status.message();
  EXPECT_EQ(values<float>(ccp.outputs[0]), (std::vector<float>{0, 2, 3, 0, 0, 4, 5, 0, 0, 6, 7, 0}));
}

TEST(TensorKernels, GeneratorsAndShapes) {
  auto shape = run_kernel("Shape", 15, {iota_f({2, 3, 4})}, {attr_int("start", -2)});
  EXPECT_EQ(values<int64_t>(shape.outputs[0]), (std::vector<int64_t>{3, 4}));
  auto size = run_kernel("Size", 13, {iota_f({2, 0})});
  EXPECT_EQ(values<int64_t>(size.outputs[0]), std::vector<int64_t>{0});
  auto c = run_kernel("Constant", 13, {}, {attr_ints("value_ints", {1, 2})});
  ASSERT_TRUE(c.status.is_ok()) << c.status.message();
  EXPECT_EQ(values<int64_t>(c.outputs[0]), (std::vector<int64_t>{1, 2}));
  auto range = run_kernel("Range", 11, {Tensor::scalar<int32_t>(10), Tensor::scalar<int32_t>(4), Tensor::scalar<int32_t>(-3)});
  EXPECT_EQ(values<int32_t>(range.outputs[0]), (std::vector<int32_t>{10, 7}));
  expect_error(run_kernel("Range", 11, {Tensor::scalar<float>(0), Tensor::scalar<float>(1), Tensor::scalar<float>(0)}),
               "delta");
  auto eye = run_kernel("EyeLike", 9, {iota_f({2, 3})}, {attr_int("k", 1)});
  EXPECT_EQ(values<float>(eye.outputs[0]), (std::vector<float>{0, 1, 0, 0, 0, 1}));
  auto cos = run_kernel("ConstantOfShape", 9, {i64({2, 0})});
  ASSERT_TRUE(cos.status.is_ok());
  EXPECT_EQ(cos.outputs[0].tensor().shape(), (Shape{2, 0}));
}

TEST(TensorKernels, SelectionOps) {
  Tensor x = Tensor::from_vector<float>({0, 2, 0, 3, 1, 0}, {2, 3});
  auto nz = run_kernel("NonZero", 13, {x});
  EXPECT_EQ(values<int64_t>(nz.outputs[0]), (std::vector<int64_t>{0, 1, 1, 1, 0, 1}));
  Tensor cond = Tensor::from_vector<bool>({false, true, true}, {3});
  auto cp = run_kernel("Compress", 11, {iota_s({2, 3}), cond}, {attr_int("axis", -1)});
  ASSERT_TRUE(cp.status.is_ok()) << cp.status.message();
  EXPECT_EQ(values<std::string>(cp.outputs[0]), (std::vector<std::string>{"s1", "s2", "s4", "s5"}));
  auto tri = run_kernel("Trilu", 14, {iota_f({3, 3}), i64({-1}, {})}, {attr_int("upper", 0)});
  ASSERT_TRUE(tri.status.is_ok()) << tri.status.message();
  EXPECT_EQ(values<float>(tri.outputs[0]), (std::vector<float>{0, 0, 0, 3, 0, 0, 6, 7, 0}));
  auto oh = run_kernel("OneHot", 11, {i64({1, -1, 5}), Tensor::scalar<int64_t>(3), Tensor::from_vector<float>({0, 9}, {2})},
                       {attr_int("axis", 0)});
  ASSERT_TRUE(oh.status.is_ok()) << oh.status.message();
  EXPECT_EQ(values<float>(oh.outputs[0]), (std::vector<float>{0, 0, 0, 9, 0, 0, 0, 9, 0}));
  auto rs = run_kernel("ReverseSequence", 10, {iota_f({2, 3}), i64({3, 1})},
                       {attr_int("batch_axis", 0), attr_int("time_axis", 1)});
  ASSERT_TRUE(rs.status.is_ok()) << rs.status.message();
  EXPECT_EQ(values<float>(rs.outputs[0]), (std::vector<float>{2, 1, 0, 3, 4, 5}));
  expect_error(run_kernel("ReverseSequence", 10, {iota_f({2, 3}), i64({4, 1})},
                          {attr_int("batch_axis", 0), attr_int("time_axis", 1)}),
               "out of range");
}

TEST(TensorKernels, UniqueUnsortedReturnsAllOutputs) {
  Tensor x = Tensor::from_vector<std::string>({"b", "a", "a", "c", "b"}, {5});
  auto run = run_kernel("Unique", 11, {x}, {attr_int("sorted", 0)}, 4);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  EXPECT_EQ(values<std::string>(run.outputs[0]), (std::vector<std::string>{"b", "a", "c"}));
  EXPECT_EQ(values<int64_t>(run.outputs[1]), (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(values<int64_t>(run.outputs[2]), (std::vector<int64_t>{0, 1, 1, 2, 0}));
  EXPECT_EQ(values<int64_t>(run.outputs[3]), (std::vector<int64_t>{2, 2, 1}));
  auto rows = run_kernel("Unique", 11, {Tensor::from_vector<int32_t>({2, 1, 0, 5, 2, 1}, {3, 2})}, {attr_int("axis", -2)});
  ASSERT_TRUE(rows.status.is_ok()) << rows.status.message();
  EXPECT_EQ(values<int32_t>(rows.outputs[0]), (std::vector<int32_t>{0, 5, 2, 1}));
}

TEST(TensorKernels, DepthToSpaceInvertsSpaceToDepth) {
  Tensor x = iota_f({1, 2, 4, 6});
  for (const char* mode : {"DCR", "CRD"}) {
    auto s2d = run_kernel("SpaceToDepth", 28, {x}, {attr_int("blocksize", 2), attr_string("mode", mode)});
    ASSERT_TRUE(s2d.status.is_ok()) << s2d.status.message();
    EXPECT_EQ(s2d.outputs[0].tensor().shape(), (Shape{1, 8, 2, 3}));
    auto d2s = run_kernel("DepthToSpace", 13, {s2d.outputs[0]}, {attr_int("blocksize", 2), attr_string("mode", mode)});
    ASSERT_TRUE(d2s.status.is_ok()) << d2s.status.message();
    EXPECT_EQ(values<float>(d2s.outputs[0]), values<float>(Value(x))) << mode;
  }
  // DCR reference: y[0, c, h*2+i, w*2+j] = x[0, (i*2+j)*C' + c, h, w].
  Tensor d = iota_f({1, 8, 2, 3});
  auto run = run_kernel("DepthToSpace", 13, {d}, {attr_int("blocksize", 2)});
  const Tensor& y = run.outputs[0].tensor();
  for_each_index(y.shape(), [&](const std::vector<int64_t>& o) {
    const int64_t i = o[2] % 2, j = o[3] % 2;
    ASSERT_EQ(y.data<float>()[flat(y.shape(), o)],
              d.data<float>()[flat(d.shape(), {0, (i * 2 + j) * 2 + o[1], o[2] / 2, o[3] / 2})]);
  });
}

TEST(TensorKernels, ResizeNearestAndLinear) {
  Tensor x = Tensor::from_vector<uint8_t>({1, 2, 3, 4}, {1, 1, 2, 2});
  Tensor scales = Tensor::from_vector<float>({1, 1, 2, 2}, {4});
  auto near = run_kernel("Resize", 19, {x, Value(), scales}, {attr_string("mode", "nearest")});
  ASSERT_TRUE(near.status.is_ok()) << near.status.message();
  const Tensor& y = near.outputs[0].tensor();
  ASSERT_EQ(y.shape(), (Shape{1, 1, 4, 4}));
  for_each_index(y.shape(), [&](const std::vector<int64_t>& o) {
    ASSERT_EQ(y.data<uint8_t>()[flat(y.shape(), o)], x.data<uint8_t>()[(o[2] / 2) * 2 + o[3] / 2]);
  });
  // align_corners linear on 1-D: 3 points stretched to 5 interpolate halfway.
  Tensor line = Tensor::from_vector<float>({0, 2, 4}, {3});
  auto lin = run_kernel("Resize", 13, {line, Value(), Value(), i64({5})},
                        {attr_string("mode", "linear"), attr_string("coordinate_transformation_mode", "align_corners")});
  ASSERT_TRUE(lin.status.is_ok()) << lin.status.message();
  EXPECT_EQ(values<float>(lin.outputs[0]), (std::vector<float>{0, 1, 2, 3, 4}));
  auto up = run_kernel("Upsample", 9, {iota_f({1, 2}), Tensor::from_vector<float>({1, 2}, {2})});
  ASSERT_TRUE(up.status.is_ok()) << up.status.message();
  EXPECT_EQ(values<float>(up.outputs[0]), (std::vector<float>{0, 0, 1, 1}));
  expect_error(run_kernel("Resize", 13, {line, Value(), Value(), Value()}), "scales or sizes");
}

// Float images take the row-at-a-time path; double inputs the per-axis one.
// Both must agree (to float rounding) for every mode, coordinate mode, only
// one of the two axes resized, and downscaling with antialias; a NaN in a
// nearest resize lands exactly where its element is copied.
TEST(TensorKernels, ResizeFloatRowsMatchThePerAxisPath) {
  struct Case {
    std::string mode, coordinates, nearest_mode;
    Shape in;
    std::vector<int64_t> sizes;
    int64_t antialias;
  };
  const std::vector<Case> cases = {
      {"nearest", "asymmetric", "floor", {1, 3, 5, 7}, {1, 3, 10, 14}, 0},
      {"nearest", "half_pixel", "round_prefer_floor", {2, 2, 6, 5}, {2, 2, 9, 13}, 0},
      {"linear", "half_pixel", "floor", {1, 3, 5, 7}, {1, 3, 20, 28}, 0},
      {"linear", "align_corners", "floor", {1, 2, 4, 6}, {1, 2, 7, 11}, 0},
      {"linear", "pytorch_half_pixel", "floor", {1, 2, 8, 9}, {1, 2, 8, 4}, 0},  // only the width
      {"linear", "half_pixel", "floor", {1, 2, 12, 10}, {1, 2, 5, 10}, 1},       // only the height, antialias
      {"cubic", "half_pixel", "floor", {1, 1, 6, 7}, {1, 1, 11, 3}, 0},
      {"linear", "asymmetric", "floor", {3, 5, 4}, {3, 9, 10}, 0},               // rank 3
  };
  for (const Case& c : cases) {
    std::vector<float> input = random_floats(static_cast<size_t>(shape_size(c.in)), 77, -4.0f, 4.0f);
    if (c.mode == "nearest") input[3] = std::numeric_limits<float>::quiet_NaN();
    std::vector<double> wide(input.begin(), input.end());
    const std::vector<graph::Attribute> attributes = {
        attr_string("mode", c.mode), attr_string("coordinate_transformation_mode", c.coordinates),
        attr_string("nearest_mode", c.nearest_mode), attr_int("antialias", c.antialias)};
    const Tensor sizes = i64(c.sizes);
    auto f = run_kernel("Resize", 19, {Tensor::from_vector<float>(input, c.in), Value(), Value(), sizes}, attributes);
    auto d = run_kernel("Resize", 19, {Tensor::from_vector<double>(wide, c.in), Value(), Value(), sizes}, attributes);
    ASSERT_TRUE(f.status.is_ok()) << f.status.message();
    ASSERT_TRUE(d.status.is_ok()) << d.status.message();
    const std::vector<float> got = values<float>(f.outputs[0]);
    const std::vector<double> want = values<double>(d.outputs[0]);
    ASSERT_EQ(got.size(), want.size());
    const std::string what = c.mode + " " + c.coordinates + " to " + shape_to_string(Shape(c.sizes.begin(), c.sizes.end()));
    for (size_t i = 0; i < want.size(); ++i) {
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << what << " at " << i;
      } else {
        ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << what << " at " << i;
      }
    }
  }
}

}  // namespace
}  // namespace onyx::testing
