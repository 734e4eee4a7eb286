// qgemm_int8: see qgemm_int8.h. The driver packs operands into the chosen
// microkernel's panels (qgemm_int8_kernels.h) and splits C into blocks of
// up to 64 rows by one panel of columns, ordered by rows first: consecutive
// blocks share A's rows (kept in L2) while B's panels stream past. A long K
// goes in chunks, C accumulating in place.
#include "providers/cpu/quant/qgemm_int8.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

#include "providers/cpu/quant/qgemm_int8_kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <emmintrin.h>  // SSE2 is baseline x86-64
#define ONYX_QGEMM_SSE2 1
#endif

namespace onyx::cpu {

using qgemm_detail::Int8Kernel;

struct PackedInt8Access {
  static PackedInt8 make(const Int8Kernel* kernel, Int8Isa isa, int64_t rows, int64_t cols, int64_t groups,
                         size_t bytes) {
    PackedInt8 p;
    p.kernel_ = kernel;
    p.isa_ = isa;
    p.rows_ = rows;
    p.cols_ = cols;
    p.groups_ = groups;
    const size_t rounded = std::max<size_t>(64, (bytes + 63) / 64 * 64);
    p.panels_ = std::shared_ptr<unsigned char>(static_cast<unsigned char*>(std::aligned_alloc(64, rounded)),
                                               [](unsigned char* q) { std::free(q); });
    if (p.panels_ == nullptr) throw std::bad_alloc();
    // Not cleared: each panel is cleared (for its zero padding) or written
    // whole by its filler; a convolution's 2 MB of columns per run need not
    // be written twice.
    return p;
  }
  static const Int8Kernel& kernel(const PackedInt8& p) { return *p.kernel_; }
  static int64_t groups(const PackedInt8& p) { return p.groups_; }
  static unsigned char* panels(const PackedInt8& p) { return p.panels_.get(); }
  static std::vector<int32_t>& zero(PackedInt8& p) { return p.zero_; }
  static std::vector<int32_t>& sum(PackedInt8& p) { return p.sum_; }
  static const int32_t* zero(const PackedInt8& p) { return p.zero_.data(); }
  static const int32_t* sum(const PackedInt8& p) { return p.sum_.data(); }
};

namespace {

const Int8Kernel& kernel_for(Int8Isa& isa) {
  isa = resolve_int8_isa(isa);
  const Int8Kernel* k = nullptr;
  if (isa == Int8Isa::kAvx512Vnni) k = qgemm_detail::avx512vnni_int8_kernel();
  if (isa == Int8Isa::kAvx2) k = qgemm_detail::avx2_int8_kernel();
  if (k == nullptr) {
    isa = Int8Isa::kPortable;
    k = qgemm_detail::portable_int8_kernel();
  }
  return *k;
}

// Element (r, c) of op(X), widened.
inline int32_t element(const Int8Matrix& x, int64_t r, int64_t c) {
  const int64_t at = x.transposed ? c * x.stride + r : r * x.stride + c;
  return x.is_signed ? static_cast<const int8_t*>(x.data)[at] : static_cast<const uint8_t*>(x.data)[at];
}

// Writes `lines` lines (rows of A, columns of B) of `k_count` values into
// one panel whose lines are `width` apart in a group of G: value (line l, k)
// goes to panel[((k / G) * width + l) * G + k % G], plus `offset`. Line l's
// value k is src[l * line_step + k * k_step]; the loops run along whichever
// of the two is contiguous.
template <typename Stored, typename Source, int G>
void fill_panel(Stored* panel, const Source* src, int64_t line_step, int64_t k_step, int64_t lines, int64_t k_count,
                int64_t width, int32_t offset) {
  if (k_step == 1 || line_step != 1) {
    for (int64_t l = 0; l < lines; ++l) {
      const Source* in = src + l * line_step;
      Stored* out = panel + l * G;
      int64_t k = 0;
      for (; k + G <= k_count; k += G, out += width * G) {
        for (int t = 0; t < G; ++t) out[t] = static_cast<Stored>(in[(k + t) * k_step] + offset);
      }
      for (int t = 0; k + t < k_count; ++t) out[t] = static_cast<Stored>(in[(k + t) * k_step] + offset);
    }
    return;
  }
  // Lines are consecutive in memory (B by rows): along the lines.
  for (int64_t k = 0; k < k_count; ++k) {
    const Source* in = src + k * k_step;
    Stored* out = panel + (k / G) * width * G + k % G;
    for (int64_t l = 0; l < lines; ++l) out[l * G] = static_cast<Stored>(in[l] + offset);
  }
}

// Line `first` on of op(X)'s rows (A, lines = rows) or columns (B, lines = columns).
template <typename Stored, int G>
void fill_lines(Stored* panel, const Int8Matrix& x, bool lines_are_rows, int64_t first, int64_t lines, int64_t k_count,
                int64_t width, int32_t offset) {
  // In memory, element (r, c) is at r * row_step + c * col_step.
  const int64_t row_step = x.transposed ? 1 : x.stride, col_step = x.transposed ? x.stride : 1;
  const int64_t line_step = lines_are_rows ? row_step : col_step, k_step = lines_are_rows ? col_step : row_step;
  if (x.is_signed) {
    fill_panel<Stored, int8_t, G>(panel, static_cast<const int8_t*>(x.data) + first * line_step, line_step, k_step,
                                  lines, k_count, width, offset);
  } else {
    fill_panel<Stored, uint8_t, G>(panel, static_cast<const uint8_t*>(x.data) + first * line_step, line_step, k_step,
                                   lines, k_count, width, offset);
  }
}

// The panel of kernel `kern` for lines [first, first + lines).
void fill(const Int8Kernel& kern, unsigned char* panel, const Int8Matrix& x, bool lines_are_rows, int64_t first,
          int64_t lines, int64_t k_count, int64_t width, int32_t offset) {
  if (kern.elem_size == 1 && kern.group == 4) {
    fill_lines<int8_t, 4>(reinterpret_cast<int8_t*>(panel), x, lines_are_rows, first, lines, k_count, width, offset);
  } else if (kern.elem_size == 2 && kern.group == 2) {
    fill_lines<int16_t, 2>(reinterpret_cast<int16_t*>(panel), x, lines_are_rows, first, lines, k_count, width, offset);
  } else {
    throw std::logic_error("qgemm_int8: a kernel with an unknown panel layout");
  }
}

#if defined(ONYX_QGEMM_SSE2)
// B not transposed, 8-bit, groups of 4, a whole panel of `nr` columns (a
// multiple of 16) inside N: four rows of B interleaved per group with SSE2
// (the per-run packing of a convolution's columns).
// One group of four rows (null: a row of zeros past K), `nr` columns (a
// multiple of 16), into out[j * 4 + t]; uint8 rows become B - 128 (flip).
void interleave_group4(const uint8_t* const rows[4], bool flip_sign, int64_t nr, int8_t* group_out) {
  const __m128i flip = _mm_set1_epi8(flip_sign ? static_cast<char>(0x80) : 0);
  const __m128i zero = _mm_setzero_si128();
  for (int64_t j = 0; j < nr; j += 16) {
    __m128i r[4];
    for (int t = 0; t < 4; ++t) {
      r[t] = rows[t] != nullptr ? _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[t] + j)), flip)
                                : zero;
    }
    const __m128i lo01 = _mm_unpacklo_epi8(r[0], r[1]), hi01 = _mm_unpackhi_epi8(r[0], r[1]);
    const __m128i lo23 = _mm_unpacklo_epi8(r[2], r[3]), hi23 = _mm_unpackhi_epi8(r[2], r[3]);
    auto* out = reinterpret_cast<__m128i*>(group_out + j * 4);
    _mm_storeu_si128(out + 0, _mm_unpacklo_epi16(lo01, lo23));
    _mm_storeu_si128(out + 1, _mm_unpackhi_epi16(lo01, lo23));
    _mm_storeu_si128(out + 2, _mm_unpacklo_epi16(hi01, hi23));
    _mm_storeu_si128(out + 3, _mm_unpackhi_epi16(hi01, hi23));
  }
}

