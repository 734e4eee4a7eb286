// GeneratorParams and Generator: the per-step inputs of the decoder
// (input_ids, attention_mask, position_ids, the bound cache), the logits
// processors and the choice of the next token.
//
// Cache layouts. With GroupQueryAttention each row's tokens are packed to
// the start of its cache and its length is its attention-mask row sum (the
// kernel's seqlens_k), so a batch of prompts of different lengths is padded
// on the right and padding is never attended; a row's positions start at 0.
// Other attentions read the mask where it lies: prompts are padded on the
// left, with zeros in the mask and positions counted over real tokens.
#include <algorithm>
#include <chrono>
#include <optional>

#include "genai/kv_cache.h"
#include "genai/model.h"
#include "genai/search.h"

namespace onyx::genai {

GeneratorParams::GeneratorParams(const Model& model) { search = model.impl().config.search; }

void GeneratorParams::set_search_option(const std::string& name, double value) {
  auto as_int = [&]() {
    if (value != static_cast<double>(static_cast<int64_t>(value))) {
      throw Error(invalid_argument("search option ", name, " expects a whole number, got ", value));
    }
    return static_cast<int64_t>(value);
  };
  if (name == "max_length")
    search.max_length = as_int();
  else if (name == "min_length")
    search.min_length = as_int();
  else if (name == "batch_size")
    search.batch_size = as_int();
  else if (name == "top_k")
    search.top_k = as_int();
  else if (name == "top_p")
    search.top_p = value;
  else if (name == "temperature")
    search.temperature = value;
  else if (name == "repetition_penalty")
    search.repetition_penalty = value;
  else if (name == "num_beams")
    search.num_beams = as_int();
  else if (name == "num_return_sequences")
    search.num_return_sequences = as_int();
  else if (name == "length_penalty")
    search.length_penalty = value;
  else if (name == "no_repeat_ngram_size")
    search.no_repeat_ngram_size = as_int();
  else if (name == "random_seed")
    search.random_seed = as_int();
  else if (name == "do_sample" || name == "early_stopping")
    set_search_option(name, value != 0.0);
  else if (name == "diversity_penalty" || name == "past_present_share_buffer") {
    // og's options that onyx reads from genai_config.json only; a value is accepted and ignored.
  } else {
    throw Error(
        invalid_argument("unknown search option '", name,
                         "' (expected max_length, min_length, batch_size, do_sample, top_k, top_p, temperature, "
                         "repetition_penalty, num_beams, num_return_sequences, length_penalty, early_stopping, "
                         "no_repeat_ngram_size or random_seed)"));
  }
}

void GeneratorParams::set_search_option(const std::string& name, bool value) {
  if (name == "do_sample")
    search.do_sample = value;
  else if (name == "early_stopping")
    search.early_stopping = value;
  else
    set_search_option(name, value ? 1.0 : 0.0);
}

struct Generator::Impl {
  Impl(const Model::Impl& m, const SearchOptions& options)
      : model(m),
        search(options),
        batch(options.batch_size),
        beams(options.num_beams),
        rows(options.batch_size * options.num_beams),
        max_length(m.max_length(options.max_length)),
        cache(m, rows, max_length) {}

  const Model::Impl& model;
  SearchOptions search;
  int64_t batch, beams, rows, max_length;
  KvCache cache;
  std::vector<std::vector<int32_t>> sequences;  // per row, real tokens only
  std::vector<int64_t> cached;                  // per row: tokens the cache holds
  std::vector<int64_t> left_padding;            // per row, other attentions: padded positions at the cache's start
  int64_t cache_width = 0;                      // other attentions: the cache's length
  std::vector<bool> done;
  std::vector<int32_t> next_tokens;
  std::vector<float> logits;  // [rows, vocab] of the last run
  bool logits_ready = false;
  std::mt19937 rng;
  std::optional<BeamSearch> beam;
  std::vector<std::vector<int32_t>> finals;  // beam search's returned sequences
  bool finalized = false;

