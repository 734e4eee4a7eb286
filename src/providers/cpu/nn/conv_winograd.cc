// Winograd F(2x2, 3x3) convolution (see conv_winograd.h). With 4x4 input
// tiles d (stride 2) and the 3x3 filter g, each 2x2 output tile is
//   Y = A^T [ (G g G^T) .* (B^T d B) ] A,
// and the elementwise product summed over input channels is, for each of the
// 16 positions e, a GEMM: M_e (out x tiles) = U_e (out x in) * V_e (in x tiles).
// The transforms use the standard matrices of the paper:
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
//   G   = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
//   A^T = [1 1 1 0; 0 1 -1 -1]
#include "providers/cpu/nn/conv_winograd.h"

#include <algorithm>
#include <cstring>

#include "providers/cpu/gemm/target_clones.h"

namespace onyx::cpu::nn {
namespace {

constexpr int kPositions = 16;

// Horizontal half of B^T d B for padded input rows r (2 * n + 2 floats): the
// four column combinations of every tile's four columns 2j..2j+3.
ONYX_TARGET_CLONES
void input_columns(const float* __restrict r, int64_t n, float* __restrict h0, float* __restrict h1,
                   float* __restrict h2, float* __restrict h3) {
  for (int64_t j = 0; j < n; ++j) {
    const float x0 = r[2 * j], x1 = r[2 * j + 1], x2 = r[2 * j + 2], x3 = r[2 * j + 3];
    h0[j] = x0 - x2;
    h1[j] = x1 + x2;
    h2[j] = x2 - x1;
    h3[j] = x1 - x3;
  }
}

// Vertical half: the same combinations of four rows' results.
ONYX_TARGET_CLONES
void input_rows(const float* __restrict p0, const float* __restrict p1, const float* __restrict p2,
                const float* __restrict p3, int64_t n, float* __restrict o0, float* __restrict o1,
                float* __restrict o2, float* __restrict o3) {
  for (int64_t j = 0; j < n; ++j) {
    o0[j] = p0[j] - p2[j];
    o1[j] = p1[j] + p2[j];
    o2[j] = p2[j] - p1[j];
    o3[j] = p1[j] - p3[j];
  }
}

// A^T m: the two row sums of four rows.
ONYX_TARGET_CLONES
void output_rows(const float* __restrict p0, const float* __restrict p1, const float* __restrict p2,
                 const float* __restrict p3, int64_t n, float* __restrict o0, float* __restrict o1) {
  for (int64_t j = 0; j < n; ++j) {
    o0[j] = p0[j] + p1[j] + p2[j];
    o1[j] = p1[j] - p2[j] - p3[j];
  }
}

// (A^T m) A: each tile's two output columns, interleaved into one output row.
ONYX_TARGET_CLONES
void output_columns(const float* __restrict q0, const float* __restrict q1, const float* __restrict q2,
                    const float* __restrict q3, int64_t n, float* __restrict out) {
  for (int64_t j = 0; j < n; ++j) {
    out[2 * j] = q0[j] + q1[j] + q2[j];
    out[2 * j + 1] = q1[j] - q2[j] - q3[j];
  }
}

// A float buffer of at least `count` elements kept per thread between calls
// (fresh multi-MiB buffers would page-fault in on every run); not initialized.
float* thread_buffer(int slot, size_t count) {
  thread_local std::vector<float> buffers[3];
  std::vector<float>& b = buffers[slot];
  if (b.size() < count) {
    b.clear();
    b.shrink_to_fit();
    b.resize(count);
  }
  return b.data();
}

}  // namespace

void apply_gemm_activation(float* y, int64_t n, const GemmEpilogue& act) {
  switch (act.activation) {
    case GemmActivation::kNone:
      break;
    case GemmActivation::kRelu:
      for (int64_t i = 0; i < n; ++i) y[i] = y[i] > 0.0f ? y[i] : 0.0f;
      break;
    case GemmActivation::kClip:
      for (int64_t i = 0; i < n; ++i) y[i] = std::min(std::max(y[i], act.clip_min), act.clip_max);
      break;
    case GemmActivation::kLeakyRelu:
      for (int64_t i = 0; i < n; ++i) y[i] = y[i] >= 0.0f ? y[i] : y[i] * act.leaky_alpha;
      break;
  }
}

bool winograd_applies(const Window& w, int64_t group, int64_t in_channels, int64_t out_channels) {
  if (w.rank() != 2 || group != 1 || best_sgemm_isa() == SgemmIsa::kPortable) return false;
  for (size_t d = 0; d < 2; ++d) {
    if (w.kernel[d] != 3 || w.strides[d] != 1 || w.dilations[d] != 1) return false;
  }
  // Below these the transforms cost more than the multiplies they save.
  const int64_t tiles = ((w.output[0] + 1) / 2) * ((w.output[1] + 1) / 2);
  return in_channels >= 16 && out_channels >= 16 && tiles >= 32;
}

WinogradWeights winograd_transform_weights(const float* w, int64_t out_channels, int64_t in_channels) {
  const int64_t count = out_channels * in_channels;
  std::vector<float> u(static_cast<size_t>(kPositions * count));
  for (int64_t mc = 0; mc < count; ++mc) {
    const float* g = w + mc * 9;
    // G g: rows 0..3 of three columns.
    float gg[4][3];
    for (int col = 0; col < 3; ++col) {
      gg[0][col] = g[col];
      gg[1][col] = 0.5f * (g[col] + g[3 + col] + g[6 + col]);
      gg[2][col] = 0.5f * (g[col] - g[3 + col] + g[6 + col]);
      gg[3][col] = g[6 + col];
    }
    // (G g) G^T.
    for (int a = 0; a < 4; ++a) {
      const float v[4] = {gg[a][0], 0.5f * (gg[a][0] + gg[a][1] + gg[a][2]), 0.5f * (gg[a][0] - gg[a][1] + gg[a][2]),
                          gg[a][2]};
      for (int b = 0; b < 4; ++b) u[static_cast<size_t>((a * 4 + b) * count + mc)] = v[b];
    }
  }
  WinogradWeights out;
  for (int e = 0; e < kPositions; ++e) {
    out.u.push_back(pack_a(false, out_channels, in_channels, u.data() + e * count, in_channels));
  }
  return out;
}

void winograd_convolve(const float* x, const WinogradWeights& weights, const float* bias, float* y, int64_t batch,
                       int64_t in_channels, int64_t out_channels, const Window& w, ThreadPool* pool,
                       const float* residual, const GemmEpilogue& activation) {
  const int64_t C = in_channels, M = out_channels;
  const int64_t ih = w.input[0], iw = w.input[1], oh = w.output[0], ow = w.output[1];
  const int64_t pt = w.pads[0], pl = w.pads[1];
  const int64_t th = (oh + 1) / 2, tw = (ow + 1) / 2;
  const int64_t nr = sgemm_tile_cols(weights.u.front());
  const int64_t threads = pool == nullptr ? 1 : pool->parallelism();
  // Chunks of tile rows whose transformed tiles (16 x (C + M) x tiles floats)
  // take about 1 MiB, as many chunks as a multiple of the threads.
  int64_t rows = std::clamp<int64_t>((int64_t{1} << 18) / (kPositions * (C + M)) / tw, 1, th);
  int64_t chunks = (th + rows - 1) / rows;
  if (threads > 1) chunks = std::min(th, (std::max(chunks, threads) + threads - 1) / threads * threads);
  rows = (th + chunks - 1) / chunks;
  chunks = (th + rows - 1) / rows;
  // Tiles are numbered T = (i - i0) * tw1 + j within a chunk: one extra tile
  // per tile row, so that every transform runs as one long loop over the
  // chunk (the extra tile computes garbage that is never stored).
  const int64_t tw1 = tw + 1, width = 2 * tw1;  // a padded input row holds the tiles' columns
  const int64_t ldv = (rows * tw1 + nr - 1) / nr * nr;
  std::vector<int64_t> offsets(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) offsets[static_cast<size_t>(c)] = c * ldv;
  const int64_t block = (rows + 1) * width + 4;  // even or odd padded rows of a chunk, plus overread room
  const int64_t h_size = (rows + 1) * tw1;        // one column transform array of a block

  for (int64_t n = 0; n < batch; ++n) {
    const float* xn = x + n * C * ih * iw;
    float* yn = y + n * M * oh * ow;
    const float* zn = residual != nullptr ? residual + n * M * oh * ow : nullptr;
    parallel_for(pool, chunks, 2.0 * kPositions * static_cast<double>(C * M * rows * tw), [&](int64_t begin,
                                                                                              int64_t end) {
      float* v = thread_buffer(0, static_cast<size_t>(kPositions * C * ldv));
      float* m = thread_buffer(1, static_cast<size_t>(kPositions * M * ldv));
      float* scratch = thread_buffer(2, static_cast<size_t>(2 * block + 8 * h_size + 8 * ldv + 4 * ldv));
      float* blocks[2] = {scratch, scratch + block};        // even and odd padded rows
      float* h[2] = {scratch + 2 * block, scratch + 2 * block + 4 * h_size};  // their column transforms
      float* s = scratch + 2 * block + 8 * h_size;          // A^T m: 2 x 4 arrays of ldv
      float* out = s + 8 * ldv;                             // 2 output rows of 2 * ldv
      for (int64_t chunk = begin; chunk < end; ++chunk) {
        const int64_t i0 = chunk * rows, i1 = std::min(th, i0 + rows), count = (i1 - i0) * tw1;
        const int64_t block_rows = i1 - i0 + 1;
        for (int64_t c = 0; c < C; ++c) {
          const float* xc = xn + c * ih * iw;
          // Padded rows 2 * i0 - pt + pr, split into even and odd pr.
          for (int parity = 0; parity < 2; ++parity) {
            float* dst = blocks[parity];
            for (int64_t k = 0; k < block_rows; ++k) {
              float* row = dst + k * width;
              const int64_t r = 2 * (i0 + k) + parity - pt;
              if (r < 0 || r >= ih) {
                std::fill(row, row + width, 0.0f);
                continue;
              }
              const int64_t k0 = std::min(width, std::max<int64_t>(0, pl)), k1 = std::max(k0, std::min(width, iw + pl));
              std::fill(row, row + k0, 0.0f);
              std::memcpy(row + k0, xc + r * iw + (k0 - pl), static_cast<size_t>(k1 - k0) * sizeof(float));
              std::fill(row + k1, row + width, 0.0f);
            }
            std::fill(dst + block_rows * width, dst + block_rows * width + 4, 0.0f);
            float* hp = h[parity];
            input_columns(dst, block_rows * tw1, hp, hp + h_size, hp + 2 * h_size, hp + 3 * h_size);
          }
          // Tile row i reads padded rows 2i, 2i+1 (k = i - i0) and 2i+2, 2i+3 (k + 1).
          for (int b = 0; b < 4; ++b) {
            const float* even = h[0] + b * h_size;
            const float* odd = h[1] + b * h_size;
            float* o[4];
            for (int a = 0; a < 4; ++a) o[a] = v + ((a * 4 + b) * C + c) * ldv;
            input_rows(even, odd, even + tw1, odd + tw1, count, o[0], o[1], o[2], o[3]);
            for (int a = 0; a < 4; ++a) std::fill(o[a] + count, o[a] + ldv, 0.0f);
          }
        }
        // M_e = U_e V_e.
        for (int e = 0; e < kPositions; ++e) {
          sgemm_packed_a_rows_b(weights.u[static_cast<size_t>(e)], 0, M, count, v + e * C * ldv, offsets.data(), 0.0f,
                                m + e * M * ldv, ldv);
        }
        // Y = A^T M A per output channel, then bias, residual, activation.
        for (int64_t ch = 0; ch < M; ++ch) {
          auto mp = [&](int e) { return m + (e * M + ch) * ldv; };
          for (int b4 = 0; b4 < 4; ++b4) {
            output_rows(mp(b4), mp(4 + b4), mp(8 + b4), mp(12 + b4), count, s + b4 * ldv, s + (4 + b4) * ldv);
          }
          for (int r = 0; r < 2; ++r) {
            const float* q = s + r * 4 * ldv;
            output_columns(q, q + ldv, q + 2 * ldv, q + 3 * ldv, count, out + r * 2 * ldv);
          }
          const float b = bias != nullptr ? bias[ch] : 0.0f;
          for (int64_t i = i0; i < i1; ++i)
            for (int r = 0; r < 2 && 2 * i + r < oh; ++r) {
              const float* src = out + r * 2 * ldv + 2 * (i - i0) * tw1;
              float* dst = yn + (ch * oh + 2 * i + r) * ow;
              if (zn != nullptr) {
                const float* z = zn + (ch * oh + 2 * i + r) * ow;
                for (int64_t j = 0; j < ow; ++j) dst[j] = src[j] + b + z[j];
              } else {
                for (int64_t j = 0; j < ow; ++j) dst[j] = src[j] + b;
              }
              apply_gemm_activation(dst, ow, activation);
            }
        }
      }
    });
  }
}

}  // namespace onyx::cpu::nn
