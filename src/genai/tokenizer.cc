// onyx::genai::Tokenizer (include/onyx/genai_tokenizer.h): tokenizer.json's
// pipeline as the `tokenizers` package runs it. Encoding: added tokens are
// cut out of the text first; each remaining part is normalized, cut into
// pre-tokens, and each pre-token goes through the BPE model; the
// post-processor adds BOS/EOS. Decoding maps ids to token strings and runs
// the decoder chain over them.
#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>
#include <unordered_map>

#include "common/json.h"
#include "genai/tokenizer_bpe.h"
#include "genai/tokenizer_split.h"
#include "genai/unicode.h"
#include "onyx/genai_tokenizer.h"
#include "onyx/status.h"

namespace onyx::genai {

namespace {

// Raised while reading tokenizer.json; the loader adds the file and the
// component it was reading.
[[noreturn]] void unsupported(const std::string& what) { throw Error(invalid_argument(what)); }

bool flag(const Json& object, std::string_view key, bool fallback = false) {
  const Json* value = object.find(key);
  return value == nullptr || value->is_null() ? fallback : value->as_bool();
}

std::string string_or(const Json& object, std::string_view key, std::string fallback = {}) {
  const Json* value = object.find(key);
  return value == nullptr || value->is_null() ? fallback : value->as_string();
}

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  if (from.empty() || text.find(from) == std::string::npos) return;
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  for (size_t hit; (hit = text.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(text, pos, hit - pos);
    out.append(to);
  }
  out.append(text, pos);
  text.swap(out);
}

// GPT-2's map of bytes to printable characters, which byte-level vocabularies use.
struct ByteLevelAlphabet {
  std::string byte_to_text[256];
  std::unordered_map<char32_t, uint8_t> char_to_byte;
  ByteLevelAlphabet() {
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const char32_t c = printable ? static_cast<char32_t>(b) : next++;
      unicode::append_utf8(byte_to_text[b], c);
      char_to_byte[c] = static_cast<uint8_t>(b);
    }
  }
};
const ByteLevelAlphabet& byte_level() {
  static const ByteLevelAlphabet alphabet;
  return alphabet;
}

// The text of a Replace's or Split's "pattern" when it is {"String": ...}.
std::string string_pattern(const Json& step, const char* component) {
  const Json& pattern = step.at("pattern");
  if (const Json* text = pattern.find("String")) return text->as_string();
  if (pattern.find("Regex") != nullptr) {
    unsupported(std::string(component) + " with the regex '" + pattern.at("Regex").as_string() + "' is not supported");
  }
  unsupported(std::string(component) + ": 'pattern' must be {\"String\": ...} or {\"Regex\": ...}");
}

enum class SplitBehavior { kIsolated, kRemoved, kMergedWithPrevious, kMergedWithNext, kContiguous };

SplitBehavior parse_behavior(const std::string& name) {
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  unsupported("unknown split behavior '" + name + "'");
}

struct NormalizerStep {
  enum class Kind { kNfc, kPrepend, kReplace } kind;
  std::string from, to;
};

enum class PrependScheme { kAlways, kFirst, kNever };

struct PreTokenizerStep {
  enum class Kind { kByteLevel, kSplitRegex, kSplitString, kMetaspace } kind;
  bool add_prefix_space = false;
  bool use_regex = true;
  SplitRegex regex = SplitRegex::kGpt2;
  std::string pattern;  // kSplitString's pattern, kMetaspace's replacement
  SplitBehavior behavior = SplitBehavior::kIsolated;
  PrependScheme prepend_scheme = PrependScheme::kAlways;
  bool split = true;
};

struct DecoderStep {
  enum class Kind { kByteLevel, kReplace, kByteFallback, kFuse, kStrip, kMetaspace } kind;
  std::string from, to;  // kReplace; kStrip's content in `from`; kMetaspace's replacement in `from`
  size_t start = 0, stop = 0;
  PrependScheme prepend_scheme = PrependScheme::kAlways;
};

struct AddedToken {
  std::string content;
  std::string match;  // what is looked for: content, normalized when `normalized`
  int32_t id = -1;
  bool special = false, normalized = false, lstrip = false, rstrip = false, single_word = false;
};

// A part of the text on its way to the model: `original_start` is where it
// began in the caller's text (Metaspace's prepend_scheme "first" asks).
struct Piece {
  std::string text;
  size_t original_start = 0;
};

// Cuts `text` at `matches` (byte ranges, in order, not overlapping) as
// `tokenizers` does for each split behavior.
void split_piece(const Piece& piece, const std::vector<std::pair<size_t, size_t>>& matches, SplitBehavior behavior,
                 std::vector<Piece>& out) {
  struct Part {
    size_t begin, end;
    bool is_match;
  };
  std::vector<Part> parts;
  size_t pos = 0;
  for (auto [begin, end] : matches) {
    if (begin > pos) parts.push_back({pos, begin, false});
    parts.push_back({begin, end, true});
    pos = end;
  }
  if (pos < piece.text.size()) parts.push_back({pos, piece.text.size(), false});

  std::vector<std::pair<size_t, size_t>> ranges;
  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (const Part& p : parts) ranges.emplace_back(p.begin, p.end);
      break;
    case SplitBehavior::kRemoved:
      for (const Part& p : parts) {
        if (!p.is_match) ranges.emplace_back(p.begin, p.end);
      }
      break;
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const Part& p : parts) {
        if (p.is_match && !previous_match && !ranges.empty()) {
          ranges.back().second = p.end;
        } else {
          ranges.emplace_back(p.begin, p.end);
        }
        previous_match = p.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool previous_match = false;  // of the part after, walking backwards
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (it->is_match && !previous_match && !ranges.empty()) {
          ranges.back().first = it->begin;
        } else {
          ranges.emplace_back(it->begin, it->end);
        }
        previous_match = it->is_match;
      }
      std::reverse(ranges.begin(), ranges.end());
      break;
    }
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (const Part& p : parts) {
        if (p.is_match && previous_match) {
          ranges.back().second = p.end;
        } else {
          ranges.emplace_back(p.begin, p.end);
        }
        previous_match = p.is_match;
      }
      break;
    }
  }
  for (auto [begin, end] : ranges) {
    if (end > begin) out.push_back({piece.text.substr(begin, end - begin), piece.original_start + begin});
  }
}