  int64_t vocab() const { return model.config.vocab_size; }
  void run_model();
  void choose();
  bool is_eos(int32_t token) const {
    const auto& eos = model.config.eos_token_ids;
    return std::find(eos.begin(), eos.end(), token) != eos.end();
  }
};

namespace {

DataType input_dtype(const InferenceSession& session, const std::string& name) {
  for (const ValueMetadata& m : session.inputs()) {
    if (m.name == name) return m.type.elem_type;
  }
  return DataType::kInt64;
}

// A [rows, columns] integer tensor of `dtype` (int32 or int64) from int64 values.
Tensor integer_tensor(DataType dtype, int64_t rows, int64_t columns, const std::vector<int64_t>& values) {
  Tensor tensor(dtype, {rows, columns});
  if (dtype == DataType::kInt32) {
    for (size_t i = 0; i < values.size(); ++i) tensor.data<int32_t>()[i] = static_cast<int32_t>(values[i]);
  } else {
    std::copy(values.begin(), values.end(), tensor.data<int64_t>());
  }
  return tensor;
}

}  // namespace

void Generator::Impl::run_model() {
  const DecoderConfig& d = model.config.decoder;
  std::vector<int64_t> fresh(static_cast<size_t>(rows));
  bool all_fresh = true;
  int64_t step = 0;
  for (int64_t r = 0; r < rows; ++r) {
    fresh[static_cast<size_t>(r)] =
        static_cast<int64_t>(sequences[static_cast<size_t>(r)].size()) - cached[static_cast<size_t>(r)];
    all_fresh = all_fresh && cached[static_cast<size_t>(r)] == 0;
    step = std::max(step, fresh[static_cast<size_t>(r)]);
  }
  if (step == 0) throw Error(invalid_argument("Generator: no tokens to run; append tokens first"));
  if (!all_fresh) {
    for (int64_t r = 0; r < rows; ++r) {
      if (fresh[static_cast<size_t>(r)] != step) {
        throw Error(invalid_argument(
            "Generator: every sequence must get the same number of new tokens once the cache holds some (row ", r,
            " has ", fresh[static_cast<size_t>(r)], ", another ", step, ")"));
      }
    }
  }
  const bool packed = model.group_query_attention;
  const int32_t pad = model.config.pad_token_id;
  std::vector<int64_t> ids(static_cast<size_t>(rows * step), pad), positions(static_cast<size_t>(rows * step), 0);
  std::vector<int64_t> last_index(static_cast<size_t>(rows));
  int64_t width = 0;
  if (packed) {
    for (int64_t r = 0; r < rows; ++r)
      width = std::max(width, cached[static_cast<size_t>(r)] + fresh[static_cast<size_t>(r)]);
  } else {
    if (all_fresh) {
      cache_width = 0;
      cache.reset();
      for (int64_t r = 0; r < rows; ++r) left_padding[static_cast<size_t>(r)] = step - fresh[static_cast<size_t>(r)];
    }
    width = cache_width + step;
  }
  if (width > cache.capacity() && cache.shared()) {
    throw Error(invalid_argument("Generator: ", width, " tokens do not fit max_length ", max_length));
  }
  std::vector<int64_t> mask(static_cast<size_t>(rows * width), 0);
  for (int64_t r = 0; r < rows; ++r) {
    const auto& sequence = sequences[static_cast<size_t>(r)];
    const int64_t start = cached[static_cast<size_t>(r)], count = fresh[static_cast<size_t>(r)];
    const int64_t offset = packed ? 0 : step - count;  // left padding of this step's input
    for (int64_t s = 0; s < count; ++s) {
      ids[static_cast<size_t>(r * step + offset + s)] = sequence[static_cast<size_t>(start + s)];
      positions[static_cast<size_t>(r * step + offset + s)] = start + s;
    }
    last_index[static_cast<size_t>(r)] = packed ? count - 1 : step - 1;
    if (packed) {
      for (int64_t j = 0; j < start + count; ++j) mask[static_cast<size_t>(r * width + j)] = 1;
    } else {
      for (int64_t j = left_padding[static_cast<size_t>(r)]; j < width; ++j)
        mask[static_cast<size_t>(r * width + j)] = 1;
    }
  }
  IoBinding binding;
  const InferenceSession& session = *model.session;
  binding.bind_input(d.input_ids, integer_tensor(input_dtype(session, d.input_ids), rows, step, ids));
  if (model.has_attention_mask)
    binding.bind_input(d.attention_mask, integer_tensor(input_dtype(session, d.attention_mask), rows, width, mask));
  if (model.has_position_ids)
    binding.bind_input(d.position_ids, integer_tensor(input_dtype(session, d.position_ids), rows, step, positions));
  if (model.last_token_logits) {
    binding.bind_input(kLastTokenInput, integer_tensor(DataType::kInt64, rows, 1, last_index));
  }
  binding.bind_output(d.logits, Device{});
  cache.bind(binding);
  session.run_with_binding(binding);
  const std::vector<Value>& outputs = binding.outputs();
  cache.update(outputs, 1);
  const Tensor& out = outputs[0].tensor();
  const int64_t v = vocab();
  if (out.dim(out.rank() - 1) != v) {
    throw Error(invalid_model("output '", d.logits, "' is ", out.describe(),
                              ", its last dimension is not genai_config.json's model.vocab_size ", v));
  }
  const int64_t out_steps = out.rank() == 3 ? out.dim(1) : 1;
  logits.resize(static_cast<size_t>(rows * v));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t index = out_steps == 1 ? 0 : last_index[static_cast<size_t>(r)];
    std::copy_n(out.data<float>() + (r * out_steps + index) * v, v, logits.data() + r * v);
    cached[static_cast<size_t>(r)] += fresh[static_cast<size_t>(r)];
  }
  if (!packed) cache_width = width;
  logits_ready = true;
}

