// ONNX op schemas: per (domain, op_type, since_version) the formal inputs and
// outputs, type constraints, attributes with defaults and function bodies.
// The table is generated from the onnx package by tools/gen_schemas.py.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"

namespace onyx::graph {

enum class ParamOption : uint8_t { kSingle, kOptional, kVariadic };

// One formal input or output of an op.
struct FormalParam {
  const char* name;
  const char* type_str;  // a type variable ("T") or a concrete type ("tensor(int64)")
  ParamOption option;
  bool is_homogeneous;   // variadic: all actual values share one type
  int min_arity;         // variadic: fewest values it takes
};

// A type variable and the types it may stand for ("tensor(float)", "seq(tensor(int64))", ...).
struct TypeConstraint {
  const char* type_param;
  const char* const* allowed_types;
  int allowed_count;
};

struct AttributeSchema {
  const char* name;
  AttributeType type;
  bool required;
  bool has_default;
  // The default, in the field matching `type` (INT, FLOAT, STRING, INTS, FLOATS, STRINGS).
  int64_t default_int;
  float default_float;
  const char* default_string;
  const int64_t* default_ints;
  int default_ints_count;
  const float* default_floats;
  int default_floats_count;
  const char* const* default_strings;
  int default_strings_count;
};

// A serialized FunctionProto defining the op in terms of other ops, written
// against ai.onnx opset `opset` (use it when the model's opset is >= that).
struct FunctionBody {
  int opset;
  const char* bytes;
  size_t size;
  std::string_view data() const { return std::string_view(bytes, size); }
};

struct OpSchema {
  const char* domain;
  const char* op_type;
  int since_version;
  bool deprecated;
  int min_inputs, max_inputs, min_outputs, max_outputs;  // max is INT32_MAX when variadic
  const FormalParam* inputs;
  int input_count;
  const FormalParam* outputs;
  int output_count;
  const TypeConstraint* type_constraints;
  int type_constraint_count;
  const AttributeSchema* attributes;  // sorted by name
  int attribute_count;
  const FunctionBody* functions;  // ascending opset; empty for ops without a static body
  int function_count;

  const AttributeSchema* attribute(std::string_view name) const;
  const TypeConstraint* type_constraint(std::string_view type_param) const;
  // The function body to use at ai.onnx opset `opset`: the newest whose opset <= it, else nullptr.
  const FunctionBody* function_body(int opset) const;
  // Index of the formal input/output that actual position `index` belongs to
  // (a trailing variadic takes the rest), or -1 past the end.
  int formal_input_index(int index) const;
  int formal_output_index(int index) const;
};

// The schema in force for `op_type` in `domain` at opset `opset` (the newest
// since_version <= opset), or nullptr if the op does not exist at that opset
// (or was removed/deprecated before it). Domain "ai.onnx" is the same as "".
const OpSchema* find_schema(const std::string& domain, const std::string& op_type, int opset);
// Like find_schema but also returns a deprecated schema (e.g. Upsample-10), for
// runtimes that keep supporting it.
const OpSchema* find_schema_including_deprecated(const std::string& domain, const std::string& op_type,
                                                 int opset);
// All since_versions of an op, ascending (for docs).
std::vector<int> schema_versions(const std::string& domain, const std::string& op_type);
// "", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training", "ai.onnx.preview".
bool is_known_domain(const std::string& domain);
// The newest since_version of any op in the domain (the highest opset the table knows), 0 if unknown.
int latest_opset(const std::string& domain);

// The generated table (schemas_generated.cc), sorted by domain, op_type, since_version.
const OpSchema* all_schemas(size_t* count);
// The onnx package version the table was generated from.
const char* schema_onnx_version();

}  // namespace onyx::graph
