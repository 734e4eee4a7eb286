// libFuzzer target: the protobuf reader on arbitrary bytes must return a
// model or an error, never crash, hang or leak.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "model/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto model = onyx::model::read_model_bytes(bytes);
  (void)model;
  auto tensor = onyx::model::read_tensor_proto(bytes);
  (void)tensor;
  return 0;
}