void Generator::Impl::choose() {
  const int64_t v = vocab();
  std::vector<float> scores = logits;
  for (int64_t r = 0; r < rows; ++r) {
    std::span<float> row(scores.data() + r * v, static_cast<size_t>(v));
    const auto& sequence = sequences[static_cast<size_t>(r)];
    if (beams > 1) log_softmax(row);
    apply_repetition_penalty(row, sequence, search.repetition_penalty);
    apply_no_repeat_ngram(row, sequence, search.no_repeat_ngram_size);
    if (static_cast<int64_t>(sequence.size()) < search.min_length) mask_tokens(row, model.config.eos_token_ids);
  }
  next_tokens.assign(static_cast<size_t>(rows), model.config.pad_token_id);
  if (beams > 1) {
    BeamSearch::Step chosen = beam->step(scores, v, sequences, max_length);
    std::vector<std::vector<int32_t>> reordered(static_cast<size_t>(rows));
    int64_t longest = 0;
    for (int64_t r = 0; r < rows; ++r) {
      reordered[static_cast<size_t>(r)] = sequences[static_cast<size_t>(chosen.source_rows[static_cast<size_t>(r)])];
      longest = std::max(longest, cached[static_cast<size_t>(r)]);
    }
    cache.reorder(chosen.source_rows, longest);
    sequences = std::move(reordered);
    next_tokens = chosen.next_tokens;
    for (int64_t r = 0; r < rows; ++r) sequences[static_cast<size_t>(r)].push_back(next_tokens[static_cast<size_t>(r)]);
    if (beam->done() || static_cast<int64_t>(sequences[0].size()) >= max_length) {
      finals = beam->finalize(sequences);
      finalized = true;
    }
    return;
  }
  for (int64_t r = 0; r < rows; ++r) {
    std::span<const float> row(scores.data() + r * v, static_cast<size_t>(v));
    int32_t token = model.config.pad_token_id;
    if (!done[static_cast<size_t>(r)]) {
      token = search.do_sample ? choose_sampled(row, search.top_k, search.top_p, search.temperature, rng)
                               : choose_greedy(row);
      if (is_eos(token)) done[static_cast<size_t>(r)] = true;
    }
    next_tokens[static_cast<size_t>(r)] = token;
    sequences[static_cast<size_t>(r)].push_back(token);
  }
  // As onnxruntime-genai, a batch stops when its longest sequence reaches
  // max_length: every row gets the same number of new tokens.
  for (const auto& sequence : sequences) {
    if (static_cast<int64_t>(sequence.size()) >= max_length) std::fill(done.begin(), done.end(), true);
  }
}

