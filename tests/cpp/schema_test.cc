// Op schema table: version resolution, attribute defaults and function bodies.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "graph/schema.h"

namespace onyx::graph {

TEST(Schema, ResolvesTheNewestVersionNotAfterTheOpset) {
  const OpSchema* add12 = find_schema("", "Add", 12);
  ASSERT_NE(add12, nullptr);
  EXPECT_EQ(add12->since_version, 7);
  ASSERT_NE(find_schema("", "Add", 13), nullptr);
  EXPECT_EQ(find_schema("", "Add", 13)->since_version, 13);
  ASSERT_NE(find_schema("", "Add", 14), nullptr);
  EXPECT_EQ(find_schema("", "Add", 14)->since_version, 14);
  EXPECT_EQ(find_schema("", "Add", 0), nullptr);
  EXPECT_EQ(find_schema("", "NoSuchOp", 13), nullptr);
}

TEST(Schema, AiOnnxIsTheDefaultDomain) {
  const OpSchema* a = find_schema("ai.onnx", "Relu", 14);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a, find_schema("", "Relu", 14));
  EXPECT_STREQ(a->domain, "");
}

TEST(Schema, DeprecatedOpsAreAbsentFromTheirDeprecationOn) {
  ASSERT_NE(find_schema("", "Upsample", 9), nullptr);
  EXPECT_EQ(find_schema("", "Upsample", 9)->since_version, 9);
  EXPECT_EQ(find_schema("", "Upsample", 10), nullptr);
  EXPECT_EQ(find_schema("", "Upsample", 20), nullptr);
  const OpSchema* deprecated = find_schema_including_deprecated("", "Upsample", 10);
  ASSERT_NE(deprecated, nullptr);
  EXPECT_TRUE(deprecated->deprecated);
}

TEST(Schema, MlDomainHasItsOwnOpsets) {
  const OpSchema* zipmap = find_schema("ai.onnx.ml", "ZipMap", 1);
  ASSERT_NE(zipmap, nullptr);
  EXPECT_EQ(zipmap->since_version, 1);
  EXPECT_EQ(zipmap->output_count, 1);
  const TypeConstraint* t = zipmap->type_constraint("T");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->allowed_count, 2);
  EXPECT_STREQ(t->allowed_types[0], "seq(map(string, float))");
  EXPECT_NE(zipmap->attribute("classlabels_strings"), nullptr);
  EXPECT_EQ(find_schema("", "ZipMap", 20), nullptr);
  EXPECT_TRUE(is_known_domain("ai.onnx.ml"));
  EXPECT_TRUE(is_known_domain("ai.onnx"));
  EXPECT_TRUE(is_known_domain(""));
  EXPECT_TRUE(is_known_domain("ai.onnx.preview.training"));
  EXPECT_FALSE(is_known_domain("com.example"));
}

TEST(Schema, ListsAllVersions) {
  const std::vector<int> versions = schema_versions("", "Add");
  ASSERT_GE(versions.size(), 5u);
  EXPECT_EQ(versions[0], 1);
  for (size_t i = 1; i < versions.size(); ++i) EXPECT_LT(versions[i - 1], versions[i]);
  EXPECT_TRUE(schema_versions("", "NoSuchOp").empty());
  EXPECT_GE(latest_opset(""), 21);
}

TEST(Schema, FormalParametersAndCounts) {
  const OpSchema* concat = find_schema("", "Concat", 13);
  ASSERT_NE(concat, nullptr);
  EXPECT_EQ(concat->min_inputs, 1);
  EXPECT_EQ(concat->max_inputs, 2147483647);
  ASSERT_EQ(concat->input_count, 1);
  EXPECT_EQ(concat->inputs[0].option, ParamOption::kVariadic);
  EXPECT_EQ(concat->formal_input_index(5), 0);

  const OpSchema* conv = find_schema("", "Conv", 11);
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->min_inputs, 2);
  EXPECT_EQ(conv->max_inputs, 3);
  EXPECT_EQ(conv->inputs[2].option, ParamOption::kOptional);
  EXPECT_EQ(conv->formal_input_index(3), -1);

  const OpSchema* shape = find_schema("", "Shape", 15);
  ASSERT_NE(shape, nullptr);
  EXPECT_STREQ(shape->outputs[0].type_str, "T1");
  const TypeConstraint* t1 = shape->type_constraint("T1");
  ASSERT_NE(t1, nullptr);
  ASSERT_EQ(t1->allowed_count, 1);
  EXPECT_STREQ(t1->allowed_types[0], "tensor(int64)");
}

