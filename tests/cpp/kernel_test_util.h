// Runs one CPU kernel on host values without a session: builds a one-node
// graph, creates the kernel from the registry and calls compute.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "providers/kernel.h"

namespace onyx::testing {

struct KernelRun {
  Status status;
  std::vector<Value> outputs;
};

// attributes: fill Attribute.name, .type and the matching field.
KernelRun run_kernel(const std::string& op_type, int opset, const std::vector<Value>& inputs,
                     const std::vector<graph::Attribute>& attributes = {}, size_t output_count = 1,
                     const std::string& domain = "", int threads = 1);

graph::Attribute attr_int(const std::string& name, int64_t v);
graph::Attribute attr_float(const std::string& name, float v);
graph::Attribute attr_string(const std::string& name, const std::string& v);
graph::Attribute attr_ints(const std::string& name, std::vector<int64_t> v);
graph::Attribute attr_floats(const std::string& name, std::vector<float> v);

// n floats drawn uniformly from [lo, hi) by mt19937 seeded with `seed`: test
// inputs that are the same on every run.
inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

}  // namespace onyx::testing
