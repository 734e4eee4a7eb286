// Static type and shape inference on small hand-built graphs: symbolic dims,
// shape-value tracking, declared-vs-inferred conflicts and subgraphs.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/shape_inference.h"

namespace onyx::graph {
namespace {

// A dim spec for tests: a number, or a symbol when the string is not empty.
struct D {
  D(int64_t v) : dim(Dim::known(v)) {}  // NOLINT: terse test shapes
  D(const char* s) : dim(std::string(s) == "?" ? Dim{} : Dim::symbolic(s)) {}  // NOLINT
  Dim dim;
};

std::vector<Dim> dims(std::initializer_list<D> list) {
  std::vector<Dim> out;
  for (const D& d : list) out.push_back(d.dim);
  return out;
}

std::string shape_string(const TypeAndShape& info) {
  if (!info.has_shape) return "<unknown rank>";
  std::string out = "[";
  for (size_t i = 0; i < info.shape.size(); ++i) {
    if (i) out += ",";
    out += info.shape[i].is_known() ? std::to_string(info.shape[i].value)
                                     : (info.shape[i].symbol.empty() ? "?" : info.shape[i].symbol);
  }
  return out + "]";
}

Attribute int_attr(const std::string& name, int64_t v) {
  Attribute a;
  a.name = name;
  a.type = AttributeType::kInt;
  a.i = v;
  return a;
}
Attribute ints_attr(const std::string& name, std::vector<int64_t> v) {
  Attribute a;
  a.name = name;
  a.type = AttributeType::kInts;
  a.ints = std::move(v);
  return a;
}
Attribute string_attr(const std::string& name, const std::string& v) {
  Attribute a;
  a.name = name;
  a.type = AttributeType::kString;
  a.s = v;
  return a;
}
Attribute tensor_attr(const std::string& name, Tensor t) {
  Attribute a;
  a.name = name;
  a.type = AttributeType::kTensor;
  a.t = std::move(t);
  return a;
}
Attribute graph_attr(const std::string& name, std::shared_ptr<Graph> g) {
  Attribute a;
  a.name = name;
  a.type = AttributeType::kGraph;
  a.g = std::move(g);
  return a;
}

// Builds graphs the way graph/builder does: values by name, inputs typed.
class TestGraph {
 public:
  explicit TestGraph(int opset = 21) : opset_(opset) {}

  TestGraph& input(const std::string& name, DataType type, std::vector<Dim> shape) {
    const int32_t id = graph.value_id(name);
    ValueEntry& entry = graph.values[static_cast<size_t>(id)];
    entry.is_graph_input = true;
    entry.info.type = ValueType::tensor(type);
    entry.info.has_shape = true;
    entry.info.shape = std::move(shape);
    graph.inputs.push_back(id);
    return *this;
  }
  TestGraph& initializer(const std::string& name, Tensor tensor) {
    const int32_t id = graph.value_id(name);
    graph.values[static_cast<size_t>(id)].is_initializer = true;
    graph.initializers[id] = std::move(tensor);
    return *this;
  }
  TestGraph& declare(const std::string& name, DataType type, std::vector<Dim> shape) {
    ValueEntry& entry = graph.values[static_cast<size_t>(graph.value_id(name))];
    entry.info.type = ValueType::tensor(type);
    entry.info.has_shape = true;
    entry.info.shape = std::move(shape);
    return *this;
  }
  TestGraph& node(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs,
                  std::vector<Attribute> attributes = {}, int opset = 0, const std::string& domain = "") {
    Node n;
    n.name = op + "_" + std::to_string(graph.nodes.size());
    n.op_type = op;
    n.domain = domain;
    n.opset = opset > 0 ? opset : opset_;
    for (const auto& in : inputs) n.inputs.push_back(in.empty() ? kNoValue : graph.value_id(in));
    for (const auto& out : outputs) {
      const int32_t id = graph.value_id(out);
      graph.values[static_cast<size_t>(id)].producer = static_cast<int32_t>(graph.nodes.size());
      n.outputs.push_back(id);
    }
    for (auto& a : attributes) n.attributes[a.name] = a;
    graph.nodes.push_back(std::move(n));
    return *this;
  }
  TestGraph& output(const std::string& name) {
    graph.outputs.push_back(graph.value_id(name));
    return *this;
  }
  const TypeAndShape& info(const std::string& name) {
    return graph.values[static_cast<size_t>(graph.find_value(name))].info;
  }
  std::string shape(const std::string& name) { return shape_string(info(name)); }
  DataType type(const std::string& name) { return info(name).type.elem_type; }
  void infer() {
    Status status = infer_shapes(graph);
    ASSERT_TRUE(status.is_ok()) << status.message();
  }

