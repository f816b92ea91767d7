#pragma once
// Builds an ONNX graph node by node and serializes it as an ONNX model (onnx_subset.proto): the
// writer behind onnx_export.h. Values are named by the builder ("v12"); weights keep the names
// given (Detectron2's state-dict names), so a reader of the file sees which tensor is which.
//
//   OnnxGraph g;
//   std::string x = g.input("image", OnnxType::kUInt8, {3, "height", "width"});
//   std::string y = g.node("Relu", {g.node("Cast", {x}, {{"to", int64_t{1}}})});
//   g.output(y, "relu", OnnxType::kFloat, 3);
//   std::string bytes = g.model_bytes(17, "detkit");
#include <ATen/Tensor.h>

#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace detkit::export_ {

enum class OnnxType : int {
  kFloat = 1,
  kUInt8 = 2,
  kInt32 = 6,
  kInt64 = 7,
  kBool = 9,
  kDouble = 11
};

class OnnxGraph;

struct OnnxAttribute {
  std::string name;
  std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>,
               at::Tensor, std::shared_ptr<OnnxGraph>>
      value;
};

class OnnxGraph {
 public:
  /// `prefix` starts the names of the values it makes: a Loop body needs its own, as a subgraph
  /// may not reuse a name of the graph around it.
  explicit OnnxGraph(std::string prefix = "v") : prefix_(std::move(prefix)) {}

  /// A graph input; dims are sizes or symbolic names ("height").
  std::string input(const std::string& name, OnnxType type,
                    const std::vector<std::variant<int64_t, std::string>>& dims);
  /// Names `value` as a graph output of `type` and rank `rank` (through an Identity node).
  void output(const std::string& value, const std::string& name, OnnxType type, int rank);
  /// A node of the default domain; returns its (first) output's name.
  std::string node(const std::string& op, const std::vector<std::string>& inputs,
                   const std::vector<OnnxAttribute>& attributes = {});
  /// A node with `outputs` outputs.
  std::vector<std::string> nodes(const std::string& op, const std::vector<std::string>& inputs,
                                 size_t outputs, const std::vector<OnnxAttribute>& attributes = {});
  /// A weight (float32, float64, int32 or int64 tensor) under `name`, stored once however often
  /// it is used.
  std::string weight(const std::string& name, const at::Tensor& tensor);
  /// Constants (Constant nodes): a 1-d int64 / float32 tensor, or a 0-d one (scalar_*; also
  /// float64, for comparisons made in double as detkit's C++ makes them).
  std::string ints(const std::vector<int64_t>& values);
  std::string floats(const std::vector<float>& values);
  std::string scalar_int(int64_t value);
  std::string scalar_float(float value);
  std::string scalar_double(double value);

  /// An input of a Loop body: its type and rank, sizes unknown.
  std::string body_input(const std::string& name, OnnxType type, int rank);

  /// The model: ONNX IR version 8 with opset `opset` of the default domain; `metadata` becomes its
  /// metadata_props.
  std::string model_bytes(int64_t opset, const std::string& doc,
                          const std::vector<std::pair<std::string, std::string>>& metadata = {}) const;

 private:
  friend struct OnnxSerializer;
  struct Node {
    std::string op;
    std::vector<std::string> inputs, outputs;
    std::vector<OnnxAttribute> attributes;
  };
  struct Value {
    std::string name;
    OnnxType type;
    std::vector<std::variant<int64_t, std::string>> dims;
    int rank = -1;  // bodies: the rank only
  };
  std::string fresh();
  std::vector<Node> nodes_;
  std::vector<std::pair<std::string, at::Tensor>> initializers_;
  std::vector<Value> inputs_, outputs_;
  int64_t counter_ = 0;
  std::string prefix_;
};

}  // namespace detkit::export_
