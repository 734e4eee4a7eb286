// The protobuf reader and writer of src/model/: field round trips, hand-encoded
// wire bytes, real models, corrupted and truncated input, external data rules.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "model/reader.h"
#include "model/wire.h"
#include "model/writer.h"
#include "onyx/dtype.h"

namespace onyx::model {
namespace {

namespace fs = std::filesystem;
using wire::WireType;

const char* kModelsDir = ONYX_SHARED_DIR "/models";
const char* kBackendNodeDir = ONYX_SHARED_DIR "/onnx-backend-data/node";

std::string read_file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_file_bytes(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A fresh empty folder under the test temp dir.
fs::path make_temp_dir(const std::string& name) {
  fs::path dir = fs::path(testing::TempDir()) / ("onyx_model_test_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string sequence_of_bytes(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 37 + static_cast<size_t>(seed)) & 0xff);
  return s;
}

TensorProto float_tensor(const std::string& name, std::vector<int64_t> dims, std::vector<float> values) {
  TensorProto t;
  t.name = name;
  t.dims = std::move(dims);
  t.data_type = static_cast<int32_t>(DataType::kFloat);
  std::string raw(values.size() * 4, '\0');
  std::memcpy(raw.data(), values.data(), raw.size());
  t.set_raw_data(std::move(raw));
  return t;
}

ValueInfoProto tensor_value_info(const std::string& name, int32_t elem_type, std::vector<int64_t> dims) {
  ValueInfoProto v;
  v.name = name;
  v.has_type = true;
  v.type.value_case = TypeProto::Case::kTensorType;
  v.type.elem_type = elem_type;
  v.type.has_shape = true;
  for (int64_t d : dims) {
    TensorShapeProto::Dimension dim;
    if (d >= 0) {
      dim.has_value = true;
      dim.dim_value = d;
    } else {
      dim.dim_param = "N";
    }
    v.type.shape.dim.push_back(dim);
  }
  return v;
}

// A model that touches every field the writer knows.
ModelProto make_full_model() {
  ModelProto m;
  m.ir_version = 10;
  m.producer_name = "onyx-test";
  m.producer_version = "1.2";
  m.domain = "ai.onyx.test";
  m.model_version = 7;
  m.doc_string = "a model with every field";
  m.opset_import.push_back({"", 21});
  m.opset_import.push_back({"ai.onnx.ml", 3});
  m.opset_import.push_back({"local", 1});
  m.metadata_props.push_back({"author", "test"});

  auto g = std::make_shared<GraphProto>();
  g->name = "main";
  g->doc_string = "graph doc";
  g->metadata_props.push_back({"k", "v"});
  g->input.push_back(tensor_value_info("X", 1, {-1, 3}));
  g->output.push_back(tensor_value_info("Y", 1, {-1, 3}));
  ValueInfoProto seq_info;
  seq_info.name = "S";
  seq_info.has_type = true;
  seq_info.type.value_case = TypeProto::Case::kSequenceType;
  seq_info.type.elem = std::make_shared<TypeProto>(tensor_value_info("", 7, {2}).type);
  seq_info.doc_string = "a sequence";
  seq_info.metadata_props.push_back({"mk", "mv"});
  g->value_info.push_back(seq_info);
  ValueInfoProto scalar = tensor_value_info("scalar", 6, {});
  g->value_info.push_back(scalar);  // has_shape with no dims: a scalar, not unknown rank
  ValueInfoProto no_shape;
  no_shape.name = "unranked";
  no_shape.has_type = true;
  no_shape.type.value_case = TypeProto::Case::kTensorType;
  no_shape.type.elem_type = 1;
  g->value_info.push_back(no_shape);

  g->initializer.push_back(float_tensor("W", {3}, {1.0f, 2.0f, -3.5f}));
  TensorProto typed;
  typed.name = "typed";
  typed.doc_string = "every typed field";
  typed.data_type = 7;
  typed.dims = {2};
  typed.int64_data = {-5, int64_t{1} << 40};
  g->initializer.push_back(typed);

  SparseTensorProto sparse;
  sparse.dims = {4, 4};
  sparse.values = float_tensor("sparse_values", {2}, {5.0f, 6.0f});
  sparse.indices.name = "sparse_indices";
  sparse.indices.data_type = 7;
  sparse.indices.dims = {2};
  sparse.indices.int64_data = {1, 14};
  g->sparse_initializer.push_back(sparse);

  NodeProto add;
  add.name = "add0";
  add.op_type = "Add";
  add.input = {"X", "W"};
  add.output = {"Y"};
  add.doc_string = "node doc";
  add.metadata_props.push_back({"nk", "nv"});
  g->node.push_back(add);

  NodeProto everything;
  everything.name = "attrs";
  everything.op_type = "Custom";
  everything.domain = "local";
  everything.overload = "v2";
  everything.input = {"X", "", "W"};  // an omitted optional input keeps its slot
  everything.output = {"Z"};
  auto attr = [&](const std::string& name, int32_t type) -> AttributeProto& {
    AttributeProto a;
    a.name = name;
    a.type = type;
    everything.attribute.push_back(a);
    return everything.attribute.back();
  };
  attr("f", AttributeProto::FLOAT).f = 0.25f;
  attr("f0", AttributeProto::FLOAT).f = 0.0f;
  attr("i", AttributeProto::INT).i = -42;
  attr("i0", AttributeProto::INT).i = 0;
  attr("s", AttributeProto::STRING).s = std::string("bytes\0with nul", 14);
  attr("s0", AttributeProto::STRING).s = "";
  attr("t", AttributeProto::TENSOR).t = std::make_shared<TensorProto>(float_tensor("tv", {1}, {9.0f}));
  {
    auto sub = std::make_shared<GraphProto>();
    sub->name = "then";
    sub->output.push_back(tensor_value_info("W", 1, {3}));
    sub->initializer.push_back(float_tensor("inner", {1}, {4.0f}));
    attr("g", AttributeProto::GRAPH).g = sub;
  }
  attr("floats", AttributeProto::FLOATS).floats = {1.5f, -2.0f, 0.0f};
  attr("ints", AttributeProto::INTS).ints = {1, -1, int64_t{1} << 50};
  attr("strings", AttributeProto::STRINGS).strings = {"a", "", "ccc"};
  attr("tensors", AttributeProto::TENSORS).tensors = {float_tensor("t1", {1}, {1.0f}), float_tensor("t2", {2}, {2.0f, 3.0f})};
  {
    auto g1 = std::make_shared<GraphProto>();
    g1->name = "g1";
    auto g2 = std::make_shared<GraphProto>();
    g2->name = "g2";
    attr("graphs", AttributeProto::GRAPHS).graphs = {g1, g2};
  }
  attr("sparse", AttributeProto::SPARSE_TENSOR).sparse_tensor = std::make_shared<SparseTensorProto>(sparse);
  attr("sparses", AttributeProto::SPARSE_TENSORS).sparse_tensors = {sparse, sparse};
  {
    auto map_type = std::make_shared<TypeProto>();
    map_type->value_case = TypeProto::Case::kMapType;
    map_type->key_type = 8;
    map_type->elem = std::make_shared<TypeProto>(tensor_value_info("", 1, {}).type);
    map_type->denotation = "MAP";
    attr("tp", AttributeProto::TYPE_PROTO).tp = map_type;
    TypeProto optional;
    optional.value_case = TypeProto::Case::kOptionalType;
    optional.elem = map_type;
    TypeProto sparse_type;
    sparse_type.value_case = TypeProto::Case::kSparseTensorType;
    sparse_type.elem_type = 1;
    sparse_type.has_shape = true;
    sparse_type.shape.dim.resize(2);
    sparse_type.shape.dim[0].has_value = true;
    sparse_type.shape.dim[0].dim_value = 4;
    sparse_type.shape.dim[1].dim_param = "M";
    sparse_type.shape.dim[1].denotation = "FEATURE";
    attr("tps", AttributeProto::TYPE_PROTOS).type_protos = {optional, sparse_type};
  }
  {
    AttributeProto& ref = attr("alpha_ref", AttributeProto::FLOAT);
    ref.ref_attr_name = "alpha";
    ref.doc_string = "refers to the caller";
  }
  g->node.push_back(everything);
  m.graph = g;

  FunctionProto fn;
  fn.name = "Custom";
  fn.domain = "local";
  fn.overload = "v2";
  fn.doc_string = "function doc";
  fn.input = {"a", "b", "c"};
  fn.output = {"z"};
  fn.attribute = {"alpha"};
  AttributeProto with_default;
  with_default.name = "beta";
  with_default.type = AttributeProto::INT;
  with_default.i = 3;
  fn.attribute_proto.push_back(with_default);
  NodeProto fnode;
  fnode.op_type = "Identity";
  fnode.input = {"a"};
  fnode.output = {"z"};
  fn.node.push_back(fnode);
  fn.opset_import.push_back({"", 21});
  fn.value_info.push_back(tensor_value_info("a", 1, {3}));
  fn.metadata_props.push_back({"fk", "fv"});
  m.functions.push_back(fn);
  return m;
}

// ---- Round trips through writer and reader ----------------------------------

TEST(ModelWriterReader, FullModelRoundTripsEveryField) {
  const ModelProto original = make_full_model();
  const std::string bytes = serialize_model(original);
  auto read = read_model_bytes(bytes);
  ASSERT_TRUE(read.is_ok()) << read.status().message();
  const ModelProto& m = read.value();

  // Writing what was read reproduces the same bytes: every field made it
  // through the reader into the field the writer takes it from.
  EXPECT_EQ(serialize_model(m), bytes);

  EXPECT_EQ(m.ir_version, 10);
  EXPECT_EQ(m.producer_name, "onyx-test");
  EXPECT_EQ(m.producer_version, "1.2");
  EXPECT_EQ(m.domain, "ai.onyx.test");
  EXPECT_EQ(m.model_version, 7);
  EXPECT_EQ(m.doc_string, "a model with every field");
  ASSERT_EQ(m.opset_import.size(), 3u);
  EXPECT_EQ(m.opset_import[1].domain, "ai.onnx.ml");
  EXPECT_EQ(m.opset_import[1].version, 3);
  ASSERT_EQ(m.metadata_props.size(), 1u);
  EXPECT_EQ(m.metadata_props[0].key, "author");
  EXPECT_EQ(m.metadata_props[0].value, "test");

  ASSERT_TRUE(m.graph);
  const GraphProto& g = *m.graph;
  EXPECT_EQ(g.name, "main");
  EXPECT_EQ(g.doc_string, "graph doc");
  ASSERT_EQ(g.input.size(), 1u);
  ASSERT_EQ(g.input[0].type.shape.dim.size(), 2u);
  EXPECT_FALSE(g.input[0].type.shape.dim[0].has_value);
  EXPECT_EQ(g.input[0].type.shape.dim[0].dim_param, "N");
  EXPECT_TRUE(g.input[0].type.shape.dim[1].has_value);
  EXPECT_EQ(g.input[0].type.shape.dim[1].dim_value, 3);
  ASSERT_EQ(g.value_info.size(), 3u);
  EXPECT_EQ(g.value_info[0].type.value_case, TypeProto::Case::kSequenceType);
  ASSERT_TRUE(g.value_info[0].type.elem);
  EXPECT_EQ(g.value_info[0].type.elem->elem_type, 7);
  EXPECT_EQ(g.value_info[0].doc_string, "a sequence");
  EXPECT_EQ(g.value_info[0].metadata_props.at(0).value, "mv");
  EXPECT_TRUE(g.value_info[1].type.has_shape);
  EXPECT_TRUE(g.value_info[1].type.shape.dim.empty());
  EXPECT_FALSE(g.value_info[2].type.has_shape);

  ASSERT_EQ(g.initializer.size(), 2u);
  const TensorProto& w = g.initializer[0];
  EXPECT_EQ(w.name, "W");
  EXPECT_EQ(w.dims, (std::vector<int64_t>{3}));
  ASSERT_TRUE(w.has_raw_data);
  ASSERT_EQ(w.raw_data.size(), 12u);
  float values[3];
  std::memcpy(values, w.raw_data.data(), 12);
  EXPECT_EQ(values[2], -3.5f);
  EXPECT_EQ(g.initializer[1].int64_data, (std::vector<int64_t>{-5, int64_t{1} << 40}));
  EXPECT_EQ(g.initializer[1].doc_string, "every typed field");
  ASSERT_EQ(g.sparse_initializer.size(), 1u);
  EXPECT_EQ(g.sparse_initializer[0].dims, (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(g.sparse_initializer[0].indices.int64_data, (std::vector<int64_t>{1, 14}));
  EXPECT_EQ(g.sparse_initializer[0].values.raw_data.size(), 8u);

  ASSERT_EQ(g.node.size(), 2u);
  EXPECT_EQ(g.node[0].metadata_props.at(0).key, "nk");
  const NodeProto& n = g.node[1];
  EXPECT_EQ(n.domain, "local");
  EXPECT_EQ(n.overload, "v2");
  EXPECT_EQ(n.input, (std::vector<std::string>{"X", "", "W"}));
  auto find = [&](const std::string& name) -> const AttributeProto& {
    for (const AttributeProto& a : n.attribute) {
      if (a.name == name) return a;
    }
    ADD_FAILURE() << "no attribute " << name;
    static AttributeProto none;
    return none;
  };
  EXPECT_EQ(find("f").f, 0.25f);
  EXPECT_EQ(find("f0").type, AttributeProto::FLOAT);
  EXPECT_EQ(find("i").i, -42);
  EXPECT_EQ(find("i0").type, AttributeProto::INT);
  EXPECT_EQ(find("s").s, std::string("bytes\0with nul", 14));
  EXPECT_EQ(find("s0").type, AttributeProto::STRING);
  ASSERT_TRUE(find("t").t);
  EXPECT_EQ(find("t").t->name, "tv");
  ASSERT_TRUE(find("g").g);
  EXPECT_EQ(find("g").g->initializer.at(0).name, "inner");
  EXPECT_EQ(find("floats").floats, (std::vector<float>{1.5f, -2.0f, 0.0f}));
  EXPECT_EQ(find("ints").ints, (std::vector<int64_t>{1, -1, int64_t{1} << 50}));
  EXPECT_EQ(find("strings").strings, (std::vector<std::string>{"a", "", "ccc"}));
  EXPECT_EQ(find("tensors").tensors.size(), 2u);
  ASSERT_EQ(find("graphs").graphs.size(), 2u);
  EXPECT_EQ(find("graphs").graphs[1]->name, "g2");
  ASSERT_TRUE(find("sparse").sparse_tensor);
  EXPECT_EQ(find("sparse").sparse_tensor->indices.int64_data.size(), 2u);
  EXPECT_EQ(find("sparses").sparse_tensors.size(), 2u);
  const AttributeProto& tp = find("tp");
  ASSERT_TRUE(tp.tp);
  EXPECT_EQ(tp.tp->value_case, TypeProto::Case::kMapType);
  EXPECT_EQ(tp.tp->key_type, 8);
  EXPECT_EQ(tp.tp->denotation, "MAP");
  ASSERT_TRUE(tp.tp->elem);
  EXPECT_EQ(tp.tp->elem->elem_type, 1);
  const AttributeProto& tps = find("tps");
  ASSERT_EQ(tps.type_protos.size(), 2u);
  EXPECT_EQ(tps.type_protos[0].value_case, TypeProto::Case::kOptionalType);
  ASSERT_TRUE(tps.type_protos[0].elem);
  EXPECT_EQ(tps.type_protos[0].elem->value_case, TypeProto::Case::kMapType);
  EXPECT_EQ(tps.type_protos[1].value_case, TypeProto::Case::kSparseTensorType);
  EXPECT_EQ(tps.type_protos[1].shape.dim[1].dim_param, "M");
  EXPECT_EQ(tps.type_protos[1].shape.dim[1].denotation, "FEATURE");
  EXPECT_EQ(find("alpha_ref").ref_attr_name, "alpha");
  EXPECT_EQ(find("alpha_ref").doc_string, "refers to the caller");

  ASSERT_EQ(m.functions.size(), 1u);
  const FunctionProto& fn = m.functions[0];
  EXPECT_EQ(fn.name, "Custom");
  EXPECT_EQ(fn.domain, "local");
  EXPECT_EQ(fn.overload, "v2");
  EXPECT_EQ(fn.doc_string, "function doc");
  EXPECT_EQ(fn.input.size(), 3u);
  EXPECT_EQ(fn.attribute, (std::vector<std::string>{"alpha"}));
  EXPECT_EQ(fn.attribute_proto.at(0).i, 3);
  EXPECT_EQ(fn.node.at(0).op_type, "Identity");
  EXPECT_EQ(fn.opset_import.at(0).version, 21);
  EXPECT_EQ(fn.value_info.at(0).name, "a");
  EXPECT_EQ(fn.metadata_props.at(0).key, "fk");
}

TEST(ModelWriterReader, RawDataViewsOutliveTheModelAndCopies) {
  const std::string bytes = serialize_model(make_full_model());
  TensorProto kept;
  {
    auto read = read_model_bytes(bytes);
    ASSERT_TRUE(read.is_ok()) << read.status().message();
    const TensorProto first = read->graph->initializer[0];  // a copy shares the view
    EXPECT_EQ(first.raw_data.data(), read->graph->initializer[0].raw_data.data());
    kept = first;
  }
  // The model is gone; the tensor's backing still holds the bytes.
  float values[3];
  ASSERT_EQ(kept.raw_data.size(), 12u);
  std::memcpy(values, kept.raw_data.data(), 12);
  EXPECT_EQ(values[0], 1.0f);
  EXPECT_EQ(values[2], -3.5f);
}

TEST(ModelWriterReader, SetRawDataSurvivesCopiesOfShortTensors) {
  std::vector<TensorProto> tensors;
  for (int i = 0; i < 20; ++i) {
    TensorProto t;
    t.set_raw_data(std::string(3, static_cast<char>('a' + i)));  // short enough for the small-string buffer
    tensors.push_back(t);  // reallocations move every earlier element
  }
  for (int i = 0; i < 20; ++i) EXPECT_EQ(tensors[i].raw_data, std::string(3, static_cast<char>('a' + i)));
}

TEST(ModelWriterReader, LargeNestedMessagesGetMultiByteLengths) {
  ModelProto m;
  m.graph = std::make_shared<GraphProto>();
  m.graph->initializer.push_back(float_tensor("big", {100000}, std::vector<float>(100000, 1.5f)));
  m.graph->initializer.push_back(float_tensor("small", {1}, {2.0f}));
  const std::string bytes = serialize_model(m);
  auto read = read_model_bytes(bytes);
  ASSERT_TRUE(read.is_ok()) << read.status().message();
  ASSERT_EQ(read->graph->initializer.size(), 2u);
  EXPECT_EQ(read->graph->initializer[0].raw_data.size(), 400000u);
  EXPECT_EQ(read->graph->initializer[1].name, "small");
}

TEST(ModelWriterReader, WritesAndReadsFiles) {
  const fs::path dir = make_temp_dir("file");
  const std::string path = (dir / "full.onnx").string();
  ASSERT_TRUE(write_model_file(make_full_model(), path).is_ok());
  auto read = read_model_file(path);
  ASSERT_TRUE(read.is_ok()) << read.status().message();
  EXPECT_EQ(serialize_model(read.value()), serialize_model(make_full_model()));
  EXPECT_FALSE(write_model_file(make_full_model(), (dir / "missing" / "x.onnx").string()).is_ok());
  fs::remove_all(dir);
}

TEST(ModelReader, MissingAndEmptyFilesAreErrors) {
  auto missing = read_model_file("/nonexistent/model.onnx");
  EXPECT_FALSE(missing.is_ok());
  const fs::path dir = make_temp_dir("empty");
  write_file_bytes(dir / "empty.onnx", "");
  auto empty = read_model_file((dir / "empty.onnx").string());
  ASSERT_FALSE(empty.is_ok());
  EXPECT_NE(empty.status().message().find("empty"), std::string::npos);
  EXPECT_FALSE(read_model_file(dir.string()).is_ok());  // a folder
  fs::remove_all(dir);
}

// ---- Hand-encoded wire bytes ------------------------------------------------

// Encodes with the wire primitives directly, independent of serialize_*.
struct Bytes {
  std::string out;
  wire::Writer w{out};
};

TEST(ModelReader, TensorTypedFieldsDecode) {
  // float_data packed, int32_data unpacked (with a negative value), the rest packed.
  Bytes b;
  b.w.int_field(1, 2);
  b.w.int_field(1, 3);
  b.w.int_field(2, 1);
  b.w.tag(4, WireType::kLengthDelimited);
  b.w.varint(8);
  b.w.fixed32(0x3f800000);  // 1.0f
  b.w.fixed32(0xc0200000);  // -2.5f
  b.w.float_field(4, 4.0f);  // a non-packed element after a packed run appends
  b.w.int_field(5, -7);      // int32 sign-extended: 10 varint bytes
  b.w.int_field(5, 0x3c00);  // float16 1.0 bit pattern, as int32_data carries it
  b.w.bytes_field(6, "hello");
  b.w.bytes_field(6, "");
  size_t body = b.w.begin_message(7);
  b.w.varint(static_cast<uint64_t>(int64_t{-1}));
  b.w.varint(uint64_t{1} << 62);
  b.w.end_message(body);
  b.w.bytes_field(8, "T");
  b.w.bytes_field(9, std::string("\x01\x02\x03", 3));
  b.w.tag(10, WireType::kLengthDelimited);
  b.w.varint(16);
  b.w.fixed64(0x3ff0000000000000ull);  // 1.0
  b.w.fixed64(0xc000000000000000ull);  // -2.0
  b.w.double_field(10, 0.5);
  body = b.w.begin_message(11);
  b.w.varint(UINT64_MAX);
  b.w.varint(5);
  b.w.end_message(body);
  b.w.uint_field(11, 6);
  b.w.bytes_field(12, "doc");
  body = b.w.begin_message(13);
  b.w.bytes_field(1, "location");
  b.w.bytes_field(2, "w.bin");
  b.w.end_message(body);
  b.w.int_field(14, 1);

  auto read = read_tensor_proto(b.out);
  ASSERT_TRUE(read.is_ok()) << read.status().message();
  const TensorProto& t = read.value();
  EXPECT_EQ(t.dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t.data_type, 1);
  EXPECT_EQ(t.float_data, (std::vector<float>{1.0f, -2.5f, 4.0f}));
  EXPECT_EQ(t.int32_data, (std::vector<int32_t>{-7, 0x3c00}));
  EXPECT_EQ(t.string_data, (std::vector<std::string>{"hello", ""}));
  EXPECT_EQ(t.int64_data, (std::vector<int64_t>{-1, int64_t{1} << 62}));
  EXPECT_EQ(t.name, "T");
  EXPECT_TRUE(t.has_raw_data);
  EXPECT_EQ(t.raw_data, std::string_view("\x01\x02\x03", 3));
  EXPECT_EQ(t.double_data, (std::vector<double>{1.0, -2.0, 0.5}));
  EXPECT_EQ(t.uint64_data, (std::vector<uint64_t>{UINT64_MAX, 5, 6}));
  EXPECT_EQ(t.doc_string, "doc");
  ASSERT_EQ(t.external_data.size(), 1u);
  EXPECT_EQ(t.external_data[0].value, "w.bin");
  EXPECT_EQ(t.data_location, 1);

  // serialize_tensor writes the same values back (packed where onnx.proto packs).
  auto again = read_tensor_proto(serialize_tensor(t));
  ASSERT_TRUE(again.is_ok()) << again.status().message();
  EXPECT_EQ(serialize_tensor(again.value()), serialize_tensor(t));
  EXPECT_EQ(again->int32_data, t.int32_data);
  EXPECT_EQ(again->uint64_data, t.uint64_data);
}

TEST(ModelReader, SkipsUnknownFieldsOfEveryWireType) {
  Bytes b;
  b.w.int_field(1000, 12345);            // varint
  b.w.double_field(1001, 2.0);           // 64-bit
  b.w.bytes_field(1002, "ignored");      // length-delimited
  b.w.float_field(1003, 1.0f);           // 32-bit
  b.w.bytes_field(8, "kept");
  b.w.float_field(8, 1.0f);              // a known field with the wrong wire type is skipped too
  b.w.int_field(3, 9);                   // segment (not kept) sent oddly
  auto read = read_tensor_proto(b.out);
  ASSERT_TRUE(read.is_ok()) << read.status().message();
  EXPECT_EQ(read->name, "kept");
}

TEST(ModelReader, RejectsGroupsAndBadWireTypes) {
  for (uint32_t wire_type : {3u, 4u, 6u, 7u}) {
    Bytes b;
    b.w.bytes_field(8, "x");
    b.w.varint((uint64_t{8} << 3) | wire_type);
    b.w.varint(0);
    auto read = read_tensor_proto(b.out);
    ASSERT_FALSE(read.is_ok()) << "wire type " << wire_type;
    EXPECT_EQ(read.status().code(), StatusCode::kInvalidModel);
    EXPECT_NE(read.status().message().find("at byte 3"), std::string::npos) << read.status().message();
  }
  Bytes zero;
  zero.w.varint(0 << 3);  // field number 0
  EXPECT_FALSE(read_tensor_proto(zero.out).is_ok());
  // An 11-byte varint.
  EXPECT_FALSE(read_tensor_proto(std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12)).is_ok());
}

TEST(ModelReader, LyingLengthPrefixIsRejectedBeforeAllocating) {
  for (uint32_t field : {6u, 7u, 4u, 9u, 13u, 1000u}) {
    Bytes b;
    b.w.tag(field, WireType::kLengthDelimited);
    b.w.varint(uint64_t{1} << 60);
    b.out += "abc";
    auto read = read_tensor_proto(b.out);
    ASSERT_FALSE(read.is_ok()) << field;
    EXPECT_NE(read.status().message().find("announces"), std::string::npos) << read.status().message();
  }
  // A packed float field whose length is not a multiple of 4.
  Bytes b;
  b.w.bytes_field(4, "abcdef");
  EXPECT_FALSE(read_tensor_proto(b.out).is_ok());
}

TEST(ModelReader, ErrorsNameTheMessagePath) {
  // graph { name: "main" initializer { name: "bad" float_data: <6 bytes> } }
  Bytes b;
  size_t graph = b.w.begin_message(7);
  b.w.bytes_field(2, "main");
  size_t tensor = b.w.begin_message(5);
  b.w.bytes_field(8, "bad");
  b.w.bytes_field(4, "abcdef");
  b.w.end_message(tensor);
  b.w.end_message(graph);
  auto read = read_model_bytes(b.out);
  ASSERT_FALSE(read.is_ok());
  EXPECT_EQ(read.status().message(),
            "packed field 4 at byte 15 holds 6 bytes, not a multiple of 4 in TensorProto 'bad' in GraphProto 'main' "
            "in ModelProto");

  // A cut at the top level names the field and what was missing.
  const std::string full = serialize_model(make_full_model());
  auto cut = read_model_bytes(std::string_view(full).substr(0, full.size() / 2));
  ASSERT_FALSE(cut.is_ok());
  EXPECT_NE(cut.status().message().find("announces"), std::string::npos) << cut.status().message();
  EXPECT_NE(cut.status().message().find("in ModelProto"), std::string::npos) << cut.status().message();
}

TEST(ModelReader, TypeProtoOneofAndDimensions) {
  Bytes b;
  // tensor_type { elem_type: 1, shape { dim { dim_param "N" dim_value 5 } } } then sequence_type replaces it.
  size_t tensor = b.w.begin_message(1);
  b.w.int_field(1, 1);
  size_t shape = b.w.begin_message(2);
  size_t dim = b.w.begin_message(1);
  b.w.bytes_field(2, "N");
  b.w.int_field(1, 5);
  b.w.end_message(dim);
  b.w.end_message(shape);
  b.w.end_message(tensor);
  auto first = read_type_proto(b.out);
  ASSERT_TRUE(first.is_ok()) << first.status().message();
  EXPECT_EQ(first->value_case, TypeProto::Case::kTensorType);
  ASSERT_EQ(first->shape.dim.size(), 1u);
  EXPECT_TRUE(first->shape.dim[0].has_value);  // the later oneof member wins
  EXPECT_EQ(first->shape.dim[0].dim_value, 5);
  EXPECT_TRUE(first->shape.dim[0].dim_param.empty());

  size_t seq = b.w.begin_message(4);
  size_t elem = b.w.begin_message(1);
  size_t inner = b.w.begin_message(1);
  b.w.int_field(1, 7);
  b.w.end_message(inner);
  b.w.end_message(elem);
  b.w.end_message(seq);
  auto second = read_type_proto(b.out);
  ASSERT_TRUE(second.is_ok()) << second.status().message();
  EXPECT_EQ(second->value_case, TypeProto::Case::kSequenceType);
  EXPECT_FALSE(second->has_shape);
  ASSERT_TRUE(second->elem);
  EXPECT_EQ(second->elem->elem_type, 7);
}

TEST(ModelReader, AttributeTypeIsInferredWhenMissing) {
  Bytes b;
  size_t graph = b.w.begin_message(7);
  size_t node = b.w.begin_message(1);
  size_t attr = b.w.begin_message(5);
  b.w.bytes_field(1, "axis");
  b.w.int_field(3, 2);
  b.w.end_message(attr);
  attr = b.w.begin_message(5);
  b.w.bytes_field(1, "perm");
  b.w.int_field(8, 1);  // ints, non-packed
  b.w.int_field(8, 0);
  size_t packed = b.w.begin_message(8);  // and packed
  b.w.varint(2);
  b.w.varint(3);
  b.w.end_message(packed);
  b.w.end_message(attr);
  b.w.end_message(node);
  b.w.end_message(graph);
  auto read = read_model_bytes(b.out);
  ASSERT_TRUE(read.is_ok()) << read.status().message();
  const auto& attrs = read->graph->node.at(0).attribute;
  EXPECT_EQ(attrs.at(0).type, AttributeProto::INT);
  EXPECT_EQ(attrs.at(0).i, 2);
  EXPECT_EQ(attrs.at(1).type, AttributeProto::INTS);
  EXPECT_EQ(attrs.at(1).ints, (std::vector<int64_t>{1, 0, 2, 3}));
}

TEST(ModelReader, NestingDepthIsLimited) {
  // 40 If-style subgraphs, each inside a node attribute: 3 message levels each.
  auto deepest = std::make_shared<GraphProto>();
  deepest->name = "leaf";
  std::shared_ptr<GraphProto> g = deepest;
  for (int i = 0; i < 40; ++i) {
    auto outer = std::make_shared<GraphProto>();
    NodeProto node;
    node.op_type = "If";
    AttributeProto a;
    a.name = "then_branch";
    a.type = AttributeProto::GRAPH;
    a.g = g;
    node.attribute.push_back(a);
    outer->node.push_back(node);
    g = outer;
  }
  ModelProto m;
  m.graph = g;
  const std::string bytes = serialize_model(m);
  auto limited = read_model_bytes(bytes);
  ASSERT_FALSE(limited.is_ok());
  EXPECT_NE(limited.status().message().find("deeper than"), std::string::npos) << limited.status().message();
  ReaderLimits generous;
  generous.max_nesting_depth = 200;
  EXPECT_TRUE(read_model_bytes(bytes, "", generous).is_ok());

  // A hostile TypeProto nesting 5000 sequence types must stop at the limit,
  // long before the stack could run out.
  Bytes b;
  std::vector<size_t> open;
  for (int i = 0; i < 5000; ++i) {
    open.push_back(b.w.begin_message(4));  // sequence_type
    open.push_back(b.w.begin_message(1));  // elem_type
  }
  for (auto it = open.rbegin(); it != open.rend(); ++it) b.w.end_message(*it);
  auto hostile = read_type_proto(b.out);
  ASSERT_FALSE(hostile.is_ok());
  EXPECT_NE(hostile.status().message().find("deeper than"), std::string::npos);
}

// ---- onnx-data.proto ---------------------------------------------------------

TEST(ModelReader, SequenceMapAndOptionalDecode) {
  TensorProto t1 = float_tensor("a", {1}, {1.0f});
  TensorProto t2 = float_tensor("b", {2}, {2.0f, 3.0f});
  Bytes seq;
  seq.w.bytes_field(1, "seq");
  seq.w.int_field(2, 1);
  seq.w.bytes_field(3, serialize_tensor(t1));
  seq.w.bytes_field(3, serialize_tensor(t2));
  auto s = read_sequence_proto(seq.out);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  EXPECT_EQ(s->name, "seq");
  EXPECT_EQ(s->elem_type, 1);
  ASSERT_EQ(s->tensor_values.size(), 2u);
  EXPECT_EQ(s->tensor_values[1].raw_data.size(), 8u);

  Bytes map;
  map.w.bytes_field(1, "m");
  map.w.int_field(2, 7);
  map.w.int_field(3, 10);
  map.w.int_field(3, -20);
  map.w.bytes_field(5, seq.out);
  Bytes outer;  // sequence of maps
  outer.w.int_field(2, 4);
  outer.w.bytes_field(6, map.out);
  Bytes nested;  // sequence of sequences
  nested.w.int_field(2, 3);
  nested.w.bytes_field(5, seq.out);
  auto sm = read_sequence_proto(outer.out);
  ASSERT_TRUE(sm.is_ok()) << sm.status().message();
  ASSERT_EQ(sm->map_values.size(), 1u);
  EXPECT_EQ(sm->map_values[0].keys, (std::vector<int64_t>{10, -20}));
  ASSERT_TRUE(sm->map_values[0].values);
  EXPECT_EQ(sm->map_values[0].values->tensor_values.size(), 2u);
  auto ss = read_sequence_proto(nested.out);
  ASSERT_TRUE(ss.is_ok());
  EXPECT_EQ(ss->sequence_values.at(0).tensor_values.size(), 2u);

  Bytes opt;
  opt.w.bytes_field(1, "o");
  opt.w.int_field(2, 5);
  Bytes inner;
  inner.w.int_field(2, 3);
  inner.w.bytes_field(5, seq.out);
  opt.w.bytes_field(7, inner.out);
  auto o = read_optional_proto(opt.out);
  ASSERT_TRUE(o.is_ok()) << o.status().message();
  EXPECT_EQ(o->elem_type, 5);
  ASSERT_TRUE(o->optional_value);
  ASSERT_TRUE(o->optional_value->sequence_value);
  EXPECT_EQ(o->optional_value->sequence_value->tensor_values.size(), 2u);
  Bytes with_tensor;
  with_tensor.w.int_field(2, 1);
  with_tensor.w.bytes_field(3, serialize_tensor(t2));
  with_tensor.w.bytes_field(6, map.out);
  auto ot = read_optional_proto(with_tensor.out);
  ASSERT_TRUE(ot.is_ok());
  ASSERT_TRUE(ot->tensor_value);
  EXPECT_EQ(ot->tensor_value->name, "b");
  ASSERT_TRUE(ot->map_value);
  EXPECT_EQ(ot->map_value->key_type, 7);
  auto empty = read_optional_proto("");
  ASSERT_TRUE(empty.is_ok());
  EXPECT_FALSE(empty->tensor_value);
}

// ---- Corrupted and truncated input -------------------------------------------

std::string small_model_bytes() {
  const fs::path add = fs::path(kBackendNodeDir) / "test_add" / "model.onnx";
  if (fs::exists(add)) return read_file_bytes(add);
  ModelProto m = make_full_model();
  return serialize_model(m);
}

TEST(ModelReader, EveryTruncationFailsCleanly) {
  for (const std::string& bytes : {small_model_bytes(), serialize_model(make_full_model())}) {
    ASSERT_TRUE(read_model_bytes(bytes).is_ok());
    size_t failures = 0;
    for (size_t n = 0; n < bytes.size(); ++n) {
      auto read = read_model_bytes(std::string_view(bytes).substr(0, n));
      if (!read.is_ok()) {
        ++failures;
        EXPECT_EQ(read.status().code(), StatusCode::kInvalidModel);
      }
    }
    // Most cuts land inside a field; only cuts at a message boundary decode.
    EXPECT_GT(failures, bytes.size() / 2);
  }
}

TEST(ModelReader, RandomByteFlipsNeverCrash) {
  const std::string original = serialize_model(make_full_model());
  const std::string real = small_model_bytes();
  std::mt19937 rng(1234);
  size_t decoded = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string bytes = round % 2 ? original : real;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      const size_t at = rng() % bytes.size();
      switch (rng() % 3) {
        case 0: bytes[at] = static_cast<char>(rng()); break;
        case 1: bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8))); break;
        default: bytes[at] = static_cast<char>(0xff); break;  // long varints, huge lengths
      }
    }
    auto read = read_model_bytes(bytes);
    if (read.is_ok()) {
      ++decoded;
      // Whatever decoded must also encode and decode again.
      auto again = read_model_bytes(serialize_model(read.value()));
      EXPECT_TRUE(again.is_ok()) << again.status().message();
    }
  }
  SUCCEED() << decoded << " of 3000 corrupted models still decoded";
}