void find_string_matches(std::string_view text, std::string_view pattern,
                         std::vector<std::pair<size_t, size_t>>& matches) {
  if (pattern.empty()) return;
  for (size_t pos = text.find(pattern); pos != std::string_view::npos; pos = text.find(pattern, pos + pattern.size())) {
    matches.emplace_back(pos, pos + pattern.size());
  }
}

bool is_byte_token(std::string_view token, uint8_t& byte) {
  if (token.size() != 6 || token.substr(0, 3) != "<0x" || token[5] != '>') return false;
  int value = 0;
  for (char c : token.substr(3, 2)) {
    int digit = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                       : -1;
    if (digit < 0) return false;
    value = value * 16 + digit;
  }
  byte = static_cast<uint8_t>(value);
  return true;
}

std::string read_text_file(const std::string& path, bool& found) {
  std::ifstream in(path, std::ios::binary);
  found = static_cast<bool>(in);
  if (!found) return {};
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace

struct Tokenizer::Impl {
  std::string file;  // named in errors
  std::vector<NormalizerStep> normalizer;
  std::vector<PreTokenizerStep> pre_tokenizer;
  std::unique_ptr<BpeModel> model;
  std::vector<AddedToken> added;
  std::unordered_map<int32_t, size_t> added_by_id;
  TokenMap added_by_content;
  bool any_normalized_added = false, any_raw_added = false;
  std::vector<int32_t> prefix_ids, suffix_ids;  // the post-processor's, around the text's ids
  bool has_decoder = false;
  std::vector<DecoderStep> decoder;
  int32_t bos = -1, eos = -1, pad = -1;

  void load(const Json& root, const Json* config);
  void load_normalizer(const Json& node);
  void load_pre_tokenizer(const Json& node);
  void load_post_processor(const Json& node);
  void load_decoder(const Json& node);

  std::string normalize(std::string text) const;
  void pre_tokenize(std::vector<Piece>& pieces) const;
  // Cuts the added tokens (those with normalized == `normalized`) out of
  // `piece`: appends the parts between them to `parts` with id -1, and the
  // tokens with their id.
  void split_added(const Piece& piece, bool normalized, std::vector<std::pair<Piece, int32_t>>& parts) const;
  void encode_plain(const Piece& piece, std::vector<int32_t>& ids) const;
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const;
  const std::string& token_of(int32_t id) const;
  bool is_special(int32_t id) const {
    auto it = added_by_id.find(id);
    return it != added_by_id.end() && added[it->second].special;
  }
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const;
  int32_t token_to_id(std::string_view token) const {
    if (auto it = added_by_content.find(token); it != added_by_content.end()) return it->second;
    return model->token_to_id(token);
  }
};

void Tokenizer::Impl::load_normalizer(const Json& node) {
  if (node.is_null()) return;
  const std::string type = node.at("type").as_string();
  if (type == "Sequence") {
    for (const Json& step : node.at("normalizers").as_array()) load_normalizer(step);
  } else if (type == "NFC") {
    normalizer.push_back({NormalizerStep::Kind::kNfc, {}, {}});
  } else if (type == "Prepend") {
    normalizer.push_back({NormalizerStep::Kind::kPrepend, node.at("prepend").as_string(), {}});
  } else if (type == "Replace") {
    normalizer.push_back(
        {NormalizerStep::Kind::kReplace, string_pattern(node, "normalizer Replace"), node.at("content").as_string()});
  } else {
    unsupported("the normalizer '" + type + "' is not supported (supported: NFC, Prepend, Replace, Sequence)");
  }
}

void Tokenizer::Impl::load_pre_tokenizer(const Json& node) {
  if (node.is_null()) return;
  const std::string type = node.at("type").as_string();
  PreTokenizerStep step{};
  if (type == "Sequence") {
    for (const Json& item : node.at("pretokenizers").as_array()) load_pre_tokenizer(item);
    return;
  }
  if (type == "ByteLevel") {
    step.kind = PreTokenizerStep::Kind::kByteLevel;
    step.add_prefix_space = flag(node, "add_prefix_space", true);
    step.use_regex = flag(node, "use_regex", true);
  } else if (type == "Split") {
    if (flag(node, "invert")) unsupported("the pre-tokenizer Split with invert: true is not supported");
    step.behavior = parse_behavior(node.at("behavior").as_string());
    const Json& pattern = node.at("pattern");
    if (const Json* regex = pattern.find("Regex")) {
      const auto known = find_split_regex(regex->as_string());
      if (!known) {
        unsupported("the pre-tokenizer Split's regex '" + regex->as_string() +
                    "' is not one onyx knows (GPT-2's, Llama 3's or Qwen2's)");
      }
      step.kind = PreTokenizerStep::Kind::kSplitRegex;
      step.regex = *known;
    } else {
      step.kind = PreTokenizerStep::Kind::kSplitString;
      step.pattern = string_pattern(node, "pre-tokenizer Split");
    }
  } else if (type == "Metaspace") {
    step.kind = PreTokenizerStep::Kind::kMetaspace;
    step.pattern = string_or(node, "replacement", "\xE2\x96\x81");
    step.split = flag(node, "split", true);
    const std::string scheme =
        string_or(node, "prepend_scheme", flag(node, "add_prefix_space", true) ? "always" : "never");
    if (scheme == "always") {
      step.prepend_scheme = PrependScheme::kAlways;
    } else if (scheme == "first") {
      step.prepend_scheme = PrependScheme::kFirst;
    } else if (scheme == "never") {
      step.prepend_scheme = PrependScheme::kNever;
    } else {
      unsupported("Metaspace prepend_scheme '" + scheme + "' is not always, first or never");
    }
  } else {
    unsupported("the pre-tokenizer '" + type + "' is not supported (supported: ByteLevel, Split, Metaspace, Sequence)");
  }
  pre_tokenizer.push_back(step);
}

void Tokenizer::Impl::load_post_processor(const Json& node) {
  if (node.is_null()) return;
  const std::string type = node.at("type").as_string();
  if (type == "Sequence") {
    for (const Json& item : node.at("processors").as_array()) load_post_processor(item);
  } else if (type == "ByteLevel") {
    // Adjusts offsets only; the ids stay.
  } else if (type == "TemplateProcessing") {
    const Json& special_tokens = node.at("special_tokens");
    std::vector<int32_t>* target = &prefix_ids;
    bool saw_sequence = false;
    for (const Json& item : node.at("single").as_array()) {
      if (const Json* sequence = item.find("Sequence")) {
        if (sequence->at("id").as_string() != "A" || saw_sequence) {
          unsupported("TemplateProcessing 'single' must hold the sequence $A once");
        }
        saw_sequence = true;
        target = &suffix_ids;
      } else if (const Json* special = item.find("SpecialToken")) {
        const std::string& name = special->at("id").as_string();
        const Json* entry = special_tokens.find(name);
        if (entry == nullptr) unsupported("TemplateProcessing: special token '" + name + "' is not in special_tokens");
        for (const Json& id : entry->at("ids").as_array()) target->push_back(static_cast<int32_t>(id.as_int()));
      } else {
        unsupported("TemplateProcessing 'single' items must be Sequence or SpecialToken");
      }
    }
    if (!saw_sequence) unsupported("TemplateProcessing 'single' does not hold $A");
  } else {
    unsupported("the post-processor '" + type +
                "' is not supported (supported: TemplateProcessing, ByteLevel, Sequence)");
  }
}

void Tokenizer::Impl::load_decoder(const Json& node) {
  if (node.is_null()) return;
  has_decoder = true;
  const std::string type = node.at("type").as_string();
  DecoderStep step{};
  if (type == "Sequence") {
    for (const Json& item : node.at("decoders").as_array()) load_decoder(item);
    return;
  }
  if (type == "ByteLevel") {
    step.kind = DecoderStep::Kind::kByteLevel;
  } else if (type == "Replace") {
    step.kind = DecoderStep::Kind::kReplace;
    step.from = string_pattern(node, "decoder Replace");
    step.to = node.at("content").as_string();
  } else if (type == "ByteFallback") {
    step.kind = DecoderStep::Kind::kByteFallback;
  } else if (type == "Fuse") {
    step.kind = DecoderStep::Kind::kFuse;
  } else if (type == "Strip") {
    step.kind = DecoderStep::Kind::kStrip;
    step.from = node.at("content").as_string();
    step.start = static_cast<size_t>(node.at("start").as_int());
    step.stop = static_cast<size_t>(node.at("stop").as_int());
  } else if (type == "Metaspace") {
    step.kind = DecoderStep::Kind::kMetaspace;
    step.from = string_or(node, "replacement", "\xE2\x96\x81");
    const std::string scheme =
        string_or(node, "prepend_scheme", flag(node, "add_prefix_space", true) ? "always" : "never");
    step.prepend_scheme = scheme == "never" ? PrependScheme::kNever : PrependScheme::kAlways;
  } else {
    unsupported("the decoder '" + type +
                "' is not supported (supported: ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace, Sequence)");
  }
  decoder.push_back(step);
}

void Tokenizer::Impl::load(const Json& root, const Json* config) {
  std::string where = "model";
  try {
    const Json& model_json = root.at("model");
    const std::string type = string_or(model_json, "type", "BPE");
    if (type != "BPE") unsupported("the model type '" + type + "' is not supported (supported: BPE)");
    model = std::make_unique<BpeModel>(model_json, file);

    where = "normalizer";
    if (const Json* node = root.find("normalizer")) load_normalizer(*node);
    where = "pre_tokenizer";
    if (const Json* node = root.find("pre_tokenizer")) load_pre_tokenizer(*node);
    where = "post_processor";
    if (const Json* node = root.find("post_processor")) load_post_processor(*node);
    where = "decoder";
    if (const Json* node = root.find("decoder")) load_decoder(*node);
    where = "truncation";
    if (const Json* node = root.find("truncation"); node != nullptr && !node->is_null()) {
      unsupported("truncation is not supported (set it to null)");
    }
    where = "padding";
    if (const Json* node = root.find("padding"); node != nullptr && !node->is_null()) {
      const Json* strategy = node->find("strategy");
      if (strategy != nullptr && strategy->kind() != Json::Kind::kString) {
        unsupported("padding to a fixed length is not supported (set it to null)");
      }
    }

    where = "added_tokens";
    if (const Json* tokens = root.find("added_tokens"); tokens != nullptr && !tokens->is_null()) {
      for (const Json& item : tokens->as_array()) {
        AddedToken token;
        token.content = item.at("content").as_string();
        token.id = static_cast<int32_t>(item.at("id").as_int());
        token.special = flag(item, "special");
        token.normalized = flag(item, "normalized", !token.special);
        token.lstrip = flag(item, "lstrip");
        token.rstrip = flag(item, "rstrip");
        token.single_word = flag(item, "single_word");
        token.match = token.normalized ? normalize(token.content) : token.content;
        if (token.content.empty()) unsupported("an added token has empty content");
        (token.normalized ? any_normalized_added : any_raw_added) = true;
        added_by_id[token.id] = added.size();
        added_by_content[token.content] = token.id;
        added.push_back(std::move(token));
      }
    }
  } catch (const Error& e) {
    throw Error(invalid_argument(file, ": ", where, ": ", e.what()));
  }

  // bos/eos/pad: tokenizer_config.json names them; without it, BOS is the
  // post-processor's first added token.
  auto config_token = [&](const char* key) -> int32_t {
    if (config == nullptr) return -1;
    const Json* value = config->find(key);
    if (value == nullptr || value->is_null()) return -1;
    if (value->kind() == Json::Kind::kString) return token_to_id(value->as_string());
    if (value->kind() == Json::Kind::kObject && value->find("content") != nullptr) {
      return token_to_id(value->at("content").as_string());
    }
    return -1;
  };
  bos = config_token("bos_token");
  eos = config_token("eos_token");
  pad = config_token("pad_token");
  if (bos < 0 && !prefix_ids.empty()) bos = prefix_ids.front();
  if (eos < 0 && !suffix_ids.empty()) eos = suffix_ids.back();
  // transformers applies add_bos_token / add_eos_token through the
  // post-processor it writes; a file without one gets them here.
  if (config != nullptr && prefix_ids.empty() && suffix_ids.empty()) {
    const Json* node = root.find("post_processor");
    if (node == nullptr || node->is_null()) {
      if (flag(*config, "add_bos_token") && bos >= 0) prefix_ids.push_back(bos);
      if (flag(*config, "add_eos_token") && eos >= 0) suffix_ids.push_back(eos);
    }
  }
}

std::string Tokenizer::Impl::normalize(std::string text) const {
  for (const NormalizerStep& step : normalizer) {
    switch (step.kind) {
      case NormalizerStep::Kind::kNfc:
        text = unicode::nfc(text);
        break;
      case NormalizerStep::Kind::kPrepend:
        if (!text.empty()) text.insert(0, step.from);
        break;
      case NormalizerStep::Kind::kReplace:
        replace_all(text, step.from, step.to);
        break;
    }
  }
  return text;
}

void Tokenizer::Impl::pre_tokenize(std::vector<Piece>& pieces) const {
  std::vector<Piece> next;
  std::vector<std::pair<size_t, size_t>> matches;
  const ByteLevelAlphabet& alphabet = byte_level();
  for (const PreTokenizerStep& step : pre_tokenizer) {
    next.clear();
    for (Piece& piece : pieces) {
      matches.clear();
      switch (step.kind) {
        case PreTokenizerStep::Kind::kByteLevel: {
          if (step.add_prefix_space && piece.text[0] != ' ') piece.text.insert(0, " ");
          std::vector<Piece> parts;
          if (step.use_regex) {
            split_by_regex(SplitRegex::kGpt2, piece.text, matches);
            split_piece(piece, matches, SplitBehavior::kIsolated, parts);
          } else {
            parts.push_back(std::move(piece));
          }
          for (Piece& part : parts) {
            std::string mapped;
            mapped.reserve(part.text.size() * 2);
            for (char c : part.text) mapped += alphabet.byte_to_text[static_cast<unsigned char>(c)];
            next.push_back({std::move(mapped), part.original_start});
          }
          break;
        }
        case PreTokenizerStep::Kind::kSplitRegex:
          split_by_regex(step.regex, piece.text, matches);
          split_piece(piece, matches, step.behavior, next);
          break;
        case PreTokenizerStep::Kind::kSplitString:
          find_string_matches(piece.text, step.pattern, matches);
          split_piece(piece, matches, step.behavior, next);
          break;
        case PreTokenizerStep::Kind::kMetaspace: {
          replace_all(piece.text, " ", step.pattern);
          const bool starts = piece.text.compare(0, step.pattern.size(), step.pattern) == 0;
          if (!starts && (step.prepend_scheme == PrependScheme::kAlways ||
                          (step.prepend_scheme == PrependScheme::kFirst && piece.original_start == 0))) {
            piece.text.insert(0, step.pattern);
          }
          if (step.split) {
            find_string_matches(piece.text, step.pattern, matches);
            split_piece(piece, matches, SplitBehavior::kMergedWithNext, next);
          } else {
            next.push_back(std::move(piece));
          }
          break;
        }
      }
    }
    pieces.swap(next);
  }
}

void Tokenizer::Impl::split_added(const Piece& piece, bool normalized,
                                  std::vector<std::pair<Piece, int32_t>>& parts) const {
  const std::string& text = piece.text;
  auto is_word_char = [](char32_t c) { return unicode::is_letter(c) || unicode::is_number(c) || c == '_'; };
  size_t emitted = 0;  // text before this is in parts
  size_t pos = 0;
  while (pos < text.size()) {
    // The longest token starting here (leftmost-longest, as tokenizers' Aho-Corasick).
    const AddedToken* best = nullptr;
    for (const AddedToken& token : added) {
      if (token.normalized != normalized || token.match.empty()) continue;
      if (best != nullptr && token.match.size() <= best->match.size()) continue;
      if (text.compare(pos, token.match.size(), token.match) == 0) best = &token;
    }
    if (best == nullptr) {
      ++pos;
      continue;
    }
    size_t begin = pos, end = pos + best->match.size();
    if (best->single_word) {
      bool ok = true;
      if (begin > 0) {
        size_t p = begin - 1;
        while (p > 0 && (static_cast<unsigned char>(text[p]) & 0xC0) == 0x80) --p;
        size_t q = p;
        ok = !is_word_char(unicode::next_code_point(text, q));
      }
      if (ok && end < text.size()) {
        size_t q = end;
        ok = !is_word_char(unicode::next_code_point(text, q));
      }
      if (!ok) {
        pos = end;
        continue;
      }
    }
    if (best->lstrip) {
      while (begin > emitted) {
        size_t p = begin - 1;
        while (p > emitted && (static_cast<unsigned char>(text[p]) & 0xC0) == 0x80) --p;
        size_t q = p;
        if (!unicode::is_space(unicode::next_code_point(text, q))) break;
        begin = p;
      }
    }
    if (best->rstrip) {
      while (end < text.size()) {
        size_t q = end;
        if (!unicode::is_space(unicode::next_code_point(text, q))) break;
        end = q;
      }
    }
    if (begin > emitted) parts.push_back({{text.substr(emitted, begin - emitted), piece.original_start + emitted}, -1});
    parts.push_back({{{}, piece.original_start + begin}, best->id});
    emitted = end;
    pos = end;
  }
  if (emitted < text.size()) parts.push_back({{text.substr(emitted), piece.original_start + emitted}, -1});
}

void Tokenizer::Impl::encode_plain(const Piece& raw, std::vector<int32_t>& ids) const {
  Piece normalized{normalize(raw.text), raw.original_start};
  if (normalized.text.empty()) return;
  std::vector<std::pair<Piece, int32_t>> parts;
  if (any_normalized_added) {
    split_added(normalized, true, parts);
  } else {
    parts.push_back({std::move(normalized), -1});
  }
  std::vector<Piece> pieces;
  for (auto& [piece, id] : parts) {
    if (id >= 0) {
      ids.push_back(id);
      continue;
    }
    pieces.clear();
    pieces.push_back(std::move(piece));
    pre_tokenize(pieces);
    for (const Piece& word : pieces) model->encode_word(word.text, ids);
  }
}

std::vector<int32_t> Tokenizer::Impl::encode(std::string_view text, bool add_special_tokens) const {
  std::vector<int32_t> ids;
  if (add_special_tokens) ids = prefix_ids;
  Piece whole{std::string(text), 0};
  if (any_raw_added) {
    std::vector<std::pair<Piece, int32_t>> parts;
    split_added(whole, false, parts);
    for (const auto& [piece, id] : parts) {
      if (id >= 0) {
        ids.push_back(id);
      } else {
        encode_plain(piece, ids);
      }
    }
  } else if (!text.empty()) {
    encode_plain(whole, ids);
  }
  if (add_special_tokens) ids.insert(ids.end(), suffix_ids.begin(), suffix_ids.end());
  return ids;
}

const std::string& Tokenizer::Impl::token_of(int32_t id) const {
  if (auto it = added_by_id.find(id); it != added_by_id.end()) return added[it->second].match;
  const std::string* token = model->id_to_token(id);
  if (token == nullptr) {
    throw Error(invalid_argument("Tokenizer::decode: id ", id, " is not in the vocabulary of ", file, " (",
                                 model->vocab_size(), " ids)"));
  }
  return *token;
}

std::string Tokenizer::Impl::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    const std::string& token = token_of(id);
    if (skip_special_tokens && is_special(id)) continue;
    tokens.push_back(token);
  }
  if (!has_decoder) {
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0) out += ' ';
      out += tokens[i];
    }
    return out;
  }
  const ByteLevelAlphabet& alphabet = byte_level();
  for (const DecoderStep& step : decoder) {
    switch (step.kind) {
      case DecoderStep::Kind::kByteLevel: {
        std::string bytes;
        for (const std::string& token : tokens) {
          const size_t start = bytes.size();
          bool mapped = true;
          for (size_t pos = 0; pos < token.size();) {
            auto it = alphabet.char_to_byte.find(unicode::next_code_point(token, pos));
            if (it == alphabet.char_to_byte.end()) {
              mapped = false;
              break;
            }
            bytes.push_back(static_cast<char>(it->second));
          }
          // A token with a character outside the alphabet (an added token) goes as it is.
          if (!mapped) bytes.replace(start, std::string::npos, token);
        }
        tokens.assign(1, unicode::utf8_lossy(bytes));
        break;
      }
      case DecoderStep::Kind::kReplace:
        for (std::string& token : tokens) replace_all(token, step.from, step.to);
        break;
      case DecoderStep::Kind::kByteFallback: {
        std::vector<std::string> out;
        std::string pending;
        auto flush = [&] {
          if (pending.empty()) return;
          if (unicode::is_valid_utf8(pending)) {
            out.push_back(pending);
          } else {
            for (size_t i = 0; i < pending.size(); ++i) out.emplace_back("\xEF\xBF\xBD");
          }
          pending.clear();
        };
        for (std::string& token : tokens) {
          uint8_t byte = 0;
          if (is_byte_token(token, byte)) {
            pending.push_back(static_cast<char>(byte));
          } else {
            flush();
            out.push_back(std::move(token));
          }
        }
        flush();
        tokens.swap(out);
        break;
      }
      case DecoderStep::Kind::kFuse: {
        std::string joined;
        for (const std::string& token : tokens) joined += token;
        tokens.assign(1, std::move(joined));
        break;
      }
      case DecoderStep::Kind::kStrip:
        for (std::string& token : tokens) {
          const std::string& c = step.from;
          size_t begin = 0, end = token.size();
          for (size_t i = 0; i < step.start && token.compare(begin, c.size(), c) == 0 && begin + c.size() <= end; ++i) {
            begin += c.size();
          }
          for (size_t i = 0;
               i < step.stop && end >= begin + c.size() && token.compare(end - c.size(), c.size(), c) == 0; ++i) {
            end -= c.size();
          }
          token = token.substr(begin, end - begin);
        }
        break;
      case DecoderStep::Kind::kMetaspace:
        for (size_t i = 0; i < tokens.size(); ++i) {
          const bool drop = i == 0 && step.prepend_scheme != PrependScheme::kNever;
          replace_all(tokens[i], step.from, drop ? "" : " ");
        }
        break;
    }
  }
  std::string out;
  for (const std::string& token : tokens) out += token;
  return out;
}

