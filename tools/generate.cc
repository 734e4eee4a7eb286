// `onyx generate FOLDER --prompt TEXT` and `onyx chat FOLDER`: text
// generation with a genai folder (genai_config.json, as onnxruntime-genai's
// model builder writes), streaming tokens as they come.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli.h"
#include "onyx/genai.h"

namespace onyx::cli {
namespace {

struct GenerateArguments {
  std::string folder;
  std::string prompt;
  std::string tokens;  // "1,2,3": a prompt of token ids (works without a tokenizer)
  std::string template_text;
  int64_t max_length = 0;
  bool do_sample = false;
  int64_t top_k = 50;
  double top_p = 1.0;
  double temperature = 1.0;
  int64_t seed = -1;
  int64_t threads = 0;
  std::string kv_cache = "float";
  int64_t reply_tokens = 256;  // chat: a reply's tokens at most
  bool ids = false;            // prompts (turns) and new tokens as ids, not text
};

double parse_number(const std::string& text, double min, double max) {
  try {
    size_t used = 0;
    const double value = std::stod(text, &used);
    if (used == text.size() && value >= min && value <= max) return value;
  } catch (const std::exception&) {
  }
  throw UsageError("expects a number from " + std::to_string(min) + " to " + std::to_string(max) + ", got '" + text +
                   "'");
}

void declare(CommandLine& command_line, GenerateArguments& a, bool chat) {
  command_line.positional("FOLDER", "a genai model folder (genai_config.json, the .onnx model, tokenizer.json)",
                          &a.folder);
  if (!chat) {
    command_line.option({"--prompt"}, "TEXT", "the prompt (encoded with the folder's tokenizer.json)",
                        [&](const std::string& v) { a.prompt = v; });
  } else {
    command_line.option(
        {"--template"}, "TEXT",
        "how each line becomes a turn, with {input} for the line (default: the model type's chat template)",
        [&](const std::string& v) {
          if (v.find("{input}") == std::string::npos) throw UsageError("expects a text with {input}, got '" + v + "'");
          a.template_text = v;
        });
    command_line.option({"--reply_tokens"}, "N", "a reply stops at eos or after N tokens (default 256)",
                        [&](const std::string& v) { a.reply_tokens = parse_integer(v, 1, 1 << 24); });
  }
  command_line.option({"--tokens"}, "IDS", "the prompt as token ids, comma-separated (1,2,3) instead of text",
                      [&](const std::string& v) { a.tokens = v; });
  command_line.flag({"--ids"},
                    chat ? "each line is token ids (1,2,3) and replies print as ids, tokenizer or not"
                         : "print the new tokens as ids instead of text",
                    &a.ids);
  command_line.option({"--max_length"}, "N", "prompt plus generated tokens at most (default: genai_config.json's)",
                      [&](const std::string& v) { a.max_length = parse_integer(v, 1, 1 << 24); });
  command_line.flag({"--do_sample"}, "sample instead of taking the most likely token", &a.do_sample);
  command_line.option({"--top_k"}, "K", "sample from the K most likely tokens (default 50)",
                      [&](const std::string& v) { a.top_k = parse_integer(v, 0, 1 << 30); });
  command_line.option({"--top_p"}, "P", "then from the smallest set whose probability reaches P (default 1)",
                      [&](const std::string& v) { a.top_p = parse_number(v, 0.0, 1.0); });
  command_line.option({"--temperature"}, "T", "softens (T > 1) or sharpens (T < 1) the distribution (default 1)",
                      [&](const std::string& v) { a.temperature = parse_number(v, 1e-6, 1e6); });
  command_line.option({"--seed"}, "N", "the sampler's random seed (default: from the clock)",
                      [&](const std::string& v) { a.seed = parse_integer(v, 0, (int64_t{1} << 62)); });
  command_line.option({"--threads"}, "N", "intra-op threads (default: one per physical core)",
                      [&](const std::string& v) { a.threads = parse_integer(v, 1, 1024); });
  command_line.option({"--kv_cache"}, "TYPE", "float (default) or int8 (8-bit cache rows with a scale each)",
                      [&](const std::string& v) {
                        if (v != "float" && v != "int8") throw UsageError("expects float or int8, got '" + v + "'");
                        a.kv_cache = v;
                      });
}

std::vector<int32_t> parse_token_list(const std::string& text) {
  std::vector<int32_t> ids;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      ids.push_back(static_cast<int32_t>(parse_integer(item, 0, INT32_MAX)));
    } catch (const UsageError& e) {
      throw UsageError(std::string("--tokens: ") + e.what());
    }
  }
  if (ids.empty()) throw UsageError("--tokens: expects comma-separated token ids, got '" + text + "'");
  return ids;
}

