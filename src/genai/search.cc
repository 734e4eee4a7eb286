// Search: logits processors, greedy choice, sampling and beam search.
#include "genai/search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "onyx/status.h"

namespace onyx::genai {

void apply_repetition_penalty(std::span<float> logits, std::span<const int32_t> sequence, double penalty) {
  if (penalty == 1.0) return;
  std::vector<bool> seen(logits.size(), false);
  for (int32_t token : sequence) {
    if (token < 0 || static_cast<size_t>(token) >= logits.size() || seen[static_cast<size_t>(token)]) continue;
    seen[static_cast<size_t>(token)] = true;
    float& logit = logits[static_cast<size_t>(token)];
    logit = logit > 0 ? static_cast<float>(logit / penalty) : static_cast<float>(logit * penalty);
  }
}

void apply_no_repeat_ngram(std::span<float> logits, std::span<const int32_t> sequence, int64_t n) {
  const int64_t length = static_cast<int64_t>(sequence.size());
  if (n <= 0 || length + 1 < n) return;
  // Every earlier n-gram whose first n-1 tokens equal the last n-1 tokens bans its last token.
  const int64_t prefix = n - 1;
  for (int64_t start = 0; start + n <= length; ++start) {
    bool match = true;
    for (int64_t i = 0; i < prefix && match; ++i)
      match = sequence[static_cast<size_t>(start + i)] == sequence[static_cast<size_t>(length - prefix + i)];
    if (!match) continue;
    const int32_t banned = sequence[static_cast<size_t>(start + prefix)];
    if (banned >= 0 && static_cast<size_t>(banned) < logits.size())
      logits[static_cast<size_t>(banned)] = -std::numeric_limits<float>::infinity();
  }
}

void mask_tokens(std::span<float> logits, std::span<const int32_t> tokens) {
  for (int32_t token : tokens) {
    if (token >= 0 && static_cast<size_t>(token) < logits.size())
      logits[static_cast<size_t>(token)] = -std::numeric_limits<float>::infinity();
  }
}

int32_t choose_greedy(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

int32_t choose_sampled(std::span<const float> logits, int64_t top_k, double top_p, double temperature,
                       std::mt19937& rng) {
  const int64_t vocab = static_cast<int64_t>(logits.size());
  const int64_t k = (top_k <= 0 || top_k > vocab) ? vocab : top_k;
  if (temperature <= 0) throw Error(invalid_argument("search option temperature must be positive, got ", temperature));
  // Top-k by logit, largest first (lower index first on ties).
  std::vector<int32_t> order(static_cast<size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  auto larger = [&](int32_t a, int32_t b) {
    return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)] ||
           (logits[static_cast<size_t>(a)] == logits[static_cast<size_t>(b)] && a < b);
  };
  std::partial_sort(order.begin(), order.begin() + k, order.end(), larger);
  order.resize(static_cast<size_t>(k));
  // Softmax of the kept logits at the temperature.
  std::vector<double> probs(order.size());
  const double peak = logits[static_cast<size_t>(order[0])];
  double sum = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    probs[i] = std::exp((logits[static_cast<size_t>(order[i])] - peak) / temperature);
    sum += probs[i];
  }
  for (double& p : probs) p /= sum;
  // Top-p: the smallest prefix whose probability reaches top_p (at least one token).
  size_t keep = probs.size();
  if (top_p < 1.0) {
    double cumulative = 0;
    for (size_t i = 0; i < probs.size(); ++i) {
      cumulative += probs[i];
      if (cumulative >= top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  double kept = 0;
  for (size_t i = 0; i < keep; ++i) kept += probs[i];
  std::uniform_real_distribution<double> uniform(0.0, kept);
  const double draw = uniform(rng);
  double cumulative = 0;
  for (size_t i = 0; i < keep; ++i) {
    cumulative += probs[i];
    if (draw < cumulative) return order[i];
  }
  return order[keep - 1];
}

void log_softmax(std::span<float> logits) {
  const float peak = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float v : logits) sum += std::exp(static_cast<double>(v - peak));
  const float log_sum = static_cast<float>(std::log(sum)) + peak;
  for (float& v : logits) v -= log_sum;
}

// ---- beam search ------------------------------------------------------------------

BeamSearch::BeamSearch(int64_t batch, int64_t beams, double length_penalty, bool early_stopping,
                       int64_t num_return_sequences, std::vector<int32_t> eos_ids, int32_t pad_id)
    : batch_(batch),
      beams_(beams),
      length_penalty_(length_penalty),
      early_stopping_(early_stopping),
      num_return_(num_return_sequences),
      eos_ids_(std::move(eos_ids)),
      pad_id_(pad_id),
      beam_scores_(static_cast<size_t>(batch * beams), 0.0),
      groups_(static_cast<size_t>(batch)) {
  if (num_return_sequences > beams) {
    throw Error(invalid_argument("search option num_return_sequences (", num_return_sequences, ") exceeds num_beams (",
                                 beams, ")"));
  }
  // All beams of a group start from the same prompt: only the first may
  // expand at the first step, or the group would hold copies of one beam.
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t k = 1; k < beams; ++k) beam_scores_[static_cast<size_t>(b * beams + k)] = -1e9;
  }
}