// ---- External data -----------------------------------------------------------

ModelProto model_with_external(const std::string& location, const std::string& offset, const std::string& length) {
  ModelProto m;
  m.ir_version = 10;
  m.opset_import.push_back({"", 21});
  m.graph = std::make_shared<GraphProto>();
  TensorProto t;
  t.name = "ext";
  t.data_type = 1;
  t.dims = {4};
  t.data_location = 1;
  t.external_data.push_back({"location", location});
  if (!offset.empty()) t.external_data.push_back({"offset", offset});
  if (!length.empty()) t.external_data.push_back({"length", length});
  m.graph->initializer.push_back(t);
  return m;
}

TEST(ExternalData, LoadsRangeFromModelFolder) {
  const fs::path dir = make_temp_dir("ext");
  const std::string weights = sequence_of_bytes(64, 3);
  write_file_bytes(dir / "weights.bin", weights);
  fs::create_directories(dir / "sub");
  write_file_bytes(dir / "sub" / "more.bin", weights);
  ModelProto m = model_with_external("weights.bin", "8", "16");
  // Also an external tensor inside a subgraph and one in a nested folder.
  auto sub = std::make_shared<GraphProto>();
  sub->initializer.push_back(model_with_external("sub/more.bin", "16", "").graph->initializer[0]);
  NodeProto node;
  node.op_type = "If";
  AttributeProto a;
  a.name = "then_branch";
  a.type = AttributeProto::GRAPH;
  a.g = sub;
  node.attribute.push_back(a);
  m.graph->node.push_back(node);
  const std::string path = (dir / "model.onnx").string();
  ASSERT_TRUE(write_model_file(m, path).is_ok());

  TensorProto kept;
  {
    auto read = read_model_file(path);
    ASSERT_TRUE(read.is_ok()) << read.status().message();
    const TensorProto& t = read->graph->initializer.at(0);
    ASSERT_TRUE(t.has_raw_data);
    EXPECT_EQ(t.raw_data, std::string_view(weights).substr(8, 16));
    const TensorProto& inner = read->graph->node.at(0).attribute.at(0).g->initializer.at(0);
    ASSERT_TRUE(inner.has_raw_data);
    EXPECT_EQ(inner.raw_data, std::string_view(weights).substr(16));  // no length: to the end
    kept = t;
    // Written back, the tensor still refers to its file rather than inlining the bytes.
    const std::string rewritten = serialize_tensor(t);
    auto again = read_tensor_proto(rewritten);
    ASSERT_TRUE(again.is_ok());
    EXPECT_FALSE(again->has_raw_data);
    EXPECT_EQ(again->external_data.size(), 3u);
  }
  EXPECT_EQ(kept.raw_data, std::string_view(weights).substr(8, 16));  // the mapping outlives the model

  // read_model_bytes: with the folder it resolves, without it says why not.
  const std::string bytes = read_file_bytes(path);
  auto with_dir = read_model_bytes(bytes, dir.string());
  ASSERT_TRUE(with_dir.is_ok()) << with_dir.status().message();
  EXPECT_EQ(with_dir->graph->initializer[0].raw_data, std::string_view(weights).substr(8, 16));
  auto without = read_model_bytes(bytes);
  ASSERT_FALSE(without.is_ok());
  EXPECT_NE(without.status().message().find("base directory"), std::string::npos) << without.status().message();
  EXPECT_NE(without.status().message().find("'ext'"), std::string::npos) << without.status().message();

  // load_external_data on a single tensor.
  TensorProto single = model_with_external("weights.bin", "0", "4").graph->initializer[0];
  ASSERT_TRUE(load_external_data(single, dir.string()).is_ok());
  EXPECT_EQ(single.raw_data, std::string_view(weights).substr(0, 4));
  fs::remove_all(dir);
}