  Graph graph;

 private:
  int opset_;
};

Tensor ints(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())}); }

TEST(ShapeInference, BroadcastKeepsSymbols) {
  TestGraph g;
  g.input("a", DataType::kFloat, dims({"batch", 3})).input("b", DataType::kFloat, dims({1, 3}));
  g.node("Add", {"a", "b"}, {"c"}).node("Equal", {"a", "c"}, {"eq"}).node("Relu", {"c"}, {"r"});
  g.infer();
  EXPECT_EQ(g.shape("c"), "[batch,3]");
  EXPECT_EQ(g.type("c"), DataType::kFloat);
  EXPECT_EQ(g.type("eq"), DataType::kBool);
  EXPECT_EQ(g.shape("r"), "[batch,3]");
}

TEST(ShapeInference, BroadcastOfDifferentSymbolsIsUnknown) {
  TestGraph g;
  g.input("a", DataType::kFloat, dims({"n", 1, 4})).input("b", DataType::kFloat, dims({"m", 5, 1}));
  g.node("Mul", {"a", "b"}, {"c"});
  g.infer();
  EXPECT_EQ(g.shape("c"), "[?,5,4]");
}

TEST(ShapeInference, BroadcastConflictIsAnError) {
  TestGraph g;
  g.input("a", DataType::kFloat, dims({2, 3})).input("b", DataType::kFloat, dims({4, 3}));
  g.node("Add", {"a", "b"}, {"c"});
  Status status = infer_shapes(g.graph);
  ASSERT_FALSE(status.is_ok());
  EXPECT_NE(status.message().find("Add 'Add_0'"), std::string::npos) << status.message();
}

TEST(ShapeInference, MatMulAndGemm) {
  TestGraph g;
  g.input("x", DataType::kFloat, dims({"batch", "seq", 768}));
  g.initializer("w", Tensor(DataType::kFloat, {768, 3072}));
  g.input("a", DataType::kFloat, dims({"m", 16})).input("bt", DataType::kFloat, dims({8, 16}));
  g.node("MatMul", {"x", "w"}, {"y"});
  g.node("Gemm", {"a", "bt"}, {"z"}, {int_attr("transB", 1)});
  g.input("v", DataType::kFloat, dims({768}));
  g.node("MatMul", {"x", "v"}, {"xv"});
  g.infer();
  EXPECT_EQ(g.shape("y"), "[batch,seq,3072]");
  EXPECT_EQ(g.shape("z"), "[m,8]");
  EXPECT_EQ(g.shape("xv"), "[batch,seq]");
  EXPECT_EQ(g.shape("w"), "[768,3072]");
}

TEST(ShapeInference, MatMulInnerDimMismatchIsAnError) {
  TestGraph g;
  g.input("a", DataType::kFloat, dims({2, 3})).input("b", DataType::kFloat, dims({4, 5}));
  g.node("MatMul", {"a", "b"}, {"c"});
  EXPECT_FALSE(infer_shapes(g.graph).is_ok());
}

