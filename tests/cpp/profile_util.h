// What a profiled session ran where: nodes per provider and copies, read
// from the profile file that end_profiling() writes (and removes it), for
// the tests of device providers.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "onyx/session.h"

namespace onyx::testing {

struct ProfileCounts {
  std::map<std::string, int> nodes;  // provider -> nodes run, copies not included
  int copies = 0;
};

inline ProfileCounts profile_counts(InferenceSession& session) {
  const std::string path = session.end_profiling();
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::filesystem::remove(path);
  const std::string text = buffer.str();
  ProfileCounts counts;
  // Each node event has "op_name":"...","provider":"..." in its args.
  const std::string op_key = "\"op_name\":\"", provider_key = "\"provider\":\"";
  for (size_t at = text.find(op_key); at != std::string::npos; at = text.find(op_key, at + 1)) {
    const size_t op_start = at + op_key.size();
    const std::string op = text.substr(op_start, text.find('"', op_start) - op_start);
    const size_t p = text.find(provider_key, op_start);
    if (p == std::string::npos) break;
    const size_t p_start = p + provider_key.size();
    if (op == "Copy") {
      ++counts.copies;
    } else {
      ++counts.nodes[text.substr(p_start, text.find('"', p_start) - p_start)];
    }
  }
  return counts;
}

}  // namespace onyx::testing