Tokenizer Tokenizer::from_json(std::string_view tokenizer_json, std::string_view config_json) {
  return Tokenizer(std::shared_ptr<const Impl>([&] {
    auto impl = std::make_shared<Impl>();
    impl->file = "tokenizer.json";
    Result<Json> root = parse_json(tokenizer_json);
    if (!root.is_ok()) throw Error(invalid_argument(impl->file, ": ", root.status().message()));
    Result<Json> config = Json();
    if (!config_json.empty()) {
      config = parse_json(config_json, true);
      if (!config.is_ok()) throw Error(invalid_argument("tokenizer_config.json: ", config.status().message()));
      if (config->kind() != Json::Kind::kObject)
        throw Error(invalid_argument("tokenizer_config.json: expected an object"));
    }
    if (root->kind() != Json::Kind::kObject) throw Error(invalid_argument(impl->file, ": expected an object"));
    impl->load(*root, config_json.empty() ? nullptr : &config.value());
    return impl;
  }()));
}

Tokenizer Tokenizer::from_folder(const std::string& folder) {
  const std::string path = folder + "/tokenizer.json";
  bool found = false;
  const std::string text = read_text_file(path, found);
  if (!found) throw Error(invalid_argument("Tokenizer: cannot read ", path));
  const std::string config_path = folder + "/tokenizer_config.json";
  bool config_found = false;
  const std::string config = read_text_file(config_path, config_found);
  auto impl = std::make_shared<Impl>();
  impl->file = path;
  Result<Json> root = parse_json(text);
  if (!root.is_ok()) throw Error(invalid_argument(path, ": ", root.status().message()));
  if (root->kind() != Json::Kind::kObject) throw Error(invalid_argument(path, ": expected an object"));
  Result<Json> config_root = Json();
  if (config_found && !config.empty()) {
    config_root = parse_json(config, true);
    if (!config_root.is_ok()) throw Error(invalid_argument(config_path, ": ", config_root.status().message()));
    if (config_root->kind() != Json::Kind::kObject) throw Error(invalid_argument(config_path, ": expected an object"));
  }
  try {
    impl->load(*root, config_found && !config.empty() ? &config_root.value() : nullptr);
  } catch (const Error& e) {
    // Settings of tokenizer_config.json of the wrong type.
    if (std::string_view(e.what()).starts_with(path)) throw;
    throw Error(invalid_argument(config_path, ": ", e.what()));
  }
  return Tokenizer(std::shared_ptr<const Impl>(std::move(impl)));
}

