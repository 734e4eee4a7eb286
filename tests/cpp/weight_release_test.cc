// Weights packed while their pages are handed back: pack_b reports each
// stretch of B once, in order, and packs the same matrix; owned mappings drop
// only their own pages; a Gemm whose B nothing else reads still computes the
// same result, loaded from a file (the pages it dropped come back from it).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "model_builder.h"
#include "onyx/session.h"
#include "providers/cpu/gemm/sgemm.h"
#include "tensor/owned_pages.h"

namespace onyx {
namespace {

using testing::random_floats;

TEST(WeightRelease, PackBReportsEveryStretchOnceInOrder) {
  for (bool trans_b : {false, true}) {
    const int64_t K = 700, N = 77, M = 5;
    const int64_t ldb = trans_b ? K : N;
    const auto b = random_floats(static_cast<size_t>(K * N), 1);
    const auto a = random_floats(static_cast<size_t>(M * K), 2);
    const char* next = reinterpret_cast<const char*>(b.data());
    const cpu::PackedMatrix plain = cpu::pack_b(trans_b, K, N, b.data(), ldb);
    const cpu::PackedMatrix reported =
        cpu::pack_b(trans_b, K, N, b.data(), ldb, cpu::SgemmIsa::kAuto, [&](const float* p, size_t n) {
          EXPECT_EQ(reinterpret_cast<const char*>(p), next) << "stretches out of order";
          next = reinterpret_cast<const char*>(p) + n;
        });
    EXPECT_EQ(next, reinterpret_cast<const char*>(b.data() + b.size())) << "B not covered exactly";
    std::vector<float> c1(static_cast<size_t>(M * N)), c2(c1.size());
    cpu::sgemm_packed_b(false, M, 1.0f, a.data(), K, plain, 0.0f, c1.data(), N, nullptr);
    cpu::sgemm_packed_b(false, M, 1.0f, a.data(), K, reported, 0.0f, c2.data(), N, nullptr);
    EXPECT_EQ(c1, c2) << "trans_b " << trans_b;
  }
}

TEST(WeightRelease, OwnedPagesOnlyDropTheirOwn) {
  const size_t page = 4096, bytes = 8 * page;
  auto* p = static_cast<float*>(map_owned(bytes));
  ASSERT_NE(p, nullptr);
  for (size_t i = 0; i < bytes / sizeof(float); ++i) p[i] = 1.0f;
  // Pages 2..4 whole, from the middle of page 1 to the middle of page 5.
  const size_t from = page + page / 2, to = 5 * page + page / 2;
  EXPECT_TRUE(discard_owned_pages(reinterpret_cast<char*>(p) + from, to - from));
  for (size_t i = 0; i < bytes / sizeof(float); ++i) {
    const size_t at = i * sizeof(float);
    const bool dropped = at >= 2 * page && at < 5 * page;
    ASSERT_EQ(p[i], dropped ? 0.0f : 1.0f) << "byte " << at;
  }
  std::vector<float> heap(4096, 1.0f);
  EXPECT_FALSE(discard_owned_pages(heap.data(), heap.size() * sizeof(float)));
  EXPECT_FALSE(discard_owned_pages(reinterpret_cast<char*>(p) + bytes - 16, 32)) << "a range past the mapping";
  unmap_owned(p, bytes);
  EXPECT_FALSE(discard_owned_pages(p, page)) << "an unmapped range";
}

// y = x W^T (+ W read a second time when `shared`) from a model file: the
// session drops W's file pages as Gemm packs it, and the numbers stay right.
void check_gemm_from_file(bool trans_b, bool shared) {
  const int64_t K = 640, N = 520;  // W is 1.3 MB
  const auto w = random_floats(static_cast<size_t>(K * N), 3);
  const auto x = random_floats(static_cast<size_t>(K), 4);
  testing::ModelBuilder mb(17);
  mb.input("x", {1, K});
  mb.initializer("w", trans_b ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}, w);
  mb.node("Gemm", {"x", "w"}, {"y"});
  mb.proto().graph->node.back().attribute.push_back(testing::int_attr("transB", trans_b ? 1 : 0));
  std::vector<std::string> outputs = {"y"};
  if (shared) {
    mb.node("Identity", {"w"}, {"w_out"});
    outputs.push_back("w_out");
  }
  for (const auto& o : outputs) mb.output(o);
  const std::string path =
      ::testing::TempDir() + "/weight_release_" + std::to_string(trans_b) + std::to_string(shared) + ".onnx";
  {
    std::ofstream file(path, std::ios::binary);
    file << mb.bytes();
  }
  auto session = InferenceSession::from_file(path, SessionOptions{});
  Tensor xt(DataType::kFloat, {1, K});
  std::copy(x.begin(), x.end(), xt.data<float>());
  for (int run = 0; run < 2; ++run) {
    auto out = session->run({}, {{"x", Value(xt)}});
    const float* y = out[0].tensor().data<float>();
    for (int64_t j = 0; j < N; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < K; ++k) {
        sum += double(x[static_cast<size_t>(k)]) *
               double(trans_b ? w[static_cast<size_t>(j * K + k)] : w[static_cast<size_t>(k * N + j)]);
      }
      ASSERT_NEAR(y[j], sum, 1e-3) << "trans_b " << trans_b << " shared " << shared << " column " << j;
    }
    if (shared) {
      const float* back = out[1].tensor().data<float>();
      for (size_t i = 0; i < w.size(); ++i) ASSERT_EQ(back[i], w[i]) << "W read by a second node changed at " << i;
    }
  }
  std::remove(path.c_str());
}

TEST(WeightRelease, GemmFromAFileComputesTheSame) {
  for (bool trans_b : {false, true})
    for (bool shared : {false, true}) check_gemm_from_file(trans_b, shared);
}

}  // namespace
}  // namespace onyx
