// SGEMM throughput next to the machine's measured single-core FMA peak:
// square sizes 256..2048 and the GEMM shapes of BERT-base (M = 128 tokens),
// for every microkernel ISA this CPU runs, on one thread and on all cores.
// Build and run: see bench/README.md.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "common/thread_pool.h"
#include "providers/cpu/gemm/sgemm.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;

// The minimum over `reps` timed runs (after one warm-up): the machine may be
// shared, and the minimum is the run least disturbed by others.
double min_seconds(int reps, const std::function<void()>& fn) {
  fn();
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

// FMA throughput: independent accumulator chains (more than latency x pipes)
// so the FMA units, not the dependency chains, are the limit.
#if defined(__x86_64__)
__attribute__((target("avx512f"), noinline)) double fma_loop_avx512(int64_t iterations) {
  __m512 acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  __m512 s = acc[0];
  for (int i = 1; i < 16; ++i) s = _mm512_add_ps(s, acc[i]);
  float out[16];
  _mm512_storeu_ps(out, s);
  return static_cast<double>(out[0]);
}

__attribute__((target("avx2,fma"), noinline)) double fma_loop_avx2(int64_t iterations) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  __m256 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, acc[i]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return static_cast<double>(out[0]);
}
#endif

// GFLOP/s of the FMA loop of `isa` on this thread.
double fma_peak(onyx::cpu::SgemmIsa isa) {
#if defined(__x86_64__)
  const int64_t iterations = 2'000'000;
  volatile double sink = 0;
  if (isa == onyx::cpu::SgemmIsa::kAvx512) {
    const double s = min_seconds(40, [&] { sink = sink + fma_loop_avx512(iterations); });
    return 2.0 * 16 * 16 * static_cast<double>(iterations) / s * 1e-9;
  }
  if (isa == onyx::cpu::SgemmIsa::kAvx2) {
    const double s = min_seconds(40, [&] { sink = sink + fma_loop_avx2(iterations); });
    return 2.0 * 8 * 12 * static_cast<double>(iterations) / s * 1e-9;
  }
#endif
  (void)isa;
  return 0.0;
}

std::vector<float> random_matrix(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

int reps_for(double flops) { return flops > 4e9 ? 5 : flops > 5e8 ? 15 : 40; }

}  // namespace

int main(int argc, char** argv) {
  using onyx::cpu::SgemmIsa;
  bool quick = false;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
  const int cores = onyx::ThreadPool::default_thread_count();
  onyx::ThreadPool pool(cores);
  const auto isas = onyx::cpu::available_sgemm_isas();

  std::printf("single-core FMA peak (FMA loop, GFLOP/s):");
  double peak = 0;
  for (SgemmIsa isa : isas) {
    const double p = fma_peak(isa);
    if (p > 0) std::printf("  %s %.1f", onyx::cpu::sgemm_isa_name(isa), p);
    peak = std::max(peak, p);
  }
  std::printf("\nthreads for the multi-threaded column: %d\n\n", cores);

  struct Shape {
    const char* name;
    int64_t M, N, K;
  };
  std::vector<Shape> shapes;
  for (int64_t s : {256, 512, 1024, 2048}) shapes.push_back({"square", s, s, s});
  if (quick) shapes = {{"square", 1024, 1024, 1024}};
  shapes.push_back({"bert qkv/out", 128, 768, 768});
  shapes.push_back({"bert ffn up", 128, 3072, 768});
  shapes.push_back({"bert ffn down", 128, 768, 3072});
  shapes.push_back({"gemv", 1, 3072, 768});

  std::printf("%-14s %5s %5s %5s  %-9s %10s %7s %12s %10s\n", "shape", "M", "N", "K", "isa", "1 thread", "%peak",
              "1t packed-B", "all cores");
  for (const Shape& s : shapes) {
    const auto A = random_matrix(static_cast<size_t>(s.M * s.K), 1);
    const auto B = random_matrix(static_cast<size_t>(s.K * s.N), 2);
    std::vector<float> C(static_cast<size_t>(s.M * s.N));
    const double flops = 2.0 * static_cast<double>(s.M) * static_cast<double>(s.N) * static_cast<double>(s.K);
    const int reps = reps_for(flops);
    for (SgemmIsa isa : isas) {
      auto run = [&](onyx::ThreadPool* p) {
        onyx::cpu::sgemm(false, false, s.M, s.N, s.K, 1.0f, A.data(), s.K, B.data(), s.N, 0.0f, C.data(), s.N, p,
                         {}, isa);
      };
      const double one = flops / min_seconds(reps, [&] { run(nullptr); }) * 1e-9;
      const auto packed = onyx::cpu::pack_b(false, s.K, s.N, B.data(), s.N, isa);
      const double one_packed = flops / min_seconds(reps, [&] {
        onyx::cpu::sgemm_packed_b(false, s.M, 1.0f, A.data(), s.K, packed, 0.0f, C.data(), s.N, nullptr);
      }) * 1e-9;
      const double all = flops / min_seconds(reps, [&] { run(&pool); }) * 1e-9;
      std::printf("%-14s %5lld %5lld %5lld  %-9s %10.1f %6.0f%% %12.1f %10.1f\n", s.name, static_cast<long long>(s.M),
                  static_cast<long long>(s.N), static_cast<long long>(s.K), onyx::cpu::sgemm_isa_name(isa), one,
                  peak > 0 ? 100.0 * one / peak : 0.0, one_packed, all);
    }
  }
  return 0;
}