TEST(ExternalData, RefusesPathsOutsideTheModelFolder) {
  const fs::path root = make_temp_dir("ext_escape");
  const fs::path dir = root / "model";
  fs::create_directories(dir / "sub");
  write_file_bytes(root / "secret.bin", sequence_of_bytes(64, 1));
  write_file_bytes(dir / "weights.bin", sequence_of_bytes(64, 2));
  fs::create_symlink(root / "secret.bin", dir / "link.bin");
  fs::create_symlink(dir / "weights.bin", dir / "inside_link.bin");
  fs::create_symlink(root, dir / "sub" / "up");

  struct Case {
    std::string location, offset, length, expect;
  };
  const std::vector<Case> cases = {
      {"../secret.bin", "", "", "'..'"},
      {"sub/../../secret.bin", "", "", "'..'"},
      {"sub/../weights.bin", "", "", "'..'"},  // even when it would stay inside
      {"..\\secret.bin", "", "", "'..'"},
      {(root / "secret.bin").string(), "", "", "absolute"},
      {"/etc/passwd", "", "", "absolute"},
      {"link.bin", "", "", "outside"},
      {"sub/up/secret.bin", "", "", "outside"},
      {"missing.bin", "", "", "cannot resolve"},
      {"", "", "", "empty"},
      {"weights.bin", "60", "8", "past the end"},
      {"weights.bin", "65", "", "past the end"},
      {"weights.bin", "-1", "", "offset"},
      {"weights.bin", "0", "12x", "length"},
      {"weights.bin", "0", "18446744073709551615", "past the end"},
      {"sub", "", "", "regular file"},
  };
  for (const Case& c : cases) {
    const std::string path = (dir / "model.onnx").string();
    ASSERT_TRUE(write_model_file(model_with_external(c.location, c.offset, c.length), path).is_ok());
    auto read = read_model_file(path);
    ASSERT_FALSE(read.is_ok()) << c.location;
    EXPECT_EQ(read.status().code(), StatusCode::kInvalidModel);
    EXPECT_NE(read.status().message().find(c.expect), std::string::npos) << c.location << ": " << read.status().message();
  }
  // A symlink that stays inside the folder is fine.
  const std::string path = (dir / "model.onnx").string();
  ASSERT_TRUE(write_model_file(model_with_external("inside_link.bin", "0", "4"), path).is_ok());
  auto read = read_model_file(path);
  EXPECT_TRUE(read.is_ok()) << read.status().message();
  fs::remove_all(root);
}