// B not transposed, 8-bit, groups of 4, a whole panel of `nr` columns (a
// multiple of 16) inside N: four rows of B interleaved per group with SSE2.
void interleave_rows4(const Int8Matrix& b, int64_t j0, int64_t nr, int64_t groups, int8_t* panel) {
  const auto* src = static_cast<const uint8_t*>(b.data);
  for (int64_t g = 0; g < groups; ++g) {
    const uint8_t* rows[4];
    for (int t = 0; t < 4; ++t) {
      const int64_t k = g * 4 + t;
      rows[t] = k < b.rows ? src + k * b.stride + j0 : nullptr;
    }
    interleave_group4(rows, !b.is_signed, nr, panel + g * nr * 4);
  }
}
#endif

}  // namespace

const char* PackedInt8::kernel_name() const { return kernel_ == nullptr ? "none" : kernel_->name; }

PackedInt8 pack_int8_a(const Int8Matrix& a, const int32_t* zero_points, int64_t zero_count, Int8Isa isa) {
  const Int8Kernel& kern = kernel_for(isa);
  const int64_t m = a.rows, k = a.cols, mr = kern.mr, g = kern.group;
  const int64_t groups = (k + g - 1) / g, panels = (m + mr - 1) / mr;
  const size_t panel_bytes = static_cast<size_t>(groups * mr * g * kern.elem_size);
  PackedInt8 p = PackedInt8Access::make(&kern, isa, m, k, groups, panel_bytes * static_cast<size_t>(panels));
  // A' = A + 128 for int8 A (0..255 either way); za' moves with it.
  const int32_t offset = a.is_signed ? 128 : 0;
  std::vector<int32_t>& zero = PackedInt8Access::zero(p);
  std::vector<int32_t>& term = PackedInt8Access::sum(p);
  zero.assign(static_cast<size_t>(panels * mr), 0);
  term.assign(static_cast<size_t>(panels * mr), 0);
  for (int64_t i = 0; i < m; ++i) {
    const int32_t z = (zero_count > 1 ? zero_points[i] : zero_count == 1 ? zero_points[0] : 0) + offset;
    uint32_t sum = 0;
    if (!a.transposed) {
      if (a.is_signed) {
        const int8_t* row = static_cast<const int8_t*>(a.data) + i * a.stride;
        for (int64_t c = 0; c < k; ++c) sum += static_cast<uint32_t>(row[c] + 128);
      } else {
        const uint8_t* row = static_cast<const uint8_t*>(a.data) + i * a.stride;
        for (int64_t c = 0; c < k; ++c) sum += row[c];
      }
    } else {
      for (int64_t c = 0; c < k; ++c) sum += static_cast<uint32_t>(element(a, i, c) + offset);
    }
    zero[static_cast<size_t>(i)] = z;
    term[static_cast<size_t>(i)] = static_cast<int32_t>(sum - static_cast<uint32_t>(k) * static_cast<uint32_t>(z));
  }
  for (int64_t pi = 0; pi < panels; ++pi) {
    unsigned char* panel = PackedInt8Access::panels(p) + static_cast<size_t>(pi) * panel_bytes;
    const int64_t i0 = pi * mr, i1 = std::min(m, i0 + mr);
    std::memset(panel, 0, panel_bytes);
    if (kern.elem_size == 1 && g == 4 && !a.transposed) {
      // Rows of A already hold their groups of four consecutively: one
      // 32-bit move per group (flipping the sign bit makes int8 A + 128).
      const uint32_t flip = a.is_signed ? 0x80808080u : 0u;
      for (int64_t i = i0; i < i1; ++i) {
        const auto* row = static_cast<const uint8_t*>(a.data) + i * a.stride;
        unsigned char* line = panel + (i - i0) * 4;
        int64_t q = 0;
        for (; q < k / 4; ++q) {
          uint32_t v;
          std::memcpy(&v, row + q * 4, 4);
          v ^= flip;
          std::memcpy(line + q * mr * 4, &v, 4);
        }
        for (int64_t t = 0; q * 4 + t < k; ++t)
          line[q * mr * 4 + t] = static_cast<unsigned char>(row[q * 4 + t] ^ (flip & 0xFF));
      }
      continue;
    }
    // uint8 A' stored in the int8 panel's bytes (the same bits).
    fill(kern, panel, a, true, i0, i1 - i0, k, mr, offset);
  }
  return p;
}

