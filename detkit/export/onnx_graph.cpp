#include "detkit/export/onnx_graph.h"

#include <ATen/ATen.h>

#include "detkit/export/onnx_subset.pb.h"
#include "detkit/utils/error.h"

namespace detkit::export_ {

struct OnnxSerializer {
  static void tensor(const at::Tensor& t_in, onnx::TensorProto* out) {
    const at::Tensor t = t_in.contiguous();
    for (int64_t d : t.sizes()) out->add_dims(d);
    if (t.scalar_type() == at::kFloat) {
      out->set_data_type(onnx::TensorProto::FLOAT);
    } else if (t.scalar_type() == at::kLong) {
      out->set_data_type(onnx::TensorProto::INT64);
    } else if (t.scalar_type() == at::kInt) {
      out->set_data_type(onnx::TensorProto::INT32);
    } else if (t.scalar_type() == at::kDouble) {
      out->set_data_type(onnx::TensorProto::DOUBLE);
    } else {
      throw Error(std::string("ONNX export: no tensor type for ") + c10::toString(t.scalar_type()));
    }
    out->set_raw_data(t.data_ptr(), t.numel() * t.element_size());  // little-endian, as ONNX's
  }

  static void value(const OnnxGraph::Value& v, onnx::ValueInfoProto* out) {
    out->set_name(v.name);
    auto* type = out->mutable_type()->mutable_tensor_type();
    type->set_elem_type(static_cast<int>(v.type));
    auto* shape = type->mutable_shape();
    if (v.rank >= 0) {
      for (int i = 0; i < v.rank; ++i) shape->add_dim();
      return;
    }
    for (const auto& d : v.dims) {
      auto* dim = shape->add_dim();
      if (const int64_t* size = std::get_if<int64_t>(&d))
        dim->set_dim_value(*size);
      else
        dim->set_dim_param(std::get<std::string>(d));
    }
  }

  static void attribute(const OnnxAttribute& a, onnx::AttributeProto* out) {
    out->set_name(a.name);
    if (const int64_t* i = std::get_if<int64_t>(&a.value)) {
      out->set_type(onnx::AttributeProto::INT);
      out->set_i(*i);
    } else if (const double* f = std::get_if<double>(&a.value)) {
      out->set_type(onnx::AttributeProto::FLOAT);
      out->set_f(static_cast<float>(*f));
    } else if (const std::string* s = std::get_if<std::string>(&a.value)) {
      out->set_type(onnx::AttributeProto::STRING);
      out->set_s(*s);
    } else if (const auto* is = std::get_if<std::vector<int64_t>>(&a.value)) {
      out->set_type(onnx::AttributeProto::INTS);
      for (int64_t i : *is) out->add_ints(i);
    } else if (const auto* fs = std::get_if<std::vector<double>>(&a.value)) {
      out->set_type(onnx::AttributeProto::FLOATS);
      for (double f : *fs) out->add_floats(static_cast<float>(f));
    } else if (const auto* t = std::get_if<at::Tensor>(&a.value)) {
      out->set_type(onnx::AttributeProto::TENSOR);
      tensor(*t, out->mutable_t());
    } else {
      out->set_type(onnx::AttributeProto::GRAPH);
      graph(*std::get<std::shared_ptr<OnnxGraph>>(a.value), "body", out->mutable_g());
    }
  }

  static void graph(const OnnxGraph& g, const std::string& name, onnx::GraphProto* out) {
    out->set_name(name);
    for (const auto& v : g.inputs_) value(v, out->add_input());
    for (const auto& v : g.outputs_) value(v, out->add_output());
    for (const auto& [n, t] : g.initializers_) {
      onnx::TensorProto* init = out->add_initializer();
      tensor(t, init);
      init->set_name(n);
    }
    for (const auto& n : g.nodes_) {
      onnx::NodeProto* node = out->add_node();
      node->set_op_type(n.op);
      for (const auto& i : n.inputs) node->add_input(i);
      for (const auto& o : n.outputs) node->add_output(o);
      for (const auto& a : n.attributes) attribute(a, node->add_attribute());
    }
  }
};

std::string OnnxGraph::fresh() { return prefix_ + std::to_string(counter_++); }

std::string OnnxGraph::input(const std::string& name, OnnxType type,
                             const std::vector<std::variant<int64_t, std::string>>& dims) {
  inputs_.push_back({name, type, dims, -1});
  return name;
}

void OnnxGraph::output(const std::string& value, const std::string& name, OnnxType type, int rank) {
  nodes_.push_back({"Identity", {value}, {name}, {}});
  outputs_.push_back({name, type, {}, rank});
}

std::string OnnxGraph::body_input(const std::string& name, OnnxType type, int rank) {
  inputs_.push_back({name, type, {}, rank});
  return name;
}

std::string OnnxGraph::node(const std::string& op, const std::vector<std::string>& inputs,
                            const std::vector<OnnxAttribute>& attributes) {
  return nodes(op, inputs, 1, attributes).front();
}

std::vector<std::string> OnnxGraph::nodes(const std::string& op,
                                          const std::vector<std::string>& inputs, size_t outputs,
                                          const std::vector<OnnxAttribute>& attributes) {
  std::vector<std::string> names;
  for (size_t i = 0; i < outputs; ++i) names.push_back(fresh());
  nodes_.push_back({op, inputs, names, attributes});
  return names;
}

std::string OnnxGraph::weight(const std::string& name, const at::Tensor& tensor) {
  for (const auto& [n, t] : initializers_)
    if (n == name) return n;
  initializers_.emplace_back(name, tensor.detach().to(at::kCPU).contiguous());
  return name;
}

std::string OnnxGraph::ints(const std::vector<int64_t>& values) {
  return node("Constant", {}, {{"value", at::tensor(values, at::kLong)}});
}

std::string OnnxGraph::floats(const std::vector<float>& values) {
  return node("Constant", {}, {{"value", at::tensor(values, at::kFloat)}});
}

std::string OnnxGraph::scalar_int(int64_t value) {
  return node("Constant", {}, {{"value", at::scalar_tensor(value, at::kLong)}});
}

std::string OnnxGraph::scalar_float(float value) {
  return node("Constant", {}, {{"value", at::scalar_tensor(value, at::kFloat)}});
}

std::string OnnxGraph::scalar_double(double value) {
  return node("Constant", {}, {{"value", at::scalar_tensor(value, at::kDouble)}});
}

std::string OnnxGraph::model_bytes(
    int64_t opset, const std::string& doc,
    const std::vector<std::pair<std::string, std::string>>& metadata) const {
  onnx::ModelProto model;
  for (const auto& [key, value] : metadata) {
    onnx::StringStringEntryProto* entry = model.add_metadata_props();
    entry->set_key(key);
    entry->set_value(value);
  }
  model.set_ir_version(8);
  model.set_producer_name("detkit");
  model.set_doc_string(doc);
  onnx::OperatorSetIdProto* op_set = model.add_opset_import();
  op_set->set_domain("");
  op_set->set_version(opset);
  OnnxSerializer::graph(*this, "detkit", model.mutable_graph());
  std::string bytes;
  if (!model.SerializeToString(&bytes)) throw Error("ONNX export: the model could not be serialized");
  return bytes;
}

}  // namespace detkit::export_