TEST(ShapeInference, ConvPoolAndGlobalPool) {
  TestGraph g;
  g.input("x", DataType::kFloat, dims({"N", 3, 224, 224}));
  g.initializer("w", Tensor(DataType::kFloat, {64, 3, 7, 7}));
  g.node("Conv", {"x", "w"}, {"c"}, {ints_attr("strides", {2, 2}), ints_attr("pads", {3, 3, 3, 3})});
  g.node("MaxPool", {"c"}, {"p"},
         {ints_attr("kernel_shape", {3, 3}), ints_attr("strides", {2, 2}), ints_attr("pads", {1, 1, 1, 1})});
  g.node("AveragePool", {"p"}, {"q"}, {ints_attr("kernel_shape", {2, 2}), string_attr("auto_pad", "SAME_UPPER"),
                                       ints_attr("strides", {2, 2})});
  g.node("GlobalAveragePool", {"q"}, {"gap"});
  g.node("Flatten", {"gap"}, {"flat"});
  g.infer();
  EXPECT_EQ(g.shape("c"), "[N,64,112,112]");
  EXPECT_EQ(g.shape("p"), "[N,64,56,56]");
  EXPECT_EQ(g.shape("q"), "[N,64,28,28]");
  EXPECT_EQ(g.shape("gap"), "[N,64,1,1]");
  EXPECT_EQ(g.shape("flat"), "[N,64]");
}

TEST(ShapeInference, CeilModeDropsAWindowStartingInPadding) {
  TestGraph g;
  g.input("x", DataType::kFloat, dims({1, 1, 3}));
  g.node("MaxPool", {"x"}, {"y"},
         {ints_attr("kernel_shape", {1}), ints_attr("strides", {2}), ints_attr("pads", {1, 1}), int_attr("ceil_mode", 1)});
  g.infer();
  EXPECT_EQ(g.shape("y"), "[1,1,2]");
}

TEST(ShapeInference, ConvTranspose) {
  TestGraph g;
  g.input("x", DataType::kFloat, dims({1, 8, 10, 10}));
  g.initializer("w", Tensor(DataType::kFloat, {8, 4, 3, 3}));
  g.node("ConvTranspose", {"x", "w"}, {"y"}, {ints_attr("strides", {2, 2}), ints_attr("pads", {1, 1, 1, 1}),
                                              ints_attr("output_padding", {1, 1})});
  g.infer();
  EXPECT_EQ(g.shape("y"), "[1,4,20,20]");
}

TEST(ShapeInference, ReshapeThroughShapeArithmetic) {
  // Reshape(x, Concat(Shape(x)[0:2], [12, -1])): the shape chain of an attention head split.
  TestGraph g(13);
  g.input("x", DataType::kFloat, dims({"batch", "seq", 768}));
  g.initializer("zero", ints({0})).initializer("two", ints({2})).initializer("tail", ints({12, -1}));
  g.node("Shape", {"x"}, {"s"});
  g.node("Slice", {"s", "zero", "two"}, {"s01"});
  g.node("Concat", {"s01", "tail"}, {"target"}, {int_attr("axis", 0)});
  g.node("Reshape", {"x", "target"}, {"heads"});
  g.node("Transpose", {"heads"}, {"t"}, {ints_attr("perm", {0, 2, 1, 3})});
  g.infer();
  EXPECT_EQ(g.shape("s"), "[3]");
  EXPECT_EQ(g.type("s"), DataType::kInt64);
  EXPECT_EQ(g.shape("target"), "[4]");
  EXPECT_EQ(g.shape("heads"), "[batch,seq,12,64]");
  EXPECT_EQ(g.shape("t"), "[batch,12,seq,64]");
}

TEST(ShapeInference, ReshapeWithZeroAndMinusOne) {
  TestGraph g;
  g.input("x", DataType::kFloat, dims({"b", 4, 6}));
  g.initializer("shape", ints({0, -1}));
  g.initializer("fixed", ints({2, -1, 3}));
  g.input("y", DataType::kFloat, dims({4, 6}));
  g.node("Reshape", {"x", "shape"}, {"r"}).node("Reshape", {"y", "fixed"}, {"r2"});
  g.infer();
  EXPECT_EQ(g.shape("r"), "[b,24]");
  EXPECT_EQ(g.shape("r2"), "[2,4,3]");
}