Generator::Generator(const Model& model, const GeneratorParams& params) {
  const SearchOptions& s = params.search;
  if (s.batch_size < 1)
    throw Error(invalid_argument("search option batch_size must be at least 1, got ", s.batch_size));
  if (s.num_beams < 1) throw Error(invalid_argument("search option num_beams must be at least 1, got ", s.num_beams));
  if (s.num_beams > 1 && s.do_sample)
    throw Error(invalid_argument("search options num_beams > 1 and do_sample are not supported together"));
  const int64_t max_length = model.impl().max_length(s.max_length);
  if (max_length > model.context_length()) {
    throw Error(invalid_argument("search option max_length (", max_length, ") exceeds the model's context_length (",
                                 model.context_length(), ")"));
  }
  impl_ = std::make_unique<Impl>(model.impl(), s);
  Impl& g = *impl_;
  g.sequences.resize(static_cast<size_t>(g.rows));
  g.cached.assign(static_cast<size_t>(g.rows), 0);
  g.left_padding.assign(static_cast<size_t>(g.rows), 0);
  g.done.assign(static_cast<size_t>(g.rows), false);
  const uint64_t seed = s.random_seed >= 0
                            ? static_cast<uint64_t>(s.random_seed)
                            : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  g.rng.seed(static_cast<std::mt19937::result_type>(seed));
  if (g.beams > 1) {
    g.beam.emplace(g.batch, g.beams, s.length_penalty, s.early_stopping, s.num_return_sequences,
                   g.model.config.eos_token_ids, g.model.config.pad_token_id);
  }
}

Generator::~Generator() = default;

void Generator::append_tokens(std::span<const int32_t> tokens) {
  Impl& g = *impl_;
  if (tokens.empty()) throw Error(invalid_argument("Generator.append_tokens: no tokens given"));
  if (tokens.size() % static_cast<size_t>(g.batch) != 0) {
    throw Error(invalid_argument("Generator.append_tokens: ", tokens.size(), " tokens do not split into batch_size ",
                                 g.batch, " rows"));
  }
  if (g.beams > 1 && !g.sequences[0].empty())
    throw Error(invalid_argument("Generator.append_tokens: with num_beams > 1 only the prompt can be appended"));
  const size_t width = tokens.size() / static_cast<size_t>(g.batch);
  const int32_t pad = g.model.config.pad_token_id;
  std::vector<std::vector<int32_t>> rows(static_cast<size_t>(g.batch));
  for (int64_t b = 0; b < g.batch; ++b) {
    std::span<const int32_t> row = tokens.subspan(static_cast<size_t>(b) * width, width);
    size_t first = 0, last = row.size();
    // A batch is padded with the pad id on either side; those are not tokens.
    if (g.batch > 1) {
      while (first < last && row[first] == pad) ++first;
      while (last > first && row[last - 1] == pad) --last;
      if (first == last)
        throw Error(invalid_argument("Generator.append_tokens: row ", b, " holds only pad tokens (", pad, ")"));
    }
    for (size_t i = first; i < last; ++i) {
      if (row[i] < 0 || row[i] >= g.vocab()) {
        throw Error(invalid_argument("Generator.append_tokens: token ", row[i], " is outside the vocabulary [0, ",
                                     g.vocab(), ")"));
      }
    }
    rows[static_cast<size_t>(b)].assign(row.begin() + static_cast<std::ptrdiff_t>(first),
                                        row.begin() + static_cast<std::ptrdiff_t>(last));
    const int64_t length = static_cast<int64_t>(g.sequences[static_cast<size_t>(b * g.beams)].size() +
                                                rows[static_cast<size_t>(b)].size());
    if (length > g.max_length) {
      throw Error(invalid_argument("Generator.append_tokens: the sequence would have ", length,
                                   " tokens, more than max_length ", g.max_length));
    }
  }
  for (int64_t r = 0; r < g.rows; ++r) {
    auto& sequence = g.sequences[static_cast<size_t>(r)];
    const auto& added = rows[static_cast<size_t>(r / g.beams)];
    sequence.insert(sequence.end(), added.begin(), added.end());
    g.done[static_cast<size_t>(r)] = static_cast<int64_t>(sequence.size()) >= g.max_length;
  }
  g.finalized = false;
  try {
    g.run_model();
  } catch (...) {
    // The generator stays as it was before the call.
    for (int64_t r = 0; r < g.rows; ++r) {
      auto& sequence = g.sequences[static_cast<size_t>(r)];
      sequence.resize(sequence.size() - rows[static_cast<size_t>(r / g.beams)].size());
    }
    throw;
  }
}