// A packed B [k, n] for `kern` with its zero points set (B' = B - 128 for
// uint8 B, so -128..127 either way, and zb' moves with it) and its column
// sums cleared; the caller fills the panels and the sums.
struct PackedBStart {
  PackedInt8 packed;
  size_t panel_bytes = 0;
  int32_t offset = 0;  // added to B's values
};
PackedBStart start_packed_b(const Int8Kernel& kern, Int8Isa isa, int64_t k, int64_t n, bool is_signed,
                            const int32_t* zero_points, int64_t zero_count) {
  const int64_t nr = kern.nr, g = kern.group;
  const int64_t groups = (k + g - 1) / g, panels = (n + nr - 1) / nr;
  PackedBStart start;
  start.panel_bytes = static_cast<size_t>(groups * nr * g * kern.elem_size);
  start.packed = PackedInt8Access::make(&kern, isa, k, n, groups, start.panel_bytes * static_cast<size_t>(panels));
  start.offset = is_signed ? 0 : -128;
  std::vector<int32_t>& zero = PackedInt8Access::zero(start.packed);
  zero.assign(static_cast<size_t>(panels * nr), 0);
  PackedInt8Access::sum(start.packed).assign(static_cast<size_t>(panels * nr), 0);
  for (int64_t j = 0; j < n; ++j)
    zero[static_cast<size_t>(j)] = (zero_count > 1    ? zero_points[j]
                                    : zero_count == 1 ? zero_points[0]
                                                      : 0) +
                                   start.offset;
  return start;
}