TEST(ShapeInference, GatherOfShapeFeedsUnsqueezeAndExpand) {
  TestGraph g(13);
  g.input("x", DataType::kFloat, dims({"n", 5}));
  g.initializer("idx0", Tensor::scalar<int64_t>(0)).initializer("axes0", ints({0}));
  g.initializer("five", ints({5}));
  g.input("ones", DataType::kFloat, dims({1, 1}));
  g.node("Shape", {"x"}, {"s"});
  g.node("Gather", {"s", "idx0"}, {"n0"});
  g.node("Unsqueeze", {"n0", "axes0"}, {"n1"});
  g.node("Concat", {"n1", "five"}, {"target"}, {int_attr("axis", 0)});
  g.node("Expand", {"ones", "target"}, {"e"});
  g.node("ConstantOfShape", {"target"}, {"zeros"}, {tensor_attr("value", Tensor::from_vector<int32_t>({0}, {1}))});
  g.infer();
  EXPECT_EQ(g.shape("n0"), "[]");
  EXPECT_EQ(g.shape("e"), "[n,5]");
  EXPECT_EQ(g.shape("zeros"), "[n,5]");
  EXPECT_EQ(g.type("zeros"), DataType::kInt32);
}

TEST(ShapeInference, TensorOps) {
  TestGraph g(18);
  g.input("x", DataType::kFloat, dims({"b", 10, 20}));
  g.initializer("starts", ints({1, 0})).initializer("ends", ints({-1, 100})).initializer("axes", ints({1, 2}));
  g.initializer("steps", ints({2, 3}));
  g.initializer("split", ints({4, 6}));
  g.initializer("reduce_axes", ints({1}));
  g.initializer("k", ints({3}));
  g.initializer("repeats", ints({1, 2, 1}));
  g.initializer("pads", ints({0, 1, 2, 0, 1, 2}));
  g.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"sl"});
  g.node("Split", {"x", "split"}, {"sp0", "sp1"}, {int_attr("axis", 1)});
  g.node("Concat", {"sp1", "sp0"}, {"cc"}, {int_attr("axis", 1)});
  g.node("ReduceMean", {"x", "reduce_axes"}, {"rm"}, {int_attr("keepdims", 0)});
  g.node("ReduceSum", {"x"}, {"rs"});
  g.node("ArgMax", {"x"}, {"am"}, {int_attr("axis", 2)});
  g.node("TopK", {"x", "k"}, {"tv", "ti"});
  g.node("Tile", {"x", "repeats"}, {"ti2"});
  g.node("Pad", {"x", "pads"}, {"pd"});
  g.node("Softmax", {"x"}, {"sm"});
  g.node("Cast", {"x"}, {"ci"}, {int_attr("to", 7)});
  g.node("Size", {"x"}, {"sz"});
  g.node("Transpose", {"x"}, {"tr"});
  g.infer();
  EXPECT_EQ(g.shape("sl"), "[b,4,7]");
  EXPECT_EQ(g.shape("sp0"), "[b,4,20]");
  EXPECT_EQ(g.shape("sp1"), "[b,6,20]");
  EXPECT_EQ(g.shape("cc"), "[b,10,20]");
  EXPECT_EQ(g.shape("rm"), "[b,20]");
  EXPECT_EQ(g.shape("rs"), "[1,1,1]");
  EXPECT_EQ(g.shape("am"), "[b,10,1]");
  EXPECT_EQ(g.type("am"), DataType::kInt64);
  EXPECT_EQ(g.shape("tv"), "[b,10,3]");
  EXPECT_EQ(g.type("ti"), DataType::kInt64);
  EXPECT_EQ(g.shape("ti2"), "[b,20,20]");
  EXPECT_EQ(g.shape("pd"), "[b,12,24]");
  EXPECT_EQ(g.shape("sm"), "[b,10,20]");
  EXPECT_EQ(g.type("ci"), DataType::kInt64);
  EXPECT_EQ(g.shape("sz"), "[]");
  EXPECT_EQ(g.shape("tr"), "[20,10,b]");
}