// ---- Real models ---------------------------------------------------------------

// Checks what can be checked without knowing the model: numeric initializers
// hold exactly dims-product elements, and the model writes and reads back.
void check_model(const ModelProto& m, const std::string& label) {
  ASSERT_TRUE(m.graph) << label;
  EXPECT_FALSE(m.opset_import.empty()) << label;
  EXPECT_GT(m.ir_version, 0) << label;
  for (const TensorProto& t : m.graph->initializer) {
    int64_t count = 1;
    for (int64_t d : t.dims) count *= d;
    if (t.has_raw_data && dtype_is_known(t.data_type) && t.data_type != static_cast<int32_t>(DataType::kString)) {
      const size_t element = dtype_size(static_cast<DataType>(t.data_type));
      if (element > 0 && t.data_type < 21) {  // sub-byte types pack several per byte
        EXPECT_EQ(t.raw_data.size(), static_cast<size_t>(count) * element) << label << " initializer " << t.name;
      }
    }
  }
  const std::string written = serialize_model(m);
  auto again = read_model_bytes(written);
  ASSERT_TRUE(again.is_ok()) << label << ": " << again.status().message();
  EXPECT_EQ(serialize_model(again.value()), written) << label;
  EXPECT_EQ(again->graph->node.size(), m.graph->node.size()) << label;
  EXPECT_EQ(again->graph->initializer.size(), m.graph->initializer.size()) << label;
}

