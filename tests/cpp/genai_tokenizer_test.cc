// onyx::genai::Tokenizer on tokenizer.json files written here. The ids are
// compared with `tokenizers` in tests/python/test_genai_tokenizer.py; these
// tests check the properties that hold whatever the vocabulary: byte-level
// encoding round-trips, streaming equals decoding, NFC is stable, and bad
// files are errors that name what is wrong.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/json.h"
#include "genai/unicode.h"
#include "onyx/genai_tokenizer.h"
#include "onyx/status.h"

namespace onyx::genai {
namespace {

// A byte-level vocabulary: the 256 byte characters, a few merges, and the
// special tokens, with the Llama 3 regex and a BOS template.
std::string byte_level_json(const std::string& normalizer = "null",
                            const std::string& decoder = R"({"type": "ByteLevel"})") {
  Json vocab = Json::object();
  std::vector<std::string> byte_chars;
  int next = 256, id = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    std::string s;
    unicode::append_utf8(s, printable ? static_cast<char32_t>(b) : static_cast<char32_t>(next++));
    byte_chars.push_back(s);
    vocab.set(s, id++);
  }
  const std::string space = byte_chars[' '];
  Json merges = Json::array();
  for (auto [a, b] : std::vector<std::pair<std::string, std::string>>{
           {space, "h"}, {"e", "l"}, {"el", "l"}, {space + "h", "ell"}, {"o", "r"}, {"w", "or"}}) {
    vocab.set(a + b, id++);
    merges.push_back(Json(Json::Array{Json(a), Json(b)}));
  }
  Json model = Json::object();
  model.set("type", "BPE");
  model.set("vocab", vocab);
  model.set("merges", merges);
  model.set("ignore_merges", true);
  const std::string regex =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  Json pattern = Json::object();
  pattern.set("Regex", regex);
  Json split = Json::object();
  split.set("type", "Split");
  split.set("pattern", pattern);
  split.set("behavior", "Isolated");
  split.set("invert", false);
  Json byte_level = Json::object();
  byte_level.set("type", "ByteLevel");
  byte_level.set("add_prefix_space", false);
  byte_level.set("use_regex", false);
  Json pre = Json::object();
  pre.set("type", "Sequence");
  pre.set("pretokenizers", Json(Json::Array{split, byte_level}));
  const std::string text =
      "{\"added_tokens\": [{\"id\": " + std::to_string(id) +
      ", \"content\": \"<|bos|>\", \"special\": true, \"normalized\": false}], "
      "\"normalizer\": " +
      normalizer + ", \"pre_tokenizer\": " + to_json(pre).value() +
      ", \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": "
      "[{\"SpecialToken\": {\"id\": \"<|bos|>\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], "
      "\"special_tokens\": {\"<|bos|>\": {\"id\": \"<|bos|>\", \"ids\": [" +
      std::to_string(id) + "], \"tokens\": [\"<|bos|>\"]}}}, \"decoder\": " + decoder +
      ", \"model\": " + to_json(model).value() + "}";
  return text;
}

const std::vector<std::string> kTexts = {
    "",
    "hello world",
    "Hello  world\n\n\tx",
    "It's 12345 o'CLOCK!!",
    "中文 日本語 😀👍🏽",
    "e\xCC\x81 cafe\xCC\x81",
    "<|bos|>hello<|bos|>",
    "\xC2\xA0\xE3\x80\x80 spaces  \r\n",
};

TEST(GenaiTokenizer, ByteLevelRoundTripsAndAddsBos) {
  const Tokenizer tok = Tokenizer::from_json(byte_level_json());
  const int32_t bos = tok.token_to_id("<|bos|>");
  ASSERT_GE(bos, 0);
  EXPECT_EQ(tok.bos_token_id(), bos);
  for (const std::string& text : kTexts) {
    const std::vector<int32_t> ids = tok.encode(text);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(ids.front(), bos);
    EXPECT_EQ(tok.decode(ids, false), "<|bos|>" + text) << text;
    EXPECT_EQ(tok.encode(text, false), std::vector<int32_t>(ids.begin() + 1, ids.end()));
  }
  // ignore_merges: a word in the vocabulary is one token.
  EXPECT_EQ(tok.encode(" hell", false).size(), 1u);
}

TEST(GenaiTokenizer, StreamEqualsDecodeWithCharactersSplitOverTokens) {
  const Tokenizer tok = Tokenizer::from_json(byte_level_json());
  std::string long_text;
  for (int i = 0; i < 30; ++i) long_text += "hello 世界 world 😀 ";
  std::vector<std::string> texts = kTexts;
  texts.push_back(long_text);
  for (const std::string& text : texts) {
    const std::vector<int32_t> ids = tok.encode(text);
    TokenizerStream stream = tok.create_stream();
    std::string streamed;
    for (int32_t id : ids) {
      const std::string piece = stream.decode(id);
      EXPECT_TRUE(unicode::is_valid_utf8(piece));
      EXPECT_EQ(piece.find("\xEF\xBF\xBD"), std::string::npos) << "half a character came out";
      streamed += piece;
    }
    EXPECT_EQ(streamed, tok.decode(ids)) << text;
    stream.reset();
    EXPECT_EQ(stream.decode(ids.back()),
              tok.decode(std::vector<int32_t>{ids.back()}).find("\xEF\xBF\xBD") == std::string::npos
                  ? tok.decode(std::vector<int32_t>{ids.back()})
                  : std::string());
  }
}

TEST(GenaiTokenizer, NfcIsStableAndComposesDecomposedText) {
  const std::vector<std::string> texts = {"cafe\xCC\x81", "\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8",
                                          "a\xCC\x81\xCC\xA3 A\xCC\x8A \xE2\x84\xAB", "plain", "x\xCC\x95\xCC\x81y"};
  for (const std::string& text : texts) {
    const std::string once = unicode::nfc(text);
    EXPECT_EQ(unicode::nfc(once), once) << text;
    EXPECT_LE(once.size(), text.size()) << text;
  }
  // NFC normalizer in the pipeline: decomposed and composed input give the same ids.
  const Tokenizer tok = Tokenizer::from_json(byte_level_json(R"({"type": "NFC"})"));
  EXPECT_EQ(tok.encode("cafe\xCC\x81"), tok.encode(unicode::nfc("cafe\xCC\x81")));
}

TEST(GenaiTokenizer, Utf8Lossy) {
  for (const std::string& text : kTexts) EXPECT_EQ(unicode::utf8_lossy(text), text);
  EXPECT_FALSE(unicode::is_valid_utf8("\xE4\xB8"));
  EXPECT_TRUE(unicode::is_valid_utf8(unicode::utf8_lossy("\xE4\xB8 \xFF\xC0\x80")));
}

void expect_error(const std::string& json, const std::string& needle) {
  try {
    (void)Tokenizer::from_json(json);
    ADD_FAILURE() << "no error; expected one naming " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(GenaiTokenizer, UnsupportedComponentsAreNamed) {
  expect_error(byte_level_json(R"({"type": "Lowercase"})"), "Lowercase");
  expect_error(byte_level_json("null", R"({"type": "WordPiece"})"), "WordPiece");
  expect_error(R"({"model": {"type": "Unigram", "vocab": []}})", "Unigram");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}})", "merge 'a b'");
  expect_error("{\"model\": ", "JSON");
  EXPECT_THROW(Tokenizer::from_folder("/nonexistent-folder"), Error);
  const Tokenizer tok = Tokenizer::from_json(byte_level_json());
  EXPECT_THROW(tok.decode(std::vector<int32_t>{1 << 30}), Error);
  EXPECT_THROW(tok.encode("\xFF"), Error);
}

TEST(GenaiTokenizer, ConfigNamesSpecialTokens) {
  const Tokenizer tok = Tokenizer::from_json(
      byte_level_json(),
      R"({"bos_token": {"content": "<|bos|>"}, "eos_token": "<|bos|>", "model_max_length": 1000000000000000019884624838656})");
  EXPECT_EQ(tok.eos_token_id(), tok.token_to_id("<|bos|>"));
  EXPECT_EQ(tok.pad_token_id(), -1);
}

TEST(Json, RepeatedKeyInALargeObjectIsRefused) {
  std::string text = "{";
  for (int i = 0; i < 100; ++i) text += "\"k" + std::to_string(i) + "\": " + std::to_string(i) + ", ";
  EXPECT_TRUE(parse_json(text + "\"last\": 0}").is_ok());
  const Result<Json> repeated = parse_json(text + "\"k42\": 0}");
  ASSERT_FALSE(repeated.is_ok());
  EXPECT_NE(repeated.status().message().find("'k42' appears twice"), std::string::npos);
  EXPECT_FALSE(parse_json("[99999999999999999999]").is_ok());
  EXPECT_TRUE(parse_json("[99999999999999999999]", true).is_ok());
}

}  // namespace
}  // namespace onyx::genai
