// The C structs behind onyx_genai_c.h's result, tokenizer and sequences
// handles, and the guard that turns C++ exceptions into an OnyxGenaiResult:
// shared by genai_tokenizer_c.cc and the rest of the generation C API.
#pragma once

#include <exception>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "onyx/genai_tokenizer.h"
#include "onyx/onyx_genai_c.h"

struct OnyxGenaiResult {
  std::string message;
};

struct OnyxGenaiTokenizer {
  onyx::genai::Tokenizer tokenizer;
};

struct OnyxGenaiTokenizerStream {
  onyx::genai::TokenizerStream stream;
  std::string last;  // what the last decode returned, owned here for the caller
};

struct OnyxGenaiSequences {
  std::vector<std::vector<int32_t>> sequences;
};

namespace onyx::capi {

inline OnyxGenaiResult* genai_result(std::string message) noexcept {
  try {
    return new OnyxGenaiResult{std::move(message)};
  } catch (...) {
    static OnyxGenaiResult out_of_memory{"out of memory"};
    return &out_of_memory;  // never freed: OnyxGenaiDestroyResult knows it
  }
}

// Runs `body` (returning nothing); an exception becomes the result.
template <typename Body>
OnyxGenaiResult* genai_guard(Body&& body) noexcept {
  try {
    body();
    return nullptr;
  } catch (const std::bad_alloc&) {
    return genai_result("out of memory");
  } catch (const std::exception& e) {
    return genai_result(e.what());
  } catch (...) {
    return genai_result("an unknown C++ exception was caught");
  }
}

}  // namespace onyx::capi
