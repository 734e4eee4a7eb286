// The float attention core of the com.microsoft attention kernels (see
// attention_core.h).
#include "providers/cpu/attention/attention_core.h"

#include <algorithm>
#include <vector>

#include "providers/cpu/attention/attention_util.h"
#include "providers/cpu/gemm/sgemm.h"

namespace onyx::cpu::attention {

void run_scaled_dot_product(const ScaledDotProduct& p, ThreadPool* pool) {
  const int64_t units = p.batch * p.heads;
  if (units == 0 || p.q_len == 0) return;
  // Split the queries of each head only when the heads alone leave threads
  // idle: every block packs the head's K and V again.
  const int64_t threads = pool ? pool->parallelism() : 1;
  int64_t blocks = 1;
  if (units < threads && p.q_len >= 32) blocks = std::min((threads + units - 1) / units, p.q_len / 16);
  const int64_t rows_per_block = (p.q_len + blocks - 1) / blocks;
  const double cost = static_cast<double>(rows_per_block * p.kv_len * (p.head_size + p.v_head_size) * 2);
  parallel_for(pool, units * blocks, cost, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(static_cast<size_t>(rows_per_block * p.kv_len));
    for (int64_t unit = begin; unit < end; ++unit) {
      const int64_t bn = unit / blocks, block = unit % blocks;
      const int64_t b = bn / p.heads, n = bn % p.heads;
      const int64_t i0 = block * rows_per_block, rows = std::min(rows_per_block, p.q_len - i0);
      if (rows <= 0) continue;
      const float* q = p.q.at(b, n) + i0 * p.q.row_stride;
      float* out = p.out.at(b, n) + i0 * p.out.row_stride;
      if (p.kv_len == 0) {
        for (int64_t i = 0; i < rows; ++i) std::fill_n(out + i * p.out.row_stride, p.v_head_size, 0.0f);
        continue;
      }
      sgemm(false, true, rows, p.kv_len, p.head_size, p.scale, q, p.q.row_stride, p.k.at(b, n), p.k.row_stride, 0.0f,
            scores.data(), p.kv_len, nullptr);
      for (int64_t r = 0; r < rows; ++r) {
        float* row = scores.data() + r * p.kv_len;
        if (p.adjust_row) p.adjust_row(b, n, i0 + r, row);
        if (p.scores_out != nullptr) std::copy_n(row, p.kv_len, p.scores_out + ((bn * p.q_len) + i0 + r) * p.kv_len);
        softmax_row(row, p.kv_len);
      }
      sgemm(false, false, rows, p.v_head_size, p.kv_len, 1.0f, scores.data(), p.kv_len, p.v.at(b, n), p.v.row_stride,
            0.0f, out, p.out.row_stride, nullptr);
    }
  });
}

void copy_heads(const HeadView<const float>& src, const float* bias, int64_t batch, int64_t heads, int64_t rows,
                int64_t width, const HeadView<float>& dst, int64_t row_offset) {
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t n = 0; n < heads; ++n) {
      const float* s = src.at(b, n);
      float* d = dst.at(b, n) + row_offset * dst.row_stride;
      const float* bn = bias ? bias + n * width : nullptr;
      if (bn == nullptr && src.row_stride == width && dst.row_stride == width) {
        std::copy_n(s, rows * width, d);  // a whole head at once (past keys and values)
        continue;
      }
      for (int64_t r = 0; r < rows; ++r, s += src.row_stride, d += dst.row_stride) {
        if (bn) {
          for (int64_t h = 0; h < width; ++h) d[h] = s[h] + bn[h];
        } else {
          std::copy_n(s, width, d);
        }
      }
    }
  }
}

}  // namespace onyx::cpu::attention