PackedInt8 pack_int8_b(const Int8Matrix& b, const int32_t* zero_points, int64_t zero_count, Int8Isa isa,
                       ThreadPool* pool) {
  const Int8Kernel& kern = kernel_for(isa);
  const int64_t k = b.rows, n = b.cols, nr = kern.nr, g = kern.group;
  const int64_t groups = (k + g - 1) / g, panels = (n + nr - 1) / nr;
  PackedBStart start = start_packed_b(kern, isa, k, n, b.is_signed, zero_points, zero_count);
  PackedInt8 p = std::move(start.packed);
  const size_t panel_bytes = start.panel_bytes;
  const int32_t offset = start.offset;
  std::vector<int32_t>& sum = PackedInt8Access::sum(p);
  parallel_for(pool, panels, 4.0 * static_cast<double>(k * nr), [&](int64_t begin, int64_t end) {
    for (int64_t pj = begin; pj < end; ++pj) {
      unsigned char* panel = PackedInt8Access::panels(p) + static_cast<size_t>(pj) * panel_bytes;
      const int64_t j0 = pj * nr, j1 = std::min(n, j0 + nr);
#if defined(ONYX_QGEMM_SSE2)
      if (kern.elem_size == 1 && g == 4 && !b.transposed && j1 - j0 == nr && nr % 16 == 0) {
        interleave_rows4(b, j0, nr, groups, reinterpret_cast<int8_t*>(panel));
        kern.column_sums(groups, panel, sum.data() + j0);
        continue;
      }
#endif
      std::memset(panel, 0, panel_bytes);
      fill(kern, panel, b, false, j0, j1 - j0, k, nr, offset);
      kern.column_sums(groups, panel, sum.data() + j0);
    }
  });
  return p;
}