Tokenizer::Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(const Tokenizer&) = default;
Tokenizer& Tokenizer::operator=(const Tokenizer&) = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  if (!unicode::is_valid_utf8(text)) throw Error(invalid_argument("Tokenizer::encode: the text is not valid UTF-8"));
  return impl_->encode(text, add_special_tokens);
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  return impl_->decode(ids, skip_special_tokens);
}

int32_t Tokenizer::token_to_id(std::string_view token) const { return impl_->token_to_id(token); }

std::string Tokenizer::id_to_token(int32_t id) const {
  // A normalized added token is known by its normalized text, as in `tokenizers`.
  if (auto it = impl_->added_by_id.find(id); it != impl_->added_by_id.end()) return impl_->added[it->second].match;
  const std::string* token = impl_->model->id_to_token(id);
  return token == nullptr ? std::string() : *token;
}

int64_t Tokenizer::vocab_size() const {
  int64_t size = static_cast<int64_t>(impl_->model->vocab().size());
  for (const AddedToken& token : impl_->added) {
    if (impl_->model->token_to_id(token.content) < 0) ++size;
  }
  return size;
}

int32_t Tokenizer::bos_token_id() const { return impl_->bos; }
int32_t Tokenizer::eos_token_id() const { return impl_->eos; }
int32_t Tokenizer::pad_token_id() const { return impl_->pad; }

