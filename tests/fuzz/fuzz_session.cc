// libFuzzer target: session creation (reader, graph checks, shape inference,
// planning, kernel creation) on arbitrary bytes must succeed or throw
// onyx::Error, never crash, hang or leak. A created session is run once on
// seeded random inputs, which must also end in outputs or an error.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "onyx/session.h"

// A fuzzed graph may legitimately ask for a tensor of many gigabytes; onyx
// refuses allocations above ONYX_MAX_ALLOCATION_BYTES (default: physical
// memory) with an error. Keep that well below libFuzzer's -rss_limit_mb
// (which also bounds single mallocs) so such requests end in onyx's error,
// not in a reported out-of-memory. An explicit setting wins.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("ONYX_MAX_ALLOCATION_BYTES", "1073741824", /*overwrite=*/0);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onyx::SessionOptions options;
  options.intra_op_num_threads = 1;
  options.log_severity_level = 4;
  try {
    auto session = onyx::InferenceSession::from_bytes(
        std::string_view(reinterpret_cast<const char*>(data), size), options);
    onyx::Feeds feeds;
    for (const onyx::ValueMetadata& m : session->inputs()) {
      if (m.type.kind != onyx::ValueType::Kind::kTensor || m.type.elem_type == onyx::DataType::kString) return 0;
      onyx::Shape shape;
      int64_t count = 1;
      for (int64_t d : m.dims) {
        shape.push_back(d >= 0 ? d : 2);
        count *= shape.back();
      }
      if (count > (1 << 16)) return 0;  // keep each run small
      auto t = onyx::Tensor::create(m.type.elem_type, shape);
      if (!t.is_ok()) return 0;
      std::memset(t->raw_data(), 0, t->bytes());
      feeds.emplace_back(m.name, onyx::Value(t.value()));
    }
    std::vector<onyx::Value> outputs;
    onyx::Status s = session->run({}, feeds, {}, &outputs);
    (void)s;
  } catch (const onyx::Error&) {
  }
  return 0;
}