TEST(RealModels, ReadSharedModels) {
  if (!fs::exists(kModelsDir)) GTEST_SKIP() << kModelsDir << " is absent";
  size_t count = 0;
  for (const auto& entry : fs::directory_iterator(kModelsDir)) {
    if (entry.path().extension() != ".onnx") continue;
    auto read = read_model_file(entry.path().string());
    ASSERT_TRUE(read.is_ok()) << entry.path() << ": " << read.status().message();
    check_model(read.value(), entry.path().filename().string());
    EXPECT_GT(read->graph->node.size(), 0u) << entry.path();
    EXPECT_FALSE(read->graph->input.empty()) << entry.path();
    EXPECT_FALSE(read->graph->output.empty()) << entry.path();
    ++count;
  }
  EXPECT_GT(count, 0u);
}

TEST(RealModels, RawDataIsAViewIntoTheMappedFile) {
  const fs::path path = fs::path(kModelsDir) / "bert_toy_optimized.onnx";
  if (!fs::exists(path)) GTEST_SKIP() << path << " is absent";
  const std::string file = read_file_bytes(path);
  auto read = read_model_file(path.string());
  ASSERT_TRUE(read.is_ok()) << read.status().message();
  const TensorProto* first = nullptr;
  size_t first_offset = 0;
  size_t checked = 0;
  for (const TensorProto& t : read->graph->initializer) {
    if (!t.has_raw_data || t.raw_data.size() < 16) continue;
    if (first == nullptr) {
      first = &t;
      first_offset = file.find(t.raw_data);
      ASSERT_NE(first_offset, std::string::npos);
      continue;
    }
    // Every view sits at its file offset relative to the first: one mapping, no copies.
    const ptrdiff_t delta = t.raw_data.data() - first->raw_data.data();
    const size_t offset = first_offset + static_cast<size_t>(delta);
    ASSERT_LE(offset + t.raw_data.size(), file.size()) << t.name;
    EXPECT_EQ(file.compare(offset, t.raw_data.size(), t.raw_data), 0) << t.name;
    ++checked;
  }
  EXPECT_GT(checked, 0u);
}