void Generator::generate_next_token() {
  Impl& g = *impl_;
  if (g.sequences[0].empty()) throw Error(invalid_argument("Generator.generate_next_token: append tokens first"));
  if (is_done())
    throw Error(invalid_argument(
        "Generator.generate_next_token: generation is done (every sequence reached eos or max_length)"));
  if (!g.logits_ready) g.run_model();
  g.choose();
  g.logits_ready = false;
}

bool Generator::is_done() const {
  const Impl& g = *impl_;
  if (g.beams > 1) return g.finalized;
  return std::all_of(g.done.begin(), g.done.end(), [](bool d) { return d; });
}

std::span<const int32_t> Generator::get_next_tokens() const { return impl_->next_tokens; }

std::vector<int32_t> Generator::get_sequence(size_t index) const {
  const Impl& g = *impl_;
  const auto& list = g.finalized ? g.finals : g.sequences;
  if (index >= list.size())
    throw Error(
        invalid_argument("Generator.get_sequence: index ", index, " is out of range (", list.size(), " sequences)"));
  return list[index];
}

int64_t Generator::sequence_count() const {
  const Impl& g = *impl_;
  return static_cast<int64_t>(g.finalized ? g.finals.size() : g.sequences.size());
}

void Generator::rewind_to(size_t length) {
  Impl& g = *impl_;
  if (g.beams > 1) throw Error(invalid_argument("Generator.rewind_to is not supported with num_beams > 1"));
  for (int64_t r = 0; r < g.rows; ++r) {
    auto& sequence = g.sequences[static_cast<size_t>(r)];
    if (length > sequence.size()) {
      throw Error(invalid_argument("Generator.rewind_to: length ", length, " is longer than the sequence (",
                                   sequence.size(), " tokens)"));
    }
  }
  if (!g.model.group_query_attention && g.batch > 1 && length > 0) {
    throw Error(
        invalid_argument("Generator.rewind_to: a batch is rewound only to 0 on models without GroupQueryAttention"));
  }
  for (int64_t r = 0; r < g.rows; ++r) {
    g.sequences[static_cast<size_t>(r)].resize(length);
    g.cached[static_cast<size_t>(r)] =
        std::min<int64_t>(g.cached[static_cast<size_t>(r)], static_cast<int64_t>(length));
    g.done[static_cast<size_t>(r)] = false;
  }
  if (!g.model.group_query_attention) {
    // The cache's length is its past input's: start again from the prompt's tokens.
    std::fill(g.cached.begin(), g.cached.end(), 0);
  }
  g.logits_ready = false;
  g.next_tokens.clear();
}

std::span<const float> Generator::get_logits() const { return impl_->logits; }

}  // namespace onyx::genai
