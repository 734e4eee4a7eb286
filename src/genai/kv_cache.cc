// KvCache: the buffers, their binding to each run, and beam reordering.
#include "genai/kv_cache.h"

#include <cstring>

namespace onyx::genai {

KvCache::KvCache(const Model::Impl& model, int64_t rows, int64_t max_length)
    : model_(model), rows_(rows), max_length_(max_length), shared_(model.config.past_present_share_buffer) {
  const DecoderConfig& d = model.config.decoder;
  for (const std::string* pattern : {&d.past_key_names, &d.past_value_names}) {
    for (int64_t layer = 0; layer < d.num_hidden_layers; ++layer) past_names_.push_back(layer_name(*pattern, layer));
  }
  for (const std::string* pattern : {&d.present_key_names, &d.present_value_names}) {
    for (int64_t layer = 0; layer < d.num_hidden_layers; ++layer) present_names_.push_back(layer_name(*pattern, layer));
  }
  reset();
}

void KvCache::reset() {
  const DecoderConfig& d = model_.config.decoder;
  past_.clear();
  const int64_t length = shared_ ? max_length_ : 0;
  for (size_t i = 0; i < past_names_.size(); ++i) {
    Tensor buffer(model_.cache_dtype, {rows_, d.num_key_value_heads, length, model_.cache_row});
    // Rows past a sequence's length are never read, but keep them defined.
    if (buffer.bytes() > 0) std::memset(buffer.raw_data(), 0, buffer.bytes());
    past_.push_back(std::move(buffer));
  }
}

void KvCache::bind(IoBinding& binding) const {
  for (size_t i = 0; i < past_.size(); ++i) {
    binding.bind_input(past_names_[i], past_[i]);
    if (shared_)
      binding.bind_output(present_names_[i], past_[i]);
    else
      binding.bind_output(present_names_[i], Device{});
  }
}

void KvCache::update(const std::vector<Value>& outputs, size_t first_output) {
  if (shared_) return;  // written in place
  for (size_t i = 0; i < past_.size(); ++i) past_[i] = outputs[first_output + i].tensor();
}

void KvCache::reorder(std::span<const int32_t> source_rows, int64_t valid_length) {
  bool identity = true;
  for (size_t r = 0; r < source_rows.size(); ++r) identity = identity && source_rows[r] == static_cast<int32_t>(r);
  if (identity) return;
  for (Tensor& buffer : past_) {
    const int64_t heads = buffer.dim(1), length = buffer.dim(2);
    const size_t row_bytes = static_cast<size_t>(buffer.dim(3)) * dtype_size(buffer.dtype());
    const size_t valid_bytes = static_cast<size_t>(std::min(valid_length, length)) * row_bytes;
    const size_t head_stride = static_cast<size_t>(length) * row_bytes;
    // The source rows are read from a copy, as a row may be both read and overwritten.
    const std::vector<char> before(static_cast<const char*>(buffer.raw_data()),
                                   static_cast<const char*>(buffer.raw_data()) + buffer.bytes());
    char* data = static_cast<char*>(buffer.raw_data());
    for (int64_t r = 0; r < rows_; ++r) {
      const int64_t source = source_rows[static_cast<size_t>(r)];
      if (source == r) continue;
      for (int64_t h = 0; h < heads; ++h) {
        std::memcpy(data + (static_cast<size_t>(r * heads + h)) * head_stride,
                    before.data() + static_cast<size_t>(source * heads + h) * head_stride, valid_bytes);
      }
    }
  }
}

int64_t KvCache::capacity() const { return past_.empty() ? 0 : past_[0].dim(2); }

int64_t KvCache::bytes() const {
  int64_t total = 0;
  for (const Tensor& t : past_) total += static_cast<int64_t>(t.bytes());
  return total;
}

}  // namespace onyx::genai
