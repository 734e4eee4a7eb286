// Tensor, dtype and float16 conversions.
#include <gtest/gtest.h>

#include <cmath>

#include "onyx/tensor.h"

namespace onyx {

TEST(Tensor, AllocatesAndReportsShape) {
  Tensor t(DataType::kFloat, {2, 3});
  EXPECT_EQ(t.size(), 6);
  EXPECT_EQ(t.bytes(), 24u);
  EXPECT_EQ(t.describe(), "float[2,3]");
}

TEST(Tensor, RejectsNegativeAndHugeShapes) {
  EXPECT_FALSE(Tensor::create(DataType::kFloat, {-1, 3}).is_ok());
  EXPECT_FALSE(Tensor::create(DataType::kFloat, {1LL << 40, 1LL << 40}).is_ok());
}

TEST(Tensor, StringTensorsHoldStrings) {
  Tensor t(DataType::kString, {2});
  t.data<std::string>()[0] = std::string(1, 'a');
  t.data<std::string>()[1] = std::string(100, 'x');
  Tensor c = t.clone();
  EXPECT_EQ(c.data<std::string>()[1].size(), 100u);
}

TEST(Float16, RoundTripsRepresentableValues) {
  for (float v : {0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.9604645e-08f}) {
    EXPECT_EQ(static_cast<float>(Float16(v)), v) << v;
  }
  EXPECT_TRUE(std::isinf(static_cast<float>(Float16(1e6f))));
  EXPECT_EQ(static_cast<float>(BFloat16(1.0f)), 1.0f);
}

}  // namespace onyx
