// Choosing the next token from logits: the logits processors
// (repetition penalty, min_length, no_repeat_ngram_size), greedy choice,
// sampling (top-k, then temperature, then top-p, as onnxruntime-genai) and
// beam search (as transformers' BeamSearchScorer). Pure functions and a
// small state class over host arrays, so tests drive them with synthetic
// logits.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace onyx::genai {

// transformers' RepetitionPenaltyLogitsProcessor: for each token already in
// `sequence`, positive logits are divided by `penalty`, negative multiplied.
void apply_repetition_penalty(std::span<float> logits, std::span<const int32_t> sequence, double penalty);
// Tokens that would repeat an n-gram of `sequence` get -inf.
void apply_no_repeat_ngram(std::span<float> logits, std::span<const int32_t> sequence, int64_t n);
// Every eos id gets -inf.
void mask_tokens(std::span<float> logits, std::span<const int32_t> tokens);

// The index of the largest logit (the first one on ties).
int32_t choose_greedy(std::span<const float> logits);

// Samples from the top_k logits (all when top_k <= 0), softened by
// temperature, cut to the smallest set whose probability reaches top_p.
int32_t choose_sampled(std::span<const float> logits, int64_t top_k, double top_p, double temperature,
                       std::mt19937& rng);

// log_softmax in place.
void log_softmax(std::span<float> logits);

// Beam search over `batch` groups of `beams` rows (transformers'
// BeamSearchScorer with its BeamHypotheses).
class BeamSearch {
 public:
  BeamSearch(int64_t batch, int64_t beams, double length_penalty, bool early_stopping, int64_t num_return_sequences,
             std::vector<int32_t> eos_ids, int32_t pad_id);

  struct Step {
    std::vector<int32_t> next_tokens;  // per row
    std::vector<int32_t> source_rows;  // per row: the row whose sequence (and cache) it continues
  };
  // `scores`: [batch * beams, vocab] log-probabilities after the processors;
  // `sequences` the rows' tokens so far. Adds beam scores, keeps the best
  // 2 * beams candidates per group, moves finished ones to the hypotheses.
  Step step(std::span<const float> scores, int64_t vocab, const std::vector<std::vector<int32_t>>& sequences,
            int64_t max_length);
  // Every group is done.
  bool done() const;
  // The running beams become hypotheses where a group is not done, and the
  // best num_return_sequences of each group are returned, best first.
  std::vector<std::vector<int32_t>> finalize(const std::vector<std::vector<int32_t>>& sequences) const;

 private:
  struct Hypothesis {
    double score;
    std::vector<int32_t> tokens;
  };
  struct Group {
    std::vector<Hypothesis> hypotheses;  // at most `beams`
    double worst = 1e9;
    bool done = false;
  };
  void add(Group& group, std::vector<int32_t> tokens, double sum_logprobs) const;
  bool group_is_done(const Group& group, double best_sum_logprobs, int64_t length) const;

  int64_t batch_, beams_;
  double length_penalty_;
  bool early_stopping_;
  int64_t num_return_;
  std::vector<int32_t> eos_ids_;
  int32_t pad_id_;
  std::vector<double> beam_scores_;  // per row
  std::vector<Group> groups_;
};

}  // namespace onyx::genai