PackedInt8 pack_int8_b_rows(int64_t k, int64_t n, bool is_signed, const int32_t* zero_points, int64_t zero_count,
                            Int8Isa isa, ThreadPool* pool, const Int8RowSource& rows) {
  const Int8Kernel& kern = kernel_for(isa);
  const int64_t nr = kern.nr, g = kern.group;
  const int64_t groups = (k + g - 1) / g, panels = (n + nr - 1) / nr;
  PackedBStart start = start_packed_b(kern, isa, k, n, is_signed, zero_points, zero_count);
  PackedInt8 p = std::move(start.packed);
  const size_t panel_bytes = start.panel_bytes;
  const int32_t offset = start.offset;
  std::vector<int32_t>& sum = PackedInt8Access::sum(p);
  unsigned char* base = PackedInt8Access::panels(p);
  const size_t group_bytes = static_cast<size_t>(nr * g * kern.elem_size);
  // One group of G rows at a time: made into a small buffer (in L1), then
  // spread over every panel's slot for that group.
  parallel_for(pool, groups, 8.0 * static_cast<double>(n * g), [&](int64_t begin, int64_t end) {
    std::vector<uint8_t> buffer(static_cast<size_t>(g * n + 16));
    for (int64_t q = begin; q < end; ++q) {
      const int64_t k0 = q * g, count = std::min(g, k - k0);
      rows(k0, count, buffer.data());
      for (int64_t pj = 0; pj < panels; ++pj) {
        unsigned char* out = base + static_cast<size_t>(pj) * panel_bytes + static_cast<size_t>(q) * group_bytes;
        const int64_t j0 = pj * nr, cols = std::min(nr, n - j0);
#if defined(ONYX_QGEMM_SSE2)
        if (kern.elem_size == 1 && g == 4 && cols == nr && nr % 16 == 0) {
          const uint8_t* group_rows[4];
          for (int64_t t = 0; t < 4; ++t) group_rows[t] = t < count ? buffer.data() + t * n + j0 : nullptr;
          interleave_group4(group_rows, !is_signed, nr, reinterpret_cast<int8_t*>(out));
          continue;
        }
#endif
        std::memset(out, 0, group_bytes);
        // The group's rows as a K = count matrix, into a panel of one group.
        fill(kern, out, Int8Matrix{buffer.data() + j0, is_signed, count, cols, n, false}, false, 0, cols, count, nr,
             offset);
      }
    }
  });
  parallel_for(pool, panels, 2.0 * static_cast<double>(k * nr), [&](int64_t begin, int64_t end) {
    for (int64_t pj = begin; pj < end; ++pj)
      kern.column_sums(groups, base + static_cast<size_t>(pj) * panel_bytes, sum.data() + pj * nr);
  });
  return p;
}

