// A user's program built against the installed onyx package (see
// CMakeLists.txt): runs tiny_cnn through the C++ API on the input every
// language's test feeds it, with one thread, and prints the output as
// "output probabilities: ..." (9 significant digits).
//
//   onyx_consumer MODEL
#include <cstdio>
#include <string>
#include <vector>

#include <onyx/onyx_cxx_api.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s MODEL\n", argv[0]);
    return 2;
  }
  try {
    Onyx::Env env(ONYX_LOGGING_LEVEL_WARNING, "consumer");
    Onyx::SessionOptions options;
    options.SetIntraOpNumThreads(1);
    Onyx::Session session(env, argv[1], options);

    std::vector<float> image(3 * 32 * 32);
    for (size_t i = 0; i < image.size(); ++i) {
      image[i] = static_cast<float>(static_cast<int>((i * 7) % 101) - 50) / 64.0f;
    }
    const int64_t shape[] = {1, 3, 32, 32};
    Onyx::MemoryInfo cpu = Onyx::MemoryInfo::CreateCpu(OnyxArenaAllocator, OnyxMemTypeDefault);
    Onyx::Value input = Onyx::Value::CreateTensor<float>(cpu, image.data(), image.size(), shape, 4);

    const std::vector<std::string> input_names = session.GetInputNames();
    const std::vector<std::string> output_names = session.GetOutputNames();
    const char* inputs[] = {input_names.at(0).c_str()};
    const char* outputs[] = {output_names.at(0).c_str()};
    std::vector<Onyx::Value> results = session.Run(Onyx::RunOptions{nullptr}, inputs, &input, 1, outputs, 1);

    const float* data = results[0].GetTensorData<float>();
    const size_t count = results[0].GetTensorTypeAndShapeInfo().GetElementCount();
    std::printf("output %s:", outputs[0]);
    for (size_t i = 0; i < count; ++i) std::printf(" %.9g", data[i]);
    std::printf("\n");
  } catch (const Onyx::Exception& e) {
    std::fprintf(stderr, "onyx error %d: %s\n", e.GetOnyxErrorCode(), e.what());
    return 1;
  }
  return 0;
}