TEST(ShapeInference, SqueezeUnsqueezeAcrossVersions) {
  TestGraph old_style(11);
  old_style.input("x", DataType::kFloat, dims({1, "n", 1}));
  old_style.node("Squeeze", {"x"}, {"s"}, {ints_attr("axes", {0, 2})});
  old_style.node("Unsqueeze", {"s"}, {"u"}, {ints_attr("axes", {0, -1})});
  old_style.infer();
  EXPECT_EQ(old_style.shape("s"), "[n]");
  EXPECT_EQ(old_style.shape("u"), "[1,n,1]");

  TestGraph new_style(13);
  new_style.input("x", DataType::kFloat, dims({1, "n", 1}));
  new_style.initializer("axes", ints({2}));
  new_style.node("Squeeze", {"x", "axes"}, {"s"});
  new_style.node("Squeeze", {"x"}, {"all"});
  new_style.infer();
  EXPECT_EQ(new_style.shape("s"), "[1,n]");
  EXPECT_EQ(new_style.shape("all"), "<unknown rank>");  // n might be 1
}

TEST(ShapeInference, ConstantRangeWhereResize) {
  TestGraph g;
  g.input("x", DataType::kFloat, dims({1, 3, 8, 8}));
  g.node("Constant", {}, {"c"}, {tensor_attr("value", Tensor::from_vector<float>({1, 1, 2, 2}, {4}))});
  g.node("Resize", {"x", "", "c"}, {"up"}, {string_attr("mode", "nearest")});
  g.initializer("start", Tensor::scalar<int64_t>(2)).initializer("limit", Tensor::scalar<int64_t>(11));
  g.initializer("delta", Tensor::scalar<int64_t>(3));
  g.node("Range", {"start", "limit", "delta"}, {"r"});
  g.input("cond", DataType::kBool, dims({8, 1}));
  g.node("Where", {"cond", "x", "x"}, {"w"});
  g.infer();
  EXPECT_EQ(g.shape("c"), "[4]");
  EXPECT_EQ(g.shape("up"), "[1,3,16,16]");
  EXPECT_EQ(g.shape("r"), "[3]");
  EXPECT_EQ(g.type("r"), DataType::kInt64);
  EXPECT_EQ(g.shape("w"), "[1,3,8,8]");
  EXPECT_EQ(g.type("w"), DataType::kFloat);
}

TEST(ShapeInference, NonConstantShapeInputsGiveTypeOnly) {
  TestGraph g;
  g.input("x", DataType::kFloat16, dims({2, 3})).input("shape", DataType::kInt64, dims({"k"}));
  g.node("Reshape", {"x", "shape"}, {"r"});
  g.node("Expand", {"x", "shape"}, {"e"});
  g.infer();
  EXPECT_EQ(g.type("r"), DataType::kFloat16);
  EXPECT_EQ(g.shape("r"), "<unknown rank>");
  EXPECT_EQ(g.type("e"), DataType::kFloat16);
}

TEST(ShapeInference, OpsWithoutInferenceUseTheSchemaTypes) {
  TestGraph g;
  g.input("x", DataType::kDouble, dims({4, 4}));
  g.node("Unique", {"x"}, {"u", "idx"});  // no C++ function: T shared with the input, a fixed int64
  g.node("CustomThing", {"x"}, {"custom"}, {}, 1, "com.example");
  g.node("NonZero", {"x"}, {"nz"});
  g.infer();
  EXPECT_EQ(g.type("u"), DataType::kDouble);
  EXPECT_EQ(g.shape("u"), "<unknown rank>");
  EXPECT_EQ(g.type("idx"), DataType::kInt64);
  EXPECT_EQ(g.info("custom").type.kind, ValueType::Kind::kUnknown);
  EXPECT_EQ(g.type("nz"), DataType::kInt64);
  EXPECT_EQ(g.shape("nz"), "[2,?]");
}

