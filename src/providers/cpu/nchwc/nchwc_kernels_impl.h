// The NCHWc inner loops, written once against a vector type and compiled
// per ISA: the including file defines ONYX_NCHWC_TARGET (a target attribute),
// ONYX_NCHWC_NS (the namespace of this instance) and struct Isa (vector type,
// block size B = lanes of one vector, tile limits, and the vector operations),
// then includes this file. Every function carries the target attribute, so a
// baseline x86-64 build holds the code and runs it only after cpuid says so.
//
// Direct convolution tile: P output pixels x F output blocks of accumulators
// (AVX-512: 6 x 4 = 24 zmm). Per tap and input lane: F weight vectors are
// loaded, each input scalar is broadcast once per pixel and multiplied into F
// accumulators, so one load serves P (weights) or F (inputs) FMAs.
#include <algorithm>
#include <cstdint>
#include <limits>

#include <immintrin.h>

#include "providers/cpu/nchwc/nchwc_kernels.h"

namespace onyx::cpu::nchwc::ONYX_NCHWC_NS {
namespace {

#define ONYX_NCHWC_INLINE ONYX_NCHWC_TARGET inline __attribute__((always_inline))

using V = Isa::V;
constexpr int kB = Isa::kB;
constexpr int kMaxP = Isa::kMaxP;
constexpr int kMaxF = Isa::kMaxF;
// Tiles of up to kWideF output blocks take up to kWideP pixels: P x F
// accumulators stay as many as a full tile has (a 6 x 1 tile had 6, too few
// to hide the FMA latency).
constexpr int kWideP = Isa::kWideP;
constexpr int kWideF = Isa::kWideF;
constexpr int kDepthwiseP = Isa::kDepthwiseP;

template <int kKind>
ONYX_NCHWC_INLINE V activate(V v, V alpha, V beta) {
  if constexpr (kKind == Activation::kRelu) {
    return Isa::max(v, Isa::zero());
  } else if constexpr (kKind == Activation::kLeakyRelu) {
    return Isa::leaky(v, alpha);
  } else if constexpr (kKind == Activation::kClip) {
    return Isa::min(Isa::max(v, alpha), beta);
  } else if constexpr (kKind == Activation::kHardSigmoid) {
    return Isa::min(Isa::max(Isa::fma(v, alpha, beta), Isa::zero()), Isa::set1(1.0f));
  } else {
    return v;
  }
}

// Output pixel p of a tile: q + p, or qs[p] when the tile's pixels are not
// consecutive (kScattered; see conv()).
template <bool kScattered>
ONYX_NCHWC_INLINE int64_t pixel_at(int64_t q, const int64_t* qs, int p) {
  if constexpr (kScattered) {
    return qs[p];
  } else {
    return q + p;
  }
}

// Finishes the P x F tile at pixels q.. (or qs) of blocks ob0..: bias, sum
// and the activation kKind, then stores it.
template <int P, int F, int kKind, bool kScattered>
ONYX_NCHWC_INLINE void finish_tile(V (&acc)[P][F], const ConvJob& job, int64_t ob0, int64_t q, const int64_t* qs) {
  const V alpha = Isa::set1(job.activation.alpha), beta = Isa::set1(job.activation.beta);
  const float* bias = job.bias;
  const float* sum = job.sum;
  float* y0 = job.y;
  const int64_t stride = job.y_block_stride;
#pragma GCC unroll 4
  for (int f = 0; f < F; ++f) {
    float* y = y0 + (ob0 + f) * stride;
    const V b = bias != nullptr ? Isa::load(bias + (ob0 + f) * kB) : Isa::zero();
    if (sum != nullptr) {
      const float* s = sum + (ob0 + f) * stride;
#pragma GCC unroll 12
      for (int p = 0; p < P; ++p) {
        const int64_t at = pixel_at<kScattered>(q, qs, p) * kB;
        Isa::store(y + at, activate<kKind>(Isa::add(Isa::add(acc[p][f], b), Isa::load(s + at)), alpha, beta));
      }
    } else {
#pragma GCC unroll 12
      for (int p = 0; p < P; ++p) {
        Isa::store(y + pixel_at<kScattered>(q, qs, p) * kB, activate<kKind>(Isa::add(acc[p][f], b), alpha, beta));
      }
    }
  }
}

template <int P, int F, bool kScattered>
ONYX_NCHWC_INLINE void write_back_at(V (&acc)[P][F], const ConvJob& job, int64_t ob0, int64_t q, const int64_t* qs,
                                     bool last) {
  if (!last) {
#pragma GCC unroll 4
    for (int f = 0; f < F; ++f) {
      float* y = job.y + (ob0 + f) * job.y_block_stride;
#pragma GCC unroll 12
      for (int p = 0; p < P; ++p) Isa::store(y + pixel_at<kScattered>(q, qs, p) * kB, acc[p][f]);
    }
    return;
  }
  switch (job.activation.kind) {
    case Activation::kRelu:
      return finish_tile<P, F, Activation::kRelu, kScattered>(acc, job, ob0, q, qs);
    case Activation::kLeakyRelu:
      return finish_tile<P, F, Activation::kLeakyRelu, kScattered>(acc, job, ob0, q, qs);
    case Activation::kClip:
      return finish_tile<P, F, Activation::kClip, kScattered>(acc, job, ob0, q, qs);
    case Activation::kHardSigmoid:
      return finish_tile<P, F, Activation::kHardSigmoid, kScattered>(acc, job, ob0, q, qs);
    default:
      return finish_tile<P, F, Activation::kNone, kScattered>(acc, job, ob0, q, qs);
  }
}

// Stores the P x F tile at pixels q.. (qs null) or qs[0..P) of blocks
// ob0.. ; `last` finishes it (the activation chosen once per tile, not per
// vector).
template <int P, int F>
ONYX_NCHWC_INLINE void write_back(V (&acc)[P][F], const ConvJob& job, int64_t ob0, int64_t q, const int64_t* qs,
                                  bool last) {
  if (qs != nullptr) {
    write_back_at<P, F, true>(acc, job, ob0, q, qs, last);
  } else {
    write_back_at<P, F, false>(acc, job, ob0, q, qs, last);
  }
}

// One tap: for each input lane, F weight vectors times each pixel's input.
template <int P, int F, int L>
ONYX_NCHWC_INLINE void tap_step(V (&acc)[P][F], const float* const (&x)[P], int64_t o, const float* w) {
#pragma GCC unroll 16
  for (int l = 0; l < L; ++l) {
    V wv[F];
#pragma GCC unroll 4
    for (int f = 0; f < F; ++f) wv[f] = Isa::load(w + (l * F + f) * kB);
#pragma GCC unroll 12
    for (int p = 0; p < P; ++p) Isa::template broadcast_fma<F>(acc[p], wv, x[p] + o + l);
  }
}

// Taps [t0, t1) of the packed weight group `w` (already at tap t0) into the
// tile; xs[p] is pixel p's input origin.
template <int P, int F, int L>
ONYX_NCHWC_TARGET void conv_tile(const ConvJob& job, const float* const* xs, const float* w, int64_t t0, int64_t t1,
                                 int64_t ob0, int64_t q, const int64_t* qs, bool first, bool last, const char* next_w,
                                 int64_t next_lines_per_tap) {
  V acc[P][F];
  if (first) {
#pragma GCC unroll 12
    for (int p = 0; p < P; ++p)
#pragma GCC unroll 4
      for (int f = 0; f < F; ++f) acc[p][f] = Isa::zero();
  } else {
#pragma GCC unroll 12
    for (int p = 0; p < P; ++p)
#pragma GCC unroll 4
      for (int f = 0; f < F; ++f) {
        acc[p][f] = Isa::load(job.y + (ob0 + f) * job.y_block_stride + (qs != nullptr ? qs[p] : q + p) * kB);
      }
  }
  const float* x[P];
#pragma GCC unroll 12
  for (int p = 0; p < P; ++p) x[p] = xs[p];
  // The next tile's input (the next P pixels of the same row) is fetched one
  // tap ahead of use: with one stream per input block the hardware prefetcher
  // alone falls behind on inputs that live in L3.
  const int64_t ahead = P * job.x_pixel_step;
  const int64_t* taps = job.taps;
  if constexpr (L == kB) {
    if (job.tap_ids != nullptr) {
      // A window the input's edge clips: the listed taps only (see ConvJob).
      for (int64_t i = 0; i < job.tap_id_count; ++i) {
        const int64_t t = job.tap_ids[i];
        tap_step<P, F, L>(acc, x, taps[t], w + (t - t0) * L * F * kB);
      }
      write_back<P, F>(acc, job, ob0, q, qs, last);
      return;
    }
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = taps[t];
      for (int64_t i = 0; i < next_lines_per_tap; ++i) __builtin_prefetch(next_w + i * 64, 0, 2);
      next_w += next_lines_per_tap * 64;
#pragma GCC unroll 12
      for (int p = 0; p < P; ++p) __builtin_prefetch(x[p] + o + ahead, 0, 3);
      tap_step<P, F, L>(acc, x, o, w);
      w += L * F * kB;
    }
  } else {
    // One FMA row per tap (NCHW input): taps four at a time; the input rows
    // are reused across taps and tiles, so they need no prefetch.
    int64_t t = t0;
    for (; t + 4 <= t1; t += 4) {
      for (int64_t i = 0; i < 4 * next_lines_per_tap; ++i) __builtin_prefetch(next_w + i * 64, 0, 2);
      next_w += 4 * next_lines_per_tap * 64;
      tap_step<P, F, L>(acc, x, taps[t], w);
      tap_step<P, F, L>(acc, x, taps[t + 1], w + L * F * kB);
      tap_step<P, F, L>(acc, x, taps[t + 2], w + 2 * L * F * kB);
      tap_step<P, F, L>(acc, x, taps[t + 3], w + 3 * L * F * kB);
      w += 4 * L * F * kB;
    }
    for (; t < t1; ++t) {
      tap_step<P, F, L>(acc, x, taps[t], w);
      w += L * F * kB;
    }
  }
  write_back<P, F>(acc, job, ob0, q, qs, last);
}

using TileFn = void (*)(const ConvJob&, const float* const*, const float*, int64_t, int64_t, int64_t, int64_t,
                        const int64_t*, bool,
                        bool, const char*, int64_t);

template <int L, int P, int... Fs>
constexpr void fill_row(TileFn* row, std::integer_sequence<int, Fs...>) {
  ((row[Fs] = &conv_tile<P, Fs + 1, L>), ...);
}
template <int L, int F, int... Ps>
constexpr void fill_table(TileFn (*table)[F], std::integer_sequence<int, Ps...>) {
  ((fill_row<L, Ps + 1>(table[Ps], std::make_integer_sequence<int, F>{})), ...);
}

// fn[P - 1][F - 1] for P <= MaxP, F <= MaxF.
template <int L, int MaxP, int MaxF>
struct TileTable {
  TileFn fn[MaxP][MaxF];
  constexpr TileTable() : fn{} { fill_table<L, MaxF>(fn, std::make_integer_sequence<int, MaxP>{}); }
};
constexpr TileTable<kB, kMaxP, kMaxF> kBlockedTiles{};
constexpr TileTable<1, kMaxP, kMaxF> kNchwTiles{};
constexpr TileTable<kB, kWideP, kWideF> kBlockedWideTiles{};
constexpr TileTable<1, kWideP, kWideF> kNchwWideTiles{};

ONYX_NCHWC_TARGET void conv(const ConvJob& job, int64_t ob0, int64_t nob, int64_t q0, int64_t q1, int64_t t0,
                            int64_t t1, bool first, bool last) {
  const int64_t lanes = job.lanes;
  const float* w = job.w + ob0 * job.tap_count * lanes * kB + t0 * lanes * nob * kB;
  const bool blocked = lanes == kB, wide = nob <= kWideF;
  const int64_t max_p = wide ? kWideP : kMaxP;
  const int64_t out_w = job.out_w;
  int64_t oh = q0 / out_w, ow = q0 % out_w;
  const float* xs[kWideP > kMaxP ? kWideP : kMaxP];
  int64_t qs[kWideP > kMaxP ? kWideP : kMaxP];
  // Weights are used in the order they are stored: while this chunk's tiles
  // run, the next chunk's weights (as many bytes) are fetched into L2, a few
  // lines per tap, so the next chunk does not wait on memory.
  const int64_t chunk_floats = (t1 - t0) * lanes * nob * kB;
  const char* next = reinterpret_cast<const char*>(w + chunk_floats);
  // The call's pixels: q0, q0 + step, ... below q1 (step 1: along rows;
  // out_w: down a column), or with job.interior_only those of [q0, q1) in
  // the interior rectangle.
  const int64_t step = job.pixel_stride;
  const bool interior = job.interior_only;
  auto inside = [&](int64_t r, int64_t c) {
    return r >= job.row_lo && r < job.row_hi && c >= job.col_lo && c < job.col_hi;
  };
  int64_t count = 0;
  if (interior) {
    for (int64_t r = q0 / out_w; r <= (q1 - 1) / out_w; ++r) {
      if (r < job.row_lo || r >= job.row_hi) continue;
      const int64_t a = std::max(q0, r * out_w + job.col_lo), b = std::min(q1, r * out_w + job.col_hi);
      count += std::max<int64_t>(0, b - a);
    }
    if (count == 0) return;
    while (!inside(oh, ow)) {
      if (++ow == out_w) ow = 0, ++oh;
    }
  } else {
    count = (q1 - q0 + step - 1) / step;
  }
  const int64_t tiles = (count + max_p - 1) / max_p;
  const bool has_next = job.prefetch_weights && w + chunk_floats < job.w + job.weight_count;
  const int64_t lines_per_tile = has_next ? (chunk_floats / 16 + tiles - 1) / tiles : 0;
  const int64_t lines_per_tap = (lines_per_tile + (t1 - t0) - 1) / (t1 - t0);
  // Equal tiles (sizes differing by at most one): a one-pixel tile reads as
  // many weights as a full one for a fraction of the FMAs, and its few
  // accumulators leave the FMA latency exposed.
  const int64_t small = count / tiles, large_count = count % tiles;
  const bool plain = !interior && step == 1;  // consecutive pixels from q0
  for (int64_t tile = 0; tile < tiles; ++tile) {
    const int64_t n = small + (tile < large_count ? 1 : 0);
    const int64_t q = oh * out_w + ow;
    for (int64_t i = 0; i < n; ++i) {
      xs[i] = job.x + oh * job.x_row_step + ow * job.x_pixel_step;
      if (plain) {
        if (++ow == out_w) ow = 0, ++oh;
        continue;
      }
      qs[i] = oh * out_w + ow;
      if (step != 1) {
        ++oh;
        continue;
      }
      do {
        if (++ow == out_w) ow = 0, ++oh;
      } while (interior && oh < job.row_hi && !inside(oh, ow));
    }
    // Tiles of consecutive pixels store at q + p; the others through qs.
    const int64_t* scattered = plain || qs[n - 1] - qs[0] == n - 1 ? nullptr : qs;
    TileFn fn;
    if (wide) {
      fn = blocked ? kBlockedWideTiles.fn[n - 1][nob - 1] : kNchwWideTiles.fn[n - 1][nob - 1];
    } else {
      fn = blocked ? kBlockedTiles.fn[n - 1][nob - 1] : kNchwTiles.fn[n - 1][nob - 1];
    }
    fn(job, xs, w, t0, t1, ob0, q, scattered, first, last, next, lines_per_tap);
    next += lines_per_tap * (t1 - t0) * 64;
  }
}

// Depthwise output pixels [ow0, ow0 + N) of row oh over window taps
// [kh0, kh1) x [kw0, kw1), all inside the input: N accumulators, one weight
// vector per tap.
template <int N>
ONYX_NCHWC_INLINE void depthwise_span(const ConvJob& j, const float* x, const float* w, int64_t ob, int64_t oh,
                                      int64_t ow0, int64_t kh0, int64_t kh1, int64_t kw0, int64_t kw1) {
  const int64_t origin = oh * j.x_row_step + ow0 * j.x_pixel_step - (j.pad_top * j.in_w + j.pad_left) * kB;
  const int64_t step = j.x_pixel_step;
  V acc[N][1];
#pragma GCC unroll 8
  for (int n = 0; n < N; ++n) acc[n][0] = Isa::zero();
  for (int64_t kh = kh0; kh < kh1; ++kh) {
    for (int64_t t = kh * j.kernel_w + kw0, t1 = kh * j.kernel_w + kw1; t < t1; ++t) {
      const float* p = x + (origin + j.taps[t]);
      const V wv = Isa::load(w + t * kB);
#pragma GCC unroll 8
      for (int n = 0; n < N; ++n) acc[n][0] = Isa::fma(Isa::load(p + n * step), wv, acc[n][0]);
    }
  }
  write_back<N, 1>(acc, j, ob, oh * j.out_w + ow0, nullptr, true);
}

// depthwise_span for the common windows: KW taps per row, no dilation along
// the width and stride S, all known at compile time, so every load is the
// row's base plus a constant (the general span steps through its pixels one
// add at a time). The rows of stride-1 3x3 windows go two at a time instead
// (depthwise_pair3x3).
// Taps kw in [KW0, KW1) of each window row (a border pixel of a padded row
// skips the taps that fall in the padding); by default all of them.
template <int N, int S, int KW, int KW0 = 0, int KW1 = KW>
ONYX_NCHWC_INLINE void depthwise_span_fixed(const ConvJob& j, const float* x, const float* w, int64_t ob, int64_t oh,
                                            int64_t ow0, int64_t kh0, int64_t kh1) {
  const float* base = x + oh * j.x_row_step + ow0 * S * kB - (j.pad_top * j.in_w + j.pad_left) * kB;
  V acc[N][1];
#pragma GCC unroll 8
  for (int n = 0; n < N; ++n) acc[n][0] = Isa::zero();
  for (int64_t kh = kh0; kh < kh1; ++kh) {
    const float* p = base + j.taps[kh * KW];  // tap (kh, kw) is kw blocks further on
    const float* wk = w + kh * KW * kB;
#pragma GCC unroll 8
    for (int kw = KW0; kw < KW1; ++kw) {
      const V wv = Isa::load(wk + kw * kB);
#pragma GCC unroll 8
      for (int n = 0; n < N; ++n) acc[n][0] = Isa::fma(Isa::load(p + (n * S + kw) * kB), wv, acc[n][0]);
    }
  }
  write_back<N, 1>(acc, j, ob, oh * j.out_w + ow0, nullptr, true);
}

// One span of N interior pixels: the fixed-window form, or with S == 0 the
// general one.
template <int S, int KW, int N>
ONYX_NCHWC_INLINE void depthwise_span_of(const ConvJob& j, const float* x, const float* w, int64_t ob, int64_t oh,
                                         int64_t ow, int64_t kh0, int64_t kh1) {
  if constexpr (S == 0) {
    depthwise_span<N>(j, x, w, ob, oh, ow, kh0, kh1, 0, j.kernel_w);
  } else {
    depthwise_span_fixed<N, S, KW>(j, x, w, ob, oh, ow, kh0, kh1);
  }
}

// The pixels [ow, hi) of row oh whose windows lie inside the input's width,
// in spans of up to kDepthwiseP.
template <int S, int KW>
ONYX_NCHWC_INLINE void depthwise_interior(const ConvJob& j, const float* x, const float* w, int64_t ob, int64_t oh,
                                          int64_t ow, int64_t hi, int64_t kh0, int64_t kh1) {
  for (; ow + kDepthwiseP <= hi; ow += kDepthwiseP) {
    depthwise_span_of<S, KW, kDepthwiseP>(j, x, w, ob, oh, ow, kh0, kh1);
  }
  if (ow + 4 <= hi) {
    depthwise_span_of<S, KW, 4>(j, x, w, ob, oh, ow, kh0, kh1);
    ow += 4;
  }
  if (ow + 2 <= hi) {
    depthwise_span_of<S, KW, 2>(j, x, w, ob, oh, ow, kh0, kh1);
    ow += 2;
  }
  if (ow < hi) depthwise_span_of<S, KW, 1>(j, x, w, ob, oh, ow, kh0, kh1);
}

// Output rows oh and oh + 1 of a 3x3 undilated depthwise window at stride S
// (1 or 2), pixels [ow0, ow0 + N), both rows' windows inside the input's
// height: the two rows share 3 - S of their S + 3 input rows, each input
// vector is loaded once for the taps that read it, and the nine weights stay
// in registers (9 + 2 x 8 accumulators: 32 vector registers). kSkipLeft: the
// first pixel's window starts one column left of the input, kSkipRight: the
// last pixel's ends one column right of it; their taps there are dropped, so
// the border pixels of a padded row run with the others. Every accumulator
// sums its taps in the same order as depthwise_span.
template <int S, int N, bool kSkipLeft, bool kSkipRight>
ONYX_NCHWC_INLINE void depthwise_pair3x3(const ConvJob& j, const float* x, const V (&wv)[9], int64_t ob, int64_t oh,
                                         int64_t ow0) {
  constexpr int kRows = S + 3;
  constexpr int kCols = S * (N - 1) + 3;
  const float* base = x + oh * j.x_row_step + ow0 * S * kB - (j.pad_top * j.in_w + j.pad_left) * kB;
  const int64_t row = j.in_w * kB;
  V top[N][1], bottom[N][1];
#pragma GCC unroll 8
  for (int n = 0; n < N; ++n) top[n][0] = bottom[n][0] = Isa::zero();
#pragma GCC unroll 5
  for (int r = 0; r < kRows; ++r) {
    const float* p = base + r * row;
#pragma GCC unroll 17
    for (int m = kSkipLeft ? 1 : 0; m < (kSkipRight ? kCols - 1 : kCols); ++m) {
      const V v = Isa::load(p + m * kB);
#pragma GCC unroll 3
      for (int kw = 0; kw < 3; ++kw) {
        // Pixel n reads column S * n + kw.
        if (m < kw || (m - kw) % S != 0 || (m - kw) / S >= N) continue;
        const int n = (m - kw) / S;
        if (r < 3) top[n][0] = Isa::fma(v, wv[r * 3 + kw], top[n][0]);
        if (r >= S) bottom[n][0] = Isa::fma(v, wv[(r - S) * 3 + kw], bottom[n][0]);
      }
    }
  }
  write_back<N, 1>(top, j, ob, oh * j.out_w + ow0, nullptr, true);
  write_back<N, 1>(bottom, j, ob, (oh + 1) * j.out_w + ow0, nullptr, true);
}

// depthwise_pair3x3 over n (1 to N) pixels: one span, so a short one keeps n
// independent accumulator chains per row.
template <int S, bool kSkipLeft, bool kSkipRight, int N = 8>
ONYX_NCHWC_INLINE void depthwise_pair3x3_n(const ConvJob& j, const float* x, const V (&wv)[9], int64_t ob, int64_t oh,
                                           int64_t ow0, int64_t n) {
  if constexpr (N > 1) {
    if (n < N) return depthwise_pair3x3_n<S, kSkipLeft, kSkipRight, N - 1>(j, x, wv, ob, oh, ow0, n);
  }
  depthwise_pair3x3<S, N, kSkipLeft, kSkipRight>(j, x, wv, ob, oh, ow0);
}

// Rows oh and oh + 1, columns [begin, end) in spans of at most 8 pixels, as
// equal as can be (a row of 28 is four spans of 7, not three of 8 and a
// latency-bound 4); the first span takes the left border pixel (skip_left),
// the last the right one (skip_right).
template <int S>
ONYX_NCHWC_INLINE void depthwise_pair_row(const ConvJob& j, const float* x, const float* w, int64_t ob, int64_t oh,
                                          int64_t begin, int64_t end, bool skip_left, bool skip_right) {
  V wv[9];
#pragma GCC unroll 9
  for (int t = 0; t < 9; ++t) wv[t] = Isa::load(w + t * kB);
  const int64_t width = end - begin, spans = (width + 7) / 8;
  for (int64_t s = 0; s < spans; ++s) {
    const int64_t ow = begin + width * s / spans, n = begin + width * (s + 1) / spans - ow;
    const bool left = skip_left && s == 0, right = skip_right && s == spans - 1;
    if (left && right) {
      depthwise_pair3x3_n<S, true, true>(j, x, wv, ob, oh, ow, n);
    } else if (left) {
      depthwise_pair3x3_n<S, true, false>(j, x, wv, ob, oh, ow, n);
    } else if (right) {
      depthwise_pair3x3_n<S, false, true>(j, x, wv, ob, oh, ow, n);
    } else {
      depthwise_pair3x3_n<S, false, false>(j, x, wv, ob, oh, ow, n);
    }
  }
}

// Row oh's pixels in [ow_begin, ow_end) outside [in_lo, in_hi), whose
// windows leave the input's width: one at a time, over their clipped windows.
ONYX_NCHWC_INLINE void depthwise_borders(const ConvJob& j, const float* x, const float* w, int64_t ob, int64_t oh,
                                         int64_t ow_begin, int64_t ow_end, int64_t in_lo, int64_t in_hi, int64_t kh0,
                                         int64_t kh1) {
  // 3-wide windows at stride 1 padded by one column on each side (MobileNet's
  // 7x7 planes have two border pixels in every row of seven): the first and
  // last pixel of a row drop one known tap.
  const bool same3 = j.kernel_w == 3 && j.stride_w == 1 && j.dilation_w == 1 && j.pad_left == 1 &&
                     j.out_w == j.in_w && j.in_w >= 2;
  for (int64_t ow = ow_begin; ow < ow_end; ++ow) {
    if (ow == in_lo) ow = in_hi;
    if (ow == ow_end) break;
    if (same3 && ow == 0) {
      depthwise_span_fixed<1, 1, 3, 1, 3>(j, x, w, ob, oh, ow, kh0, kh1);
      continue;
    }
    if (same3 && ow == j.out_w - 1) {
      depthwise_span_fixed<1, 1, 3, 0, 2>(j, x, w, ob, oh, ow, kh0, kh1);
      continue;
    }
    int64_t kw0, kw1;
    window_range(ow * j.stride_w - j.pad_left, j.dilation_w, j.kernel_w, j.in_w, kw0, kw1);
    depthwise_span<1>(j, x, w, ob, oh, ow, kh0, kh1, kw0, kw1);
  }
}

// Output block ob for pixels [q0, q1): in each row, the pixels whose windows
// lie inside the input's width in groups of up to kDepthwiseP, the border
// pixels one at a time over their clipped windows; 3x3 windows at stride 1
// or 2 two rows at a time where both rows' windows are inside the input's
// height.
ONYX_NCHWC_TARGET void depthwise(const ConvJob& j, int64_t ob, int64_t q0, int64_t q1) {
  const float* w = j.w + ob * j.tap_count * kB;
  const float* x = j.x + ob * j.x_block_stride;
  const int64_t span_w = (j.kernel_w - 1) * j.dilation_w;
  int64_t lo = (j.pad_left + j.stride_w - 1) / j.stride_w, hi = 0;
  if (j.in_w - 1 - span_w + j.pad_left >= 0) hi = (j.in_w - 1 - span_w + j.pad_left) / j.stride_w + 1;
  hi = std::min(hi, j.out_w);
  lo = std::min(lo, hi);
  const bool fixed3 = j.kernel_w == 3 && j.dilation_w == 1 && (j.stride_w == 1 || j.stride_w == 2);
  // Two rows at once needs 32 vector registers (AVX-512).
  const bool pairs = kB == 16 && fixed3 && j.kernel_h == 3 && j.stride_h == j.stride_w && j.dilation_h == 1;
  // The pair spans take a border pixel whose window leaves the input's width
  // by one column: pixel 0 with one column of left padding, pixel hi if its
  // window ends one column past the input.
  const bool skip_left = j.pad_left == 1 && lo == 1;
  const int64_t hi_start = hi * j.stride_w - j.pad_left;  // pixel hi's window: columns hi_start .. hi_start + 2
  const bool skip_right = hi < j.out_w && hi_start >= 0 && hi_start + 2 == j.in_w;
  const int64_t pair_begin = skip_left ? 0 : lo, pair_end = skip_right ? hi + 1 : hi;
  for (int64_t q = q0; q < q1;) {
    const int64_t oh = q / j.out_w, ow_begin = q % j.out_w, ow_end = std::min(j.out_w, ow_begin + (q1 - q));
    int64_t kh0, kh1;
    window_range(oh * j.stride_h - j.pad_top, j.dilation_h, j.kernel_h, j.in_h, kh0, kh1);
    const int64_t in_lo = std::clamp(lo, ow_begin, ow_end), in_hi = std::clamp(hi, in_lo, ow_end);
    if (pairs && ow_begin == 0 && q + 2 * j.out_w <= q1 && kh0 == 0 && kh1 == 3 &&
        (oh + 1) * j.stride_h - j.pad_top + 3 <= j.in_h) {
      // Rows oh and oh + 1 whole and inside the input's height.
      depthwise_borders(j, x, w, ob, oh, 0, j.out_w, pair_begin, pair_end, 0, 3);
      depthwise_borders(j, x, w, ob, oh + 1, 0, j.out_w, pair_begin, pair_end, 0, 3);
      if (j.stride_w == 1) {
        depthwise_pair_row<1>(j, x, w, ob, oh, pair_begin, pair_end, skip_left, skip_right);
      } else {
        depthwise_pair_row<2>(j, x, w, ob, oh, pair_begin, pair_end, skip_left, skip_right);
      }
      q += 2 * j.out_w;
      continue;
    }
    q += ow_end - ow_begin;
    depthwise_borders(j, x, w, ob, oh, ow_begin, ow_end, in_lo, in_hi, kh0, kh1);
    if (fixed3 && j.stride_w == 1) {
      depthwise_interior<1, 3>(j, x, w, ob, oh, in_lo, in_hi, kh0, kh1);
    } else if (fixed3) {
      depthwise_interior<2, 3>(j, x, w, ob, oh, in_lo, in_hi, kh0, kh1);
    } else {
      depthwise_interior<0, 0>(j, x, w, ob, oh, in_lo, in_hi, kh0, kh1);
    }
  }
}

template <bool kIsMax>
ONYX_NCHWC_INLINE V pool_combine(V a, V b) {
  if constexpr (kIsMax) {
    return Isa::max(a, b);
  } else {
    return Isa::add(a, b);
  }
}

// Output pixels [ow0, ow0 + N) of row oh over window taps [kh0, kh1) x
// [kw0, kw1), all inside the input (not empty): one vector op per tap and
// pixel, N independent chains; averages are scaled by `scale`.
template <bool kIsMax, int N>
ONYX_NCHWC_INLINE void pool_span(const PoolJob& j, const float* x, float* y, int64_t oh, int64_t ow0, int64_t kh0,
                                 int64_t kh1, int64_t kw0, int64_t kw1, V scale) {
  const int64_t pixel = j.stride_w * kB, tap_w = j.dilation_w * kB, tap_h = j.dilation_h * j.in_w * kB;
  const float* base =
      x + ((oh * j.stride_h - j.pad_top) * j.in_w + ow0 * j.stride_w - j.pad_left) * kB + kh0 * tap_h + kw0 * tap_w;
  const int64_t taps_w = kw1 - kw0;
  V acc[N];
#pragma GCC unroll 8
  for (int n = 0; n < N; ++n) acc[n] = Isa::load(base + n * pixel);
  for (int64_t kh = kh0; kh < kh1; ++kh, base += tap_h) {
    for (int64_t kw = kh == kh0 ? 1 : 0; kw < taps_w; ++kw) {
#pragma GCC unroll 8
      for (int n = 0; n < N; ++n) acc[n] = pool_combine<kIsMax>(acc[n], Isa::load(base + kw * tap_w + n * pixel));
    }
  }
  float* out = y + (oh * j.out_w + ow0) * kB;
#pragma GCC unroll 8
  for (int n = 0; n < N; ++n) Isa::store(out + n * kB, kIsMax ? acc[n] : Isa::mul(acc[n], scale));
}

// pool_span for the common windows (KW taps per row, no dilation along the
// width, stride S): each input vector of a row is loaded once for every tap
// that reads it, at constant offsets (the general span steps through its
// pixels one add at a time). Taps combine in the same order as in
// pool_span, so the results are the same.
// Taps kw in [KW0, KW1) of each window row: all of them, or a border
// pixel's that lie inside the input.
template <bool kIsMax, int N, int S, int KW, int KW0 = 0, int KW1 = KW>
ONYX_NCHWC_INLINE void pool_span_fixed(const PoolJob& j, const float* x, float* y, int64_t oh, int64_t ow0,
                                       int64_t kh0, int64_t kh1, V scale) {
  const int64_t tap_h = j.dilation_h * j.in_w * kB;
  const float* base = x + ((oh * j.stride_h - j.pad_top) * j.in_w + ow0 * S - j.pad_left) * kB + kh0 * tap_h;
  V acc[N];
#pragma GCC unroll 8
  for (int n = 0; n < N; ++n) acc[n] = Isa::load(base + (n * S + KW0) * kB);
  for (int64_t kh = kh0; kh < kh1; ++kh, base += tap_h) {
#pragma GCC unroll 32
    for (int m = KW0; m < (N - 1) * S + KW1; ++m) {
      const V v = Isa::load(base + m * kB);
#pragma GCC unroll 4
      for (int kw = KW0; kw < KW1; ++kw) {
        if ((m - kw) % S != 0) continue;
        const int n = (m - kw) / S;
        if (n < 0 || n >= N || (kh == kh0 && kw == KW0)) continue;
        acc[n] = pool_combine<kIsMax>(acc[n], v);
      }
    }
  }
  float* out = y + (oh * j.out_w + ow0) * kB;
#pragma GCC unroll 8
  for (int n = 0; n < N; ++n) Isa::store(out + n * kB, kIsMax ? acc[n] : Isa::mul(acc[n], scale));
}

// The interior pixels [ow, hi) of row oh in spans of 8, 4, 2, 1: the
// fixed-window span when S > 0, else the general one.
template <bool kIsMax, int S, int KW, int N>
ONYX_NCHWC_INLINE void pool_span_of(const PoolJob& j, const float* x, float* y, int64_t oh, int64_t ow, int64_t kh0,
                                    int64_t kh1, V scale) {
  if constexpr (S == 0) {
    pool_span<kIsMax, N>(j, x, y, oh, ow, kh0, kh1, 0, j.kernel_w, scale);
  } else {
    pool_span_fixed<kIsMax, N, S, KW>(j, x, y, oh, ow, kh0, kh1, scale);
  }
}
template <bool kIsMax, int S, int KW>
ONYX_NCHWC_INLINE void pool_interior(const PoolJob& j, const float* x, float* y, int64_t oh, int64_t ow, int64_t hi,
                                     int64_t kh0, int64_t kh1, V scale) {
  for (; ow + 8 <= hi; ow += 8) pool_span_of<kIsMax, S, KW, 8>(j, x, y, oh, ow, kh0, kh1, scale);
  if (ow + 4 <= hi) {
    pool_span_of<kIsMax, S, KW, 4>(j, x, y, oh, ow, kh0, kh1, scale);
    ow += 4;
  }
  if (ow + 2 <= hi) {
    pool_span_of<kIsMax, S, KW, 2>(j, x, y, oh, ow, kh0, kh1, scale);
    ow += 2;
  }
  if (ow < hi) pool_span_of<kIsMax, S, KW, 1>(j, x, y, oh, ow, kh0, kh1, scale);
}

// Output pixel (oh, ow) with its window clipped to the input (borders), over
// window rows [kh0, kh1) (clipped already; kh_pad1 ends the padded window).
template <bool kIsMax>
ONYX_NCHWC_TARGET void pool_edge(const PoolJob& j, const float* x, float* y, int64_t oh, int64_t ow, int64_t kh0,
                                 int64_t kh1, int64_t kh_pad1) {
  const int64_t iw0 = ow * j.stride_w - j.pad_left;
  int64_t kw0, kw1, kw_pad0, kw_pad1;
  window_range(iw0, j.dilation_w, j.kernel_w, j.in_w, kw0, kw1);
  const int64_t valid = (kh1 - kh0) * (kw1 - kw0);
  int64_t count = valid;
  if (!kIsMax && j.count_include_pad) {
    // Padding taps count from the window's start (always inside the begin
    // padding) to the end padding's edge.
    window_range(iw0, j.dilation_w, j.kernel_w, j.in_w + j.pad_right, kw_pad0, kw_pad1);
    count = kh_pad1 * kw_pad1;
  }
  if (valid == 0 || count <= 0) {
    Isa::store(y + (oh * j.out_w + ow) * kB, Isa::zero());
    return;
  }
  const V scale = Isa::set1(1.0f / static_cast<float>(count));
  // A 3-wide stride-1 window padded by one column: the first and last pixel
  // of a row drop one known tap.
  if (j.kernel_w == 3 && j.stride_w == 1 && j.dilation_w == 1 && j.pad_left == 1 && j.in_w >= 2) {
    if (kw0 == 1 && kw1 == 3) return pool_span_fixed<kIsMax, 1, 1, 3, 1, 3>(j, x, y, oh, ow, kh0, kh1, scale);
    if (kw0 == 0 && kw1 == 2) return pool_span_fixed<kIsMax, 1, 1, 3, 0, 2>(j, x, y, oh, ow, kh0, kh1, scale);
  }
  pool_span<kIsMax, 1>(j, x, y, oh, ow, kh0, kh1, kw0, kw1, scale);
}

template <bool kIsMax>
ONYX_NCHWC_TARGET void pool_rows(const PoolJob& j, int64_t r0, int64_t r1) {
  // Output columns [lo, hi) have windows inside the input's width.
  const int64_t span_w = (j.kernel_w - 1) * j.dilation_w;
  int64_t lo = (j.pad_left + j.stride_w - 1) / j.stride_w, hi = 0;
  if (j.in_w - 1 - span_w + j.pad_left >= 0) hi = (j.in_w - 1 - span_w + j.pad_left) / j.stride_w + 1;
  hi = std::min(hi, j.out_w);
  lo = std::min(lo, hi);
  int64_t plane = r0 / j.out_h, oh = r0 % j.out_h - 1;
  for (int64_t r = r0; r < r1; ++r) {
    if (++oh == j.out_h) oh = 0, ++plane;
    const float* x = j.x + plane * j.in_h * j.in_w * kB;
    float* y = j.y + plane * j.out_h * j.out_w * kB;
    const int64_t ih0 = oh * j.stride_h - j.pad_top;
    int64_t kh0, kh1, kh_pad0, kh_pad1;
    window_range(ih0, j.dilation_h, j.kernel_h, j.in_h, kh0, kh1);
    window_range(ih0, j.dilation_h, j.kernel_h, j.in_h + j.pad_bottom, kh_pad0, kh_pad1);
    // Windows inside the width count kernel_w taps per row: the rows inside
    // the height, or with count_include_pad those up to the end padding.
    const int64_t count = (j.count_include_pad ? kh_pad1 : kh1 - kh0) * j.kernel_w;
    if (kh1 <= kh0 || count <= 0) {
      for (int64_t ow = 0; ow < j.out_w; ++ow) Isa::store(y + (oh * j.out_w + ow) * kB, Isa::zero());
      continue;
    }
    const V scale = Isa::set1(1.0f / static_cast<float>(count));
    for (int64_t ow = 0; ow < lo; ++ow) pool_edge<kIsMax>(j, x, y, oh, ow, kh0, kh1, kh_pad1);
    if (j.dilation_w == 1 && j.kernel_w == 3 && j.stride_w == 1) {
      pool_interior<kIsMax, 1, 3>(j, x, y, oh, lo, hi, kh0, kh1, scale);
    } else if (j.dilation_w == 1 && j.kernel_w == 3 && j.stride_w == 2) {
      pool_interior<kIsMax, 2, 3>(j, x, y, oh, lo, hi, kh0, kh1, scale);
    } else if (j.dilation_w == 1 && j.kernel_w == 2 && j.stride_w == 2) {
      pool_interior<kIsMax, 2, 2>(j, x, y, oh, lo, hi, kh0, kh1, scale);
    } else {
      pool_interior<kIsMax, 0, 0>(j, x, y, oh, lo, hi, kh0, kh1, scale);
    }
    for (int64_t ow = hi; ow < j.out_w; ++ow) pool_edge<kIsMax>(j, x, y, oh, ow, kh0, kh1, kh_pad1);
  }
}

ONYX_NCHWC_TARGET void pool(const PoolJob& j, int64_t r0, int64_t r1) {
  if (j.is_max) {
    pool_rows<true>(j, r0, r1);
  } else {
    pool_rows<false>(j, r0, r1);
  }
}

ONYX_NCHWC_TARGET void global_pool(const float* x, float* y, int64_t hw, bool is_max, int64_t p0, int64_t p1) {
  for (int64_t plane = p0; plane < p1; ++plane) {
    const float* xp = x + plane * hw * kB;
    V a0, a1, a2, a3;
    if (is_max) {
      a0 = a1 = a2 = a3 = Isa::set1(-std::numeric_limits<float>::infinity());
    } else {
      a0 = a1 = a2 = a3 = Isa::zero();
    }
    int64_t i = 0;
    for (; i + 4 <= hw; i += 4) {
      const V v0 = Isa::load(xp + i * kB), v1 = Isa::load(xp + (i + 1) * kB);
      const V v2 = Isa::load(xp + (i + 2) * kB), v3 = Isa::load(xp + (i + 3) * kB);
      if (is_max) {
        a0 = Isa::max(a0, v0), a1 = Isa::max(a1, v1), a2 = Isa::max(a2, v2), a3 = Isa::max(a3, v3);
      } else {
        a0 = Isa::add(a0, v0), a1 = Isa::add(a1, v1), a2 = Isa::add(a2, v2), a3 = Isa::add(a3, v3);
      }
    }
    for (; i < hw; ++i) a0 = is_max ? Isa::max(a0, Isa::load(xp + i * kB)) : Isa::add(a0, Isa::load(xp + i * kB));
    V r;
    if (is_max) {
      r = Isa::max(Isa::max(a0, a1), Isa::max(a2, a3));
    } else {
      r = Isa::mul(Isa::add(Isa::add(a0, a1), Isa::add(a2, a3)), Isa::set1(1.0f / static_cast<float>(hw)));
    }
    Isa::store(y + plane * kB, r);
  }
}

// Reorders. Both ISAs transpose 8 x 8 float tiles in ymm registers (AVX-512F
// here implies AVX2); a block of 16 lanes takes two tiles per 8 pixels.
ONYX_NCHWC_INLINE void transpose8x8(__m256 (&r)[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

ONYX_NCHWC_TARGET void reorder_in(const float* src, int64_t channel_stride, int64_t pixel_stride, int64_t valid,
                                  int64_t count, float* out) {
  int64_t i = 0;
  if (pixel_stride == 1) {
    for (; i + 8 <= count; i += 8) {
#pragma GCC unroll 2
      for (int k0 = 0; k0 < kB; k0 += 8) {
        __m256 r[8];
#pragma GCC unroll 8
        for (int k = 0; k < 8; ++k) {
          r[k] = k0 + k < valid ? _mm256_loadu_ps(src + (k0 + k) * channel_stride + i) : _mm256_setzero_ps();
        }
        transpose8x8(r);
#pragma GCC unroll 8
        for (int p = 0; p < 8; ++p) _mm256_storeu_ps(out + (i + p) * kB + k0, r[p]);
      }
    }
  } else if (channel_stride == 1 && valid == kB) {
    for (; i < count; ++i) Isa::store(out + i * kB, Isa::load(src + i * pixel_stride));
  }
  for (; i < count; ++i) {
    for (int64_t k = 0; k < kB; ++k) out[i * kB + k] = k < valid ? src[k * channel_stride + i * pixel_stride] : 0.0f;
  }
}

ONYX_NCHWC_TARGET void reorder_out(const float* in, int64_t channel_stride, int64_t pixel_stride, int64_t valid,
                                   int64_t count, float* dst) {
  int64_t i = 0;
  if (pixel_stride == 1) {
    for (; i + 8 <= count; i += 8) {
#pragma GCC unroll 2
      for (int k0 = 0; k0 < kB; k0 += 8) {
        if (k0 >= valid) break;
        __m256 r[8];
#pragma GCC unroll 8
        for (int p = 0; p < 8; ++p) r[p] = _mm256_loadu_ps(in + (i + p) * kB + k0);
        transpose8x8(r);
#pragma GCC unroll 8
        for (int k = 0; k < 8; ++k) {
          if (k0 + k < valid) _mm256_storeu_ps(dst + (k0 + k) * channel_stride + i, r[k]);
        }
      }
    }
  } else if (channel_stride == 1 && valid == kB) {
    for (; i < count; ++i) Isa::store(dst + i * pixel_stride, Isa::load(in + i * kB));
  }
  for (; i < count; ++i) {
    for (int64_t k = 0; k < valid; ++k) dst[k * channel_stride + i * pixel_stride] = in[i * kB + k];
  }
}

}  // namespace

const Kernels kKernels = {kB, kMaxF, kMaxP, &conv, &depthwise, &pool, &global_pool, &reorder_in, &reorder_out};

}  // namespace onyx::cpu::nchwc::ONYX_NCHWC_NS

#undef ONYX_NCHWC_INLINE