// A bad folder, config or prompt is the user's to fix: one line, exit status 2.
template <typename Body>
auto or_usage_error(Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

std::unique_ptr<genai::Model> load_model(const GenerateArguments& a) {
  require_folder("FOLDER", a.folder);
  return or_usage_error([&] {
    genai::Config config(a.folder);
    std::string overlay = "{\"model\": {\"decoder\": {\"kv_cache_type\": \"" + a.kv_cache + "\"";
    if (a.threads > 0)
      overlay += ", \"session_options\": {\"intra_op_num_threads\": " + std::to_string(a.threads) + "}";
    overlay += "}}}";
    config.overlay(overlay);
    return std::make_unique<genai::Model>(config);
  });
}

genai::GeneratorParams make_params(const genai::Model& model, const GenerateArguments& a) {
  genai::GeneratorParams params(model);
  if (a.max_length > 0) params.search.max_length = a.max_length;
  params.search.do_sample = a.do_sample;
  params.search.top_k = a.top_k;
  params.search.top_p = a.top_p;
  params.search.temperature = a.temperature;
  params.search.random_seed = a.seed;
  return params;
}

// Writes each new token as text, with the folder's tokenizer, or as its id
// with --ids or where the folder has no tokenizer.json (prompts are then --tokens).
class Printer {
 public:
  Printer(const std::string& folder, bool ids) {
    if (!ids && std::filesystem::exists(std::filesystem::path(folder) / "tokenizer.json")) {
      tokenizer_.emplace(genai::Tokenizer::from_folder(folder));
      stream_.emplace(tokenizer_->create_stream());
    }
  }
  bool has_tokenizer() const { return tokenizer_.has_value(); }
  std::vector<int32_t> encode(const std::string& text) const {
    if (!tokenizer_) throw UsageError("the folder has no tokenizer.json: give the prompt as --tokens 1,2,3");
    return tokenizer_->encode(text);
  }
  void print(int32_t token) {
    if (stream_) {
      std::fputs(stream_->decode(token).c_str(), stdout);
    } else {
      std::printf("%d ", token);
    }
    std::fflush(stdout);
  }
  void reset() {
    if (stream_) stream_->reset();
  }

 private:
  std::optional<genai::Tokenizer> tokenizer_;
  std::optional<genai::TokenizerStream> stream_;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A per-model-type chat turn ({input} is the user's line).
std::string default_template(const std::string& type) {
  if (type == "qwen2" || type == "qwen3" || type == "phi3")
    return "<|im_start|>user\n{input}<|im_end|>\n<|im_start|>assistant\n";
  if (type == "llama")
    return "<|start_header_id|>user<|end_header_id|>\n\n{input}<|eot_id|><|start_header_id|>assistant<|end_header_id|>"
           "\n\n";
  if (type == "mistral") return "[INST] {input} [/INST]";
  if (type == "gemma" || type == "gemma2") return "<start_of_turn>user\n{input}<end_of_turn>\n<start_of_turn>model\n";
  return "{input}";
}

}  // namespace

int generate_command(const std::vector<std::string>& args) {
  GenerateArguments a;
  CommandLine command_line(
      "generate",
      "Generates text from a prompt with a genai model folder (as onnxruntime-genai's model builder "
      "writes), streaming tokens as they come, then prints the prompt tokens, prefill tokens/s, new "
      "tokens and decode tokens/s.");
  declare(command_line, a, false);
  command_line.note("A folder without tokenizer.json takes the prompt as --tokens and prints the new tokens as ids.");
  command_line.example("onyx generate qwen-int4 --prompt \"Once upon a time\" --max_length 128");
  if (!command_line.parse(args)) return kExitOk;
  if (a.prompt.empty() == a.tokens.empty())
    throw UsageError("give the prompt as --prompt TEXT or --tokens IDS (one of them)");
  std::unique_ptr<genai::Model> model = load_model(a);
  Printer printer(a.folder, a.ids);
  const std::vector<int32_t> prompt = a.tokens.empty() ? printer.encode(a.prompt) : parse_token_list(a.tokens);
  const genai::GeneratorParams params = make_params(*model, a);
  genai::Generator generator(*model, params);
  const auto prefill_start = std::chrono::steady_clock::now();
  or_usage_error([&] { generator.append_tokens(prompt); });
  const double prefill_seconds = seconds_since(prefill_start);
  int64_t new_tokens = 0;
  const auto decode_start = std::chrono::steady_clock::now();
  double first_token_seconds = 0;
  while (!generator.is_done()) {
    generator.generate_next_token();
    if (new_tokens == 0) first_token_seconds = seconds_since(decode_start);
    printer.print(generator.get_next_tokens()[0]);
    ++new_tokens;
  }
  const double decode_seconds = seconds_since(decode_start) - first_token_seconds;
  std::printf("\n\nprompt tokens %zu, prefill %.1f tokens/s\n", prompt.size(),
              static_cast<double>(prompt.size()) / prefill_seconds);
  // The first new token comes from the prefill's logits; decode speed counts the steps that ran the model.
  std::printf("new tokens %lld, decode %.1f tokens/s\n", static_cast<long long>(new_tokens),
              new_tokens > 1 ? static_cast<double>(new_tokens - 1) / decode_seconds : 0.0);
  return kExitOk;
}

int chat_command(const std::vector<std::string>& args) {
  GenerateArguments a;
  CommandLine command_line("chat",
                           "Chats with a genai model folder: each line read from stdin becomes a turn (through the "
                           "template), the reply streams as it comes. The generator and its KV cache are kept between "
                           "turns, so earlier turns are not run again.");
  declare(command_line, a, true);
  command_line.note(
      "Templates by model.type: qwen2/qwen3/phi3 '<|im_start|>user\\n{input}<|im_end|>\\n<|im_start|>assistant\\n', "
      "llama (Llama 3 headers), mistral '[INST] {input} [/INST]', gemma '<start_of_turn>user...'; others '{input}'. "
      "With --ids, or a folder without tokenizer.json, each line is token ids (1,2,3).");
  command_line.example("echo 'Hello!' | onyx chat qwen-int4 --max_length 512");
  if (!command_line.parse(args)) return kExitOk;
  std::unique_ptr<genai::Model> model = load_model(a);
  Printer printer(a.folder, a.ids);
  const std::string turn_template = a.template_text.empty() ? default_template(model->type()) : a.template_text;
  genai::Generator generator(*model, make_params(*model, a));
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    std::vector<int32_t> turn;
    if (printer.has_tokenizer()) {
      std::string text = turn_template;
      text.replace(text.find("{input}"), 7, line);
      turn = printer.encode(text);
    } else {
      turn = parse_token_list(line);
    }
    or_usage_error([&] { generator.append_tokens(turn); });
    printer.reset();
    for (int64_t count = 0; count < a.reply_tokens && !generator.is_done(); ++count) {
      generator.generate_next_token();
      printer.print(generator.get_next_tokens()[0]);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  return kExitOk;
}

}  // namespace onyx::cli