TEST(RealModels, ReadBackendNodeModelsAndTestData) {
  if (!fs::exists(kBackendNodeDir)) GTEST_SKIP() << kBackendNodeDir << " is absent";
  std::vector<fs::path> cases;
  for (const auto& entry : fs::directory_iterator(kBackendNodeDir)) cases.push_back(entry.path());
  std::sort(cases.begin(), cases.end());
  size_t models = 0, data_files = 0;
  // Every case: they are small, and together they use every attribute and type kind.
  for (const fs::path& dir : cases) {
    const std::string name = dir.filename().string();
    if (!fs::exists(dir / "model.onnx")) continue;
    auto read = read_model_file((dir / "model.onnx").string());
    ASSERT_TRUE(read.is_ok()) << name << ": " << read.status().message();
    check_model(read.value(), name);
    ++models;
    const fs::path data = dir / "test_data_set_0";
    if (!fs::exists(data)) continue;
    for (const char* kind : {"input", "output"}) {
      const auto& infos = std::string(kind) == "input" ? read->graph->input : read->graph->output;
      // Inputs that are initializers have no data file; files are numbered by position among the rest.
      for (size_t k = 0; k < infos.size(); ++k) {
        const fs::path pb = data / (std::string(kind) + "_" + std::to_string(k) + ".pb");
        if (!fs::exists(pb)) continue;
        const std::string bytes = read_file_bytes(pb);
        Status status;
        switch (infos[k].type.value_case) {
          case TypeProto::Case::kSequenceType: status = read_sequence_proto(bytes).status(); break;
          case TypeProto::Case::kOptionalType: status = read_optional_proto(bytes).status(); break;
          default: {
            auto t = read_tensor_proto(bytes);
            status = t.status();
            if (t.is_ok() && t->has_raw_data && t->data_type == 1) {
              int64_t count = 1;
              for (int64_t d : t->dims) count *= d;
              EXPECT_EQ(t->raw_data.size(), static_cast<size_t>(count) * 4) << pb;
            }
          }
        }
        EXPECT_TRUE(status.is_ok()) << pb << ": " << status.message();
        ++data_files;
      }
    }
  }
  EXPECT_GT(models, 1000u);
  EXPECT_GT(data_files, 1000u);
}

}  // namespace
}  // namespace onyx::model