TEST(Schema, AttributeDefaults) {
  const OpSchema* conv = find_schema("", "Conv", 11);
  ASSERT_NE(conv, nullptr);
  const AttributeSchema* group = conv->attribute("group");
  ASSERT_NE(group, nullptr);
  EXPECT_EQ(group->type, AttributeType::kInt);
  EXPECT_TRUE(group->has_default);
  EXPECT_EQ(group->default_int, 1);
  const AttributeSchema* auto_pad = conv->attribute("auto_pad");
  ASSERT_NE(auto_pad, nullptr);
  EXPECT_STREQ(auto_pad->default_string, "NOTSET");
  const AttributeSchema* kernel_shape = conv->attribute("kernel_shape");
  ASSERT_NE(kernel_shape, nullptr);
  EXPECT_FALSE(kernel_shape->has_default);

  const OpSchema* elu = find_schema("", "Elu", 22);
  ASSERT_NE(elu, nullptr);
  EXPECT_FLOAT_EQ(elu->attribute("alpha")->default_float, 1.0f);

  const OpSchema* mvn = find_schema("", "MeanVarianceNormalization", 13);
  ASSERT_NE(mvn, nullptr);
  const AttributeSchema* axes = mvn->attribute("axes");
  ASSERT_NE(axes, nullptr);
  ASSERT_EQ(axes->default_ints_count, 3);
  EXPECT_EQ(axes->default_ints[2], 3);

  const OpSchema* cast = find_schema("", "Cast", 13);
  ASSERT_NE(cast, nullptr);
  EXPECT_TRUE(cast->attribute("to")->required);
}

TEST(Schema, StaticFunctionBodies) {
  const OpSchema* mish = find_schema("", "Mish", 18);
  ASSERT_NE(mish, nullptr);
  ASSERT_GE(mish->function_count, 1);
  const FunctionBody* body = mish->function_body(18);
  ASSERT_NE(body, nullptr);
  EXPECT_GT(body->size, 10u);
  // A FunctionProto's field 1 (name, length-delimited) starts with tag 0x0a and holds "Mish".
  EXPECT_EQ(static_cast<unsigned char>(body->bytes[0]), 0x0a);
  EXPECT_NE(body->data().find("Mish"), std::string_view::npos);
  EXPECT_EQ(mish->function_body(17), nullptr);
  EXPECT_EQ(find_schema("", "Add", 14)->function_count, 0);
}

TEST(Schema, EveryEntryIsWellFormed) {
  size_t count = 0;
  const OpSchema* schemas = all_schemas(&count);
  ASSERT_GT(count, 600u);
  for (size_t i = 0; i < count; ++i) {
    const OpSchema& s = schemas[i];
    SCOPED_TRACE(std::string(s.domain) + "::" + s.op_type);
    EXPECT_GE(s.since_version, 1);
    EXPECT_LE(s.min_inputs, s.max_inputs);
    EXPECT_LE(s.min_outputs, s.max_outputs);
    for (int a = 1; a < s.attribute_count; ++a) {
      EXPECT_LT(std::strcmp(s.attributes[a - 1].name, s.attributes[a].name), 0);
    }
    for (int f = 0; f < s.function_count; ++f) EXPECT_EQ(std::strlen(s.functions[f].bytes) <= s.functions[f].size, true);
  }
}

}  // namespace onyx::graph