void qgemm_int8(const PackedInt8& a, const PackedInt8& b, int32_t* c, int64_t ldc, ThreadPool* pool,
                const Int8BlockDone& done) {
  if (a.empty() || b.empty() || &PackedInt8Access::kernel(a) != &PackedInt8Access::kernel(b) || a.cols() != b.rows()) {
    throw std::logic_error("qgemm_int8: operands packed for different kernels or of mismatched shapes");
  }
  const Int8Kernel& kern = PackedInt8Access::kernel(a);
  const int64_t m = a.rows(), n = b.cols(), k = a.cols();
  if (m == 0 || n == 0) return;
  const int64_t mr = kern.mr, nr = kern.nr, groups = PackedInt8Access::groups(a);
  const int64_t block_rows = std::max<int64_t>(1, 64 / mr) * mr;
  // A long K in chunks of 512 values, so that a chunk of the B panel (16 KB)
  // stays in L1 and the block's A panels in L2 while the tiles of the block
  // reuse them; C takes the later chunks' sums in place.
  const int64_t chunk = k > 1024 ? 512 / kern.group : std::max<int64_t>(groups, 1);
  const int64_t m_blocks = (m + block_rows - 1) / block_rows, n_panels = (n + nr - 1) / nr;
  const size_t a_panel_bytes = static_cast<size_t>(groups * mr * kern.group * kern.elem_size);
  const size_t b_panel_bytes = static_cast<size_t>(groups * nr * kern.group * kern.elem_size);
  const unsigned char* a_panels = PackedInt8Access::panels(a);
  const unsigned char* b_panels = PackedInt8Access::panels(b);
  const int32_t* a_term = PackedInt8Access::sum(a);
  const int32_t* a_zero = PackedInt8Access::zero(a);
  const int32_t* b_zero = PackedInt8Access::zero(b);
  const int32_t* b_sum = PackedInt8Access::sum(b);
  const double cost = 2.0 * static_cast<double>(block_rows * nr) * static_cast<double>(std::max<int64_t>(k, 1));
  // Rows first when A is large: consecutive blocks share A's rows (kept in
  // L2) while B's panels stream past. When all of packed A fits in L2 (a
  // transformer's 128 tokens), panels first instead: each panel of B (the
  // weights, read from memory) is read once and serves every block of rows
  // while it is in L1, and the threads split B between them.
  const size_t a_bytes = static_cast<size_t>((m + mr - 1) / mr) * a_panel_bytes;
  const bool panels_first = m_blocks > 1 && a_bytes <= (size_t{512} << 10);
  // Tasks through parallel_for_tasks: a thread that finishes its share
  // takes over the rest of a late one's.
  parallel_for_tasks(pool, m_blocks * n_panels, cost, [&](int64_t task) {
    // Without C, each block goes to this buffer (in L1) and straight to `done`.
    thread_local std::vector<int32_t> scratch;
    if (c == nullptr && scratch.size() < static_cast<size_t>(block_rows * nr)) {
      scratch.resize(static_cast<size_t>(block_rows * nr));
    }
    {
      const int64_t block = panels_first ? task % m_blocks : task / n_panels;
      const int64_t pj = panels_first ? task / m_blocks : task % n_panels;
      const int64_t j0 = pj * nr, cols = std::min(nr, n - j0);
      const int64_t i0 = block * block_rows, i1 = std::min(m, i0 + block_rows);
      const unsigned char* b_panel = b_panels + static_cast<size_t>(pj) * b_panel_bytes;
      int32_t* block_c = c != nullptr ? c + i0 * ldc + j0 : scratch.data();
      const int64_t block_ld = c != nullptr ? ldc : nr;
      for (int64_t g0 = 0; g0 < groups || g0 == 0; g0 += chunk) {
        const int64_t count = std::min(chunk, groups - g0);
        const size_t a_skip = static_cast<size_t>(g0 * mr * kern.group * kern.elem_size);
        const size_t b_skip = static_cast<size_t>(g0 * nr * kern.group * kern.elem_size);
        for (int64_t i = i0; i < i1; i += mr) {
          const int64_t rows = std::min(mr, i1 - i);
          kern.tile[rows - 1](count, a_panels + static_cast<size_t>(i / mr) * a_panel_bytes + a_skip, b_panel + b_skip,
                              a_term + i, a_zero + i, b_zero + j0, b_sum + j0, block_c + (i - i0) * block_ld, block_ld,
                              cols, g0 > 0);
        }
      }
      if (done) done(i0, i1, j0, j0 + cols, block_c, block_ld);
    }
  });
}

bool int8_indirect_available(Int8Isa isa) {
  const Int8Kernel& kern = kernel_for(isa);
  return kern.indirect[0] != nullptr && kern.elem_size == 1;
}

bool int8_indirect_supported(const PackedInt8& b, int64_t taps) {
  if (b.empty() || taps < 1 || b.rows() % taps != 0) return false;
  const Int8Kernel& kern = PackedInt8Access::kernel(b);
  return kern.indirect[0] != nullptr && kern.elem_size == 1 && (b.rows() / taps) % kern.group == 0;
}

std::vector<int32_t> int8_column_sums(const PackedInt8& b) {
  const int32_t* sums = PackedInt8Access::sum(b);
  return std::vector<int32_t>(sums, sums + b.cols());
}