TEST(ShapeInference, DeclaredInfoIsKeptAndMerged) {
  TestGraph g;
  g.input("x", DataType::kFloat, dims({"?", 3})).input("y", DataType::kFloat, dims({1, 3}));
  g.declare("z", DataType::kFloat, dims({"batch", "?"}));
  g.node("Add", {"x", "y"}, {"z"});
  g.infer();
  EXPECT_EQ(g.shape("z"), "[batch,3]");
}

TEST(ShapeInference, IncompatibleDeclaredDimIsAnErrorNamingEverything) {
  TestGraph g;
  g.input("x", DataType::kFloat, dims({"batch", 3})).input("y", DataType::kFloat, dims({1, 3}));
  g.declare("sum", DataType::kFloat, dims({"batch", 4}));
  g.node("Add", {"x", "y"}, {"sum"});
  Status status = infer_shapes(g.graph);
  ASSERT_FALSE(status.is_ok());
  const std::string& m = status.message();
  EXPECT_NE(m.find("Add 'Add_0'"), std::string::npos) << m;
  EXPECT_NE(m.find("sum"), std::string::npos) << m;
  EXPECT_NE(m.find("[batch,4]"), std::string::npos) << m;
  EXPECT_NE(m.find("[batch,3]"), std::string::npos) << m;

  InferenceOptions lenient;
  lenient.error_on_mismatch = false;
  EXPECT_TRUE(infer_shapes(g.graph, lenient).is_ok());
  EXPECT_EQ(g.shape("sum"), "[batch,4]");
}

TEST(ShapeInference, DifferentSymbolsAreNotAConflict) {
  TestGraph g;
  g.input("x", DataType::kFloat, dims({"n", 3}));
  g.declare("y", DataType::kFloat, dims({"m", 3}));
  g.node("Relu", {"x"}, {"y"});
  g.infer();
  EXPECT_EQ(g.shape("y"), "[n,3]");
}

TEST(ShapeInference, NormalizationOutputs) {
  TestGraph g(17);
  g.input("x", DataType::kFloat, dims({"b", "s", 64}));
  g.initializer("scale", Tensor(DataType::kFloat, {64}));
  g.node("LayerNormalization", {"x", "scale"}, {"y", "mean", "inv"}, {int_attr("axis", -1)});
  g.input("img", DataType::kFloat, dims({"b", 16, 8, 8}));
  g.initializer("c16", Tensor(DataType::kFloat, {16}));
  g.node("BatchNormalization", {"img", "c16", "c16", "c16", "c16"}, {"bn"});
  g.node("Dropout", {"x"}, {"d", "mask"});
  g.infer();
  EXPECT_EQ(g.shape("y"), "[b,s,64]");
  EXPECT_EQ(g.shape("mean"), "[b,s,1]");
  EXPECT_EQ(g.shape("bn"), "[b,16,8,8]");
  EXPECT_EQ(g.type("mask"), DataType::kBool);
  EXPECT_EQ(g.shape("mask"), "[b,s,64]");
}

TEST(ShapeInference, IfBranchesSeeOuterValues) {
  TestGraph g;
  g.input("x", DataType::kFloat, dims({"n", 4})).input("cond", DataType::kBool, dims({}));

  auto then_branch = std::make_shared<Graph>();
  {
    const int32_t x = then_branch->value_id("x");
    then_branch->values[static_cast<size_t>(x)].is_outer_scope = true;
    then_branch->outer_scope_values.push_back(x);
    Node relu;
    relu.op_type = "Relu";
    relu.opset = 21;
    relu.inputs = {x};
    relu.outputs = {then_branch->value_id("then_out")};
    then_branch->values[static_cast<size_t>(relu.outputs[0])].producer = 0;
    then_branch->nodes.push_back(relu);
    then_branch->outputs.push_back(relu.outputs[0]);
  }
  auto else_branch = std::make_shared<Graph>();
  {
    const int32_t x = else_branch->value_id("x");
    else_branch->values[static_cast<size_t>(x)].is_outer_scope = true;
    else_branch->outer_scope_values.push_back(x);
    Node neg;
    neg.op_type = "Neg";
    neg.opset = 21;
    neg.inputs = {x};
    neg.outputs = {else_branch->value_id("else_out")};
    else_branch->values[static_cast<size_t>(neg.outputs[0])].producer = 0;
    else_branch->nodes.push_back(neg);
    else_branch->outputs.push_back(neg.outputs[0]);
  }
  g.node("If", {"cond"}, {"out"}, {graph_attr("then_branch", then_branch), graph_attr("else_branch", else_branch)});
  g.infer();
  EXPECT_EQ(shape_string(then_branch->values[static_cast<size_t>(then_branch->find_value("then_out"))].info), "[n,4]");
  EXPECT_EQ(g.type("out"), DataType::kFloat);
  EXPECT_EQ(g.shape("out"), "[n,4]");
}