TokenizerStream Tokenizer::create_stream() const { return TokenizerStream(impl_); }

std::string TokenizerStream::decode(int32_t id) {
  ids_.push_back(id);
  std::string text = impl_->decode(ids_, true);
  // Hold text back while it ends in an unfinished character (which decodes
  // as U+FFFD) or shrank (a byte-fallback run that is not yet valid UTF-8).
  if (text.size() < emitted_bytes_ || std::string_view(text).ends_with("\xEF\xBF\xBD")) {
    return {};
  }
  std::string out = text.substr(emitted_bytes_);
  emitted_bytes_ = text.size();
  // Keeps decoding cheap over a long generation: later text depends only on
  // the last few tokens, so forget the rest, starting the window at a token
  // that is not a byte of a byte-fallback run.
  constexpr size_t kKeep = 4, kMaxWindow = 32;
  if (ids_.size() > kMaxWindow) {
    for (size_t start = ids_.size() - kKeep; start > 0; --start) {
      uint8_t byte = 0;
      const std::string token = impl_->model->id_to_token(ids_[start]) ? *impl_->model->id_to_token(ids_[start]) : "";
      if (impl_->added_by_id.count(ids_[start]) == 0 && is_byte_token(token, byte)) continue;
      ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(start));
      emitted_bytes_ = impl_->decode(ids_, true).size();
      break;
    }
  }
  return out;
}

void TokenizerStream::reset() {
  ids_.clear();
  emitted_bytes_ = 0;
}

}  // namespace onyx::genai