void qgemm_int8_indirect(int64_t m, int64_t taps, const Int8RowPointers& rows, const PackedInt8& b,
                         const int32_t* adjust, ThreadPool* pool, const Int8BlockDone& done) {
  if (!int8_indirect_supported(b, taps)) {
    throw std::logic_error("qgemm_int8_indirect: the packed operand's kernel does not read rows in place");
  }
  const Int8Kernel& kern = PackedInt8Access::kernel(b);
  const int64_t n = b.cols(), k = b.rows();
  if (m == 0 || n == 0) return;
  const int64_t mr = kern.mr, nr = kern.nr, groups = k / taps / kern.group;
  const int64_t block_rows = std::max<int64_t>(1, 64 / mr) * mr;
  const int64_t m_blocks = (m + block_rows - 1) / block_rows, n_panels = (n + nr - 1) / nr;
  const size_t b_panel_bytes = static_cast<size_t>(PackedInt8Access::groups(b) * nr * kern.group * kern.elem_size);
  const unsigned char* b_panels = PackedInt8Access::panels(b);
  std::vector<int32_t> adjusted(static_cast<size_t>(n_panels * nr), 0);
  std::copy(adjust, adjust + n, adjusted.begin());
  const double cost = 2.0 * static_cast<double>(block_rows * nr) * static_cast<double>(std::max<int64_t>(k, 1));
  // Blocks of rows first, panels of B inside: a thread's consecutive tasks
  // read the same rows of the image, and reuse the block's row addresses
  // (made once per block and call: for a 1x1 convolution with many panels
  // making them per task took 12% of the time). Tasks go through
  // parallel_for_tasks: a thread that finishes its share takes over the rest
  // of a late one's.
  static std::atomic<uint64_t> calls{0};
  const uint64_t call = calls.fetch_add(1, std::memory_order_relaxed) + 1;
  parallel_for_tasks(pool, m_blocks * n_panels, cost, [&](int64_t task) {
    thread_local std::vector<const uint8_t*> pointers;
    thread_local std::vector<int32_t> scratch;
    thread_local uint64_t pointers_call = 0;
    thread_local int64_t pointers_block = -1;
    if (pointers.size() < static_cast<size_t>(taps * block_rows)) {
      pointers.resize(static_cast<size_t>(taps * block_rows));
      pointers_call = 0;
    }
    if (scratch.size() < static_cast<size_t>(block_rows * nr)) scratch.resize(static_cast<size_t>(block_rows * nr));
    {
      const int64_t block = task / n_panels, pj = task % n_panels;
      const int64_t j0 = pj * nr, cols = std::min(nr, n - j0);
      const int64_t i0 = block * block_rows, i1 = std::min(m, i0 + block_rows), count = i1 - i0;
      if (pointers_call != call || pointers_block != block) {
        rows(i0, count, pointers.data());
        pointers_call = call;
        pointers_block = block;
      }
      const unsigned char* b_panel = b_panels + static_cast<size_t>(pj) * b_panel_bytes;
      for (int64_t i = i0; i < i1; i += mr) {
        const int64_t r = std::min(mr, i1 - i);
        kern.indirect[r - 1](taps, groups, pointers.data() + (i - i0), count, b_panel, adjusted.data() + j0,
                             scratch.data() + (i - i0) * nr, nr, cols);
      }
      done(i0, i1, j0, j0 + cols, scratch.data(), nr);
    }
  });
}

void qgemm_int8_reference(const Int8Matrix& a, const int32_t* a_zero, int64_t a_zero_count, const Int8Matrix& b,
                          const int32_t* b_zero, int64_t b_zero_count, int32_t* c, int64_t ldc) {
  for (int64_t i = 0; i < a.rows; ++i) {
    const int64_t za = a_zero_count == 0 ? 0 : a_zero[a_zero_count > 1 ? i : 0];
    for (int64_t j = 0; j < b.cols; ++j) {
      const int64_t zb = b_zero_count == 0 ? 0 : b_zero[b_zero_count > 1 ? j : 0];
      int64_t sum = 0;
      for (int64_t p = 0; p < a.cols; ++p) sum += (element(a, i, p) - za) * (element(b, p, j) - zb);
      c[i * ldc + j] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(sum)));
    }
  }
}

}  // namespace onyx::cpu