TEST(ShapeInference, LoopTypesItsOutputs) {
  TestGraph g;
  g.input("x", DataType::kFloat, dims({3})).input("m", DataType::kInt64, dims({})).input("c", DataType::kBool, dims({}));
  auto body = std::make_shared<Graph>();
  {
    const int32_t iter = body->value_id("i");
    const int32_t cond = body->value_id("cond_in");
    const int32_t carried = body->value_id("v");
    for (int32_t id : {iter, cond, carried}) {
      body->values[static_cast<size_t>(id)].is_graph_input = true;
      body->inputs.push_back(id);
    }
    Node add;
    add.op_type = "Add";
    add.opset = 21;
    add.inputs = {carried, carried};
    add.outputs = {body->value_id("v_next")};
    body->values[static_cast<size_t>(add.outputs[0])].producer = 0;
    Node id;
    id.op_type = "Identity";
    id.opset = 21;
    id.inputs = {cond};
    id.outputs = {body->value_id("cond_out")};
    body->values[static_cast<size_t>(id.outputs[0])].producer = 1;
    body->nodes = {add, id};
    body->outputs = {id.outputs[0], add.outputs[0], add.outputs[0]};
  }
  g.node("Loop", {"m", "c", "x"}, {"final", "stacked"}, {graph_attr("body", body)});
  g.infer();
  EXPECT_EQ(g.type("final"), DataType::kFloat);
  EXPECT_EQ(g.type("stacked"), DataType::kFloat);
  EXPECT_EQ(body->values[static_cast<size_t>(body->find_value("cond_out"))].info.type.elem_type, DataType::kBool);
}

TEST(ShapeInference, EinsumExplicitAndImplicit) {
  TestGraph g;
  g.input("a", DataType::kFloat, dims({"b", 3, 4})).input("c", DataType::kFloat, dims({"b", 4, 5}));
  g.node("Einsum", {"a", "c"}, {"bmm"}, {string_attr("equation", "bij, bjk -> bik")});
  g.node("Einsum", {"a"}, {"tr"}, {string_attr("equation", "...ij->...ji")});
  g.node("Einsum", {"a", "c"}, {"implicit"}, {string_attr("equation", "bij,bjk")});
  g.infer();
  EXPECT_EQ(g.shape("bmm"), "[b,3,5]");
  EXPECT_EQ(g.shape("tr"), "[b,4,3]");
  EXPECT_EQ(g.shape("implicit"), "[3,5]");
}

TEST(ShapeInference, MlOpsGetTheirTypes) {
  TestGraph g;
  g.input("x", DataType::kFloat, dims({"n", 4}));
  Attribute labels;
  labels.name = "classlabels_strings";
  labels.type = AttributeType::kStrings;
  labels.strings = {"a", "b"};
  g.node("ZipMap", {"x"}, {"z"}, {labels}, 1, "ai.onnx.ml");
  g.node("Scaler", {"x"}, {"s"}, {}, 1, "ai.onnx.ml");
  g.infer();
  const TypeAndShape& z = g.info("z");
  ASSERT_EQ(z.type.kind, ValueType::Kind::kSequence);
  ASSERT_TRUE(z.type.inner);
  EXPECT_EQ(z.type.inner->kind, ValueType::Kind::kMap);
  EXPECT_EQ(z.type.inner->key_type, DataType::kString);
  EXPECT_EQ(g.shape("s"), "[n,4]");
}