void BeamSearch::add(Group& group, std::vector<int32_t> tokens, double sum_logprobs) const {
  const double score = sum_logprobs / std::pow(static_cast<double>(tokens.size()), length_penalty_);
  if (static_cast<int64_t>(group.hypotheses.size()) < beams_ || score > group.worst) {
    group.hypotheses.push_back({score, std::move(tokens)});
    if (static_cast<int64_t>(group.hypotheses.size()) > beams_) {
      auto worst = std::min_element(group.hypotheses.begin(), group.hypotheses.end(),
                                    [](const Hypothesis& a, const Hypothesis& b) { return a.score < b.score; });
      group.hypotheses.erase(worst);
    }
    group.worst = std::min_element(group.hypotheses.begin(), group.hypotheses.end(),
                                   [](const Hypothesis& a, const Hypothesis& b) { return a.score < b.score; })
                      ->score;
  }
}

bool BeamSearch::group_is_done(const Group& group, double best_sum_logprobs, int64_t length) const {
  if (static_cast<int64_t>(group.hypotheses.size()) < beams_) return false;
  if (early_stopping_) return true;
  return group.worst >= best_sum_logprobs / std::pow(static_cast<double>(length), length_penalty_);
}

BeamSearch::Step BeamSearch::step(std::span<const float> scores, int64_t vocab,
                                  const std::vector<std::vector<int32_t>>& sequences, int64_t /*max_length*/) {
  Step out;
  out.next_tokens.assign(static_cast<size_t>(batch_ * beams_), pad_id_);
  out.source_rows.resize(static_cast<size_t>(batch_ * beams_));
  std::vector<double> next_scores(static_cast<size_t>(batch_ * beams_), 0.0);
  for (int64_t b = 0; b < batch_; ++b) {
    Group& group = groups_[static_cast<size_t>(b)];
    if (group.done) {
      for (int64_t k = 0; k < beams_; ++k)
        out.source_rows[static_cast<size_t>(b * beams_ + k)] = static_cast<int32_t>(b * beams_ + k);
      continue;
    }
    // The 2 * beams best (beam, token) pairs of the group by total score.
    const int64_t candidates = beams_ * vocab;
    std::vector<double> total(static_cast<size_t>(candidates));
    for (int64_t k = 0; k < beams_; ++k) {
      const int64_t row = b * beams_ + k;
      for (int64_t v = 0; v < vocab; ++v) {
        total[static_cast<size_t>(k * vocab + v)] =
            beam_scores_[static_cast<size_t>(row)] + scores[static_cast<size_t>(row * vocab + v)];
      }
    }
    const int64_t keep = std::min<int64_t>(2 * beams_, candidates);
    std::vector<int64_t> order(static_cast<size_t>(candidates));
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + keep, order.end(), [&](int64_t x, int64_t y) {
      return total[static_cast<size_t>(x)] > total[static_cast<size_t>(y)] ||
             (total[static_cast<size_t>(x)] == total[static_cast<size_t>(y)] && x < y);
    });
    int64_t filled = 0;
    for (int64_t rank = 0; rank < keep && filled < beams_; ++rank) {
      const int64_t candidate = order[static_cast<size_t>(rank)];
      const int64_t beam = candidate / vocab;
      const int32_t token = static_cast<int32_t>(candidate % vocab);
      const int64_t row = b * beams_ + beam;
      const double score = total[static_cast<size_t>(candidate)];
      if (std::find(eos_ids_.begin(), eos_ids_.end(), token) != eos_ids_.end()) {
        // A finished hypothesis, kept only from the best `beams` candidates.
        if (rank < beams_) add(group, sequences[static_cast<size_t>(row)], score);
        continue;
      }
      const size_t target = static_cast<size_t>(b * beams_ + filled);
      out.next_tokens[target] = token;
      out.source_rows[target] = static_cast<int32_t>(row);
      next_scores[target] = score;
      ++filled;
    }
    const int64_t length = static_cast<int64_t>(sequences[static_cast<size_t>(b * beams_)].size()) + 1;
    const double best = total[static_cast<size_t>(order[0])];  // transformers: the best candidate of the step
    group.done = group_is_done(group, best, length);
  }
  for (size_t r = 0; r < next_scores.size(); ++r) {
    if (!groups_[r / static_cast<size_t>(beams_)].done) beam_scores_[r] = next_scores[r];
  }
  return out;
}

bool BeamSearch::done() const {
  return std::all_of(groups_.begin(), groups_.end(), [](const Group& g) { return g.done; });
}

std::vector<std::vector<int32_t>> BeamSearch::finalize(const std::vector<std::vector<int32_t>>& sequences) const {
  std::vector<std::vector<int32_t>> out;
  for (int64_t b = 0; b < batch_; ++b) {
    Group group = groups_[static_cast<size_t>(b)];
    if (!group.done) {
      for (int64_t k = 0; k < beams_; ++k) {
        const size_t row = static_cast<size_t>(b * beams_ + k);
        add(group, sequences[row], beam_scores_[row]);
      }
    }
    std::stable_sort(group.hypotheses.begin(), group.hypotheses.end(),
                     [](const Hypothesis& x, const Hypothesis& y) { return x.score > y.score; });
    for (int64_t i = 0; i < num_return_ && i < static_cast<int64_t>(group.hypotheses.size()); ++i) {
      out.push_back(group.hypotheses[static_cast<size_t>(i)].tokens);
    }
  }
  return out;
}

}  // namespace onyx::genai
