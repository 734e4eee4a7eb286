// A small complex DFT for the signal kernels (DFT, STFT): an iterative radix-2
// FFT when the length is a power of two, else the direct O(n^2) sum over a
// precomputed twiddle table. Computes in double; no normalisation.
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <utility>
#include <vector>

namespace onyx::cpu::signal {

class FftPlan {
 public:
  // inverse: e^{+2 pi i k n / N} instead of e^{-...}.
  FftPlan(int64_t n, bool inverse) : n_(n) {
    power_of_two_ = n > 0 && (n & (n - 1)) == 0;
    twiddle_.resize(static_cast<size_t>(n));
    const double sign = inverse ? 1.0 : -1.0;
    for (int64_t k = 0; k < n; ++k) {
      const double angle = sign * 2.0 * M_PI * static_cast<double>(k) / static_cast<double>(n);
      twiddle_[static_cast<size_t>(k)] = {std::cos(angle), std::sin(angle)};
    }
  }

  int64_t size() const { return n_; }

  // out[k] = sum_j in[j] * w^(j k); `in` and `out` hold n values and may not alias.
  void run(const std::complex<double>* in, std::complex<double>* out) const {
    const int64_t n = n_;
    if (n == 0) return;
    if (!power_of_two_) {
      for (int64_t k = 0; k < n; ++k) {
        std::complex<double> sum = 0.0;
        int64_t index = 0;  // (j * k) mod n, kept incrementally
        for (int64_t j = 0; j < n; ++j) {
          sum += in[j] * twiddle_[static_cast<size_t>(index)];
          index += k;
          if (index >= n) index -= n;
        }
        out[k] = sum;
      }
      return;
    }
    // Bit-reversed copy, then butterflies of growing span.
    int bits = 0;
    while ((int64_t{1} << bits) < n) ++bits;
    for (int64_t i = 0; i < n; ++i) {
      int64_t r = 0;
      for (int b = 0; b < bits; ++b) r |= ((i >> b) & 1) << (bits - 1 - b);
      out[r] = in[i];
    }
    for (int64_t span = 2; span <= n; span <<= 1) {
      const int64_t half = span / 2, step = n / span;
      for (int64_t start = 0; start < n; start += span) {
        for (int64_t j = 0; j < half; ++j) {
          const std::complex<double> t = twiddle_[static_cast<size_t>(j * step)] * out[start + j + half];
          out[start + j + half] = out[start + j] - t;
          out[start + j] += t;
        }
      }
    }
  }

 private:
  int64_t n_;
  bool power_of_two_ = false;
  std::vector<std::complex<double>> twiddle_;
};

}  // namespace onyx::cpu::signal