TEST(ShapeInference, LenientModeSkipsBadNodes) {
  TestGraph g;
  g.input("a", DataType::kFloat, dims({2, 3})).input("b", DataType::kFloat, dims({4, 5}));
  g.node("MatMul", {"a", "b"}, {"c"}).node("Relu", {"c"}, {"d"});
  InferenceOptions lenient;
  lenient.error_on_mismatch = false;
  ASSERT_TRUE(infer_shapes(g.graph, lenient).is_ok());
  EXPECT_EQ(g.type("c"), DataType::kFloat);  // from the schema: T shared with the inputs
  EXPECT_EQ(g.shape("d"), "<unknown rank>");
}

TEST(ShapeInference, ScanStacksAlongTheSequence) {
  TestGraph g(16);
  g.input("init", DataType::kFloat, dims({2})).input("xs", DataType::kFloat, dims({"T", 2}));
  auto body = std::make_shared<Graph>();
  {
    const int32_t state = body->value_id("state");
    const int32_t x = body->value_id("x");
    for (int32_t id : {state, x}) {
      body->values[static_cast<size_t>(id)].is_graph_input = true;
      body->inputs.push_back(id);
    }
    Node add;
    add.op_type = "Add";
    add.opset = 16;
    add.inputs = {state, x};
    add.outputs = {body->value_id("next")};
    body->values[static_cast<size_t>(add.outputs[0])].producer = 0;
    body->nodes = {add};
    body->outputs = {add.outputs[0], add.outputs[0]};
  }
  g.node("Scan", {"init", "xs"}, {"final", "all"}, {graph_attr("body", body), int_attr("num_scan_inputs", 1)});
  g.infer();
  EXPECT_EQ(g.shape("final"), "[2]");
  EXPECT_EQ(g.shape("all"), "[T,2]");
}

TEST(ShapeInference, InitializersThatAreInputsAreNotConstantsUnlessAsked) {
  TestGraph g;
  g.input("x", DataType::kFloat, dims({2, 6})).input("shape", DataType::kInt64, dims({2}));
  g.initializer("shape", ints({3, 4}));
  g.node("Reshape", {"x", "shape"}, {"r"});
  g.infer();
  EXPECT_EQ(g.shape("r"), "[?,?]");
  InferenceOptions old_ir;
  old_ir.initializers_in_inputs_are_constant = true;
  ASSERT_TRUE(infer_shapes(g.graph, old_ir).is_ok());
  EXPECT_EQ(g.shape("r"), "[3,4]");
}

TEST(ShapeInference, BadValueIdsAreErrorsNotCrashes) {
  TestGraph g;
  g.input("x", DataType::kFloat, dims({2}));
  g.node("Relu", {"x"}, {"y"});
  g.graph.nodes[0].inputs[0] = 999;
  EXPECT_FALSE(infer_shapes(g.graph).is_ok());
}

// A Constant's shape is a fact: a value_info declaring it otherwise (as
// onnxruntime-genai's builder declares its [1] constants scalars) gives way,
// where any other node's would be an error.
TEST(ShapeInference, ConstantShapeOverridesAWrongDeclaration) {
  TestGraph g;
  g.input("x", DataType::kInt64, dims({2}));
  g.declare("one", DataType::kInt64, dims({}));
  g.node("Constant", {}, {"one"}, {tensor_attr("value", Tensor::from_vector<int64_t>({1}, {1}))});
  g.node("Add", {"x", "one"}, {"y"});
  g.infer();
  EXPECT_EQ(g.shape("one"), "[1]");
  EXPECT_EQ(g.shape("y"), "[2]");
}

}  // namespace
}  // namespace onyx::graph
