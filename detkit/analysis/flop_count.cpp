#include "detkit/analysis/flop_count.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include <cstring>
#include <memory>

#include "detkit/layers/conv2d.h"

namespace detkit::analysis {

namespace {

thread_local FlopCounter* active_counter = nullptr;

int64_t product(at::IntArrayRef values) {
  int64_t out = 1;
  for (int64_t v : values) out *= v;
  return out;
}

// A per-dimension conv parameter; callers may pass one value for every dimension.
int64_t at_dim(const std::vector<int64_t>& values, size_t i) {
  return values.size() == 1 ? values[0] : values.at(i);
}

// aten::convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
// groups).
void record_convolution(const at::RecordFunction& fn) {
  auto inputs = fn.inputs();
  if (inputs.size() < 9 || !inputs[0].isTensor() || !inputs[1].isTensor()) return;
  const at::Tensor& x = inputs[0].toTensor();
  const at::Tensor& w = inputs[1].toTensor();
  const bool transposed = inputs[6].toBool();
  std::vector<int64_t> out_spatial;
  if (!transposed) {
    auto stride = inputs[3].toIntVector(), padding = inputs[4].toIntVector();
    auto dilation = inputs[5].toIntVector();
    for (int64_t d = 2; d < x.dim(); ++d) {
      size_t i = d - 2;
      out_spatial.push_back(
          (x.size(d) + 2 * at_dim(padding, i) - at_dim(dilation, i) * (w.size(d) - 1) - 1) /
              at_dim(stride, i) +
          1);
    }
  }
  std::vector<int64_t> out_shape = {x.size(0), 0};
  out_shape.insert(out_shape.end(), out_spatial.begin(), out_spatial.end());
  active_counter->record(transposed ? "conv_transpose" : "conv", w.data_ptr(),
                         conv_flops(x.sizes(), w.sizes(), out_shape, transposed));
}

// detkit::patchwise_conv_transpose2d(input (N, C, H, W), weight (C, O, kh, kw), bias): counted
// as the transposed convolution it replaces.
void record_patchwise_transposed_convolution(const at::RecordFunction& fn) {
  auto inputs = fn.inputs();
  if (inputs.size() < 2 || !inputs[0].isTensor() || !inputs[1].isTensor()) return;
  const at::Tensor& x = inputs[0].toTensor();
  const at::Tensor& w = inputs[1].toTensor();
  active_counter->record("conv_transpose", w.data_ptr(),
                         conv_flops(x.sizes(), w.sizes(), {x.size(0), 0}, true));
}

// Matrix products with a weight: aten::linear(input, weight, bias) and the ops libtorch's
// nn::Linear calls directly, aten::addmm(bias, input, weight.t()) and aten::matmul(input,
// weight.t()); also aten::mm. fvcore's count: prod(input shape) * output features.
void record_matrix_product(const at::RecordFunction& fn, const char* name) {
  auto inputs = fn.inputs();
  const bool addmm = std::strcmp(name, "aten::addmm") == 0;
  const size_t a = addmm ? 1 : 0;
  if (inputs.size() < a + 2 || !inputs[a].isTensor() || !inputs[a + 1].isTensor()) return;
  const at::Tensor& x = inputs[a].toTensor();
  const at::Tensor& w = inputs[a + 1].toTensor();
  const bool linear = std::strcmp(name, "aten::linear") == 0;
  if (x.dim() < 1 || w.dim() < 1) return;
  const int64_t out_features = linear ? w.size(0) : w.size(-1);
  active_counter->record("linear", w.data_ptr(), x.numel() * out_features);
}

// Set while a counted op runs, so the ops it calls (aten::linear -> aten::addmm,
// aten::convolution -> aten::_convolution) are not counted again.
thread_local int counted_depth = 0;
struct CountedOp : at::ObserverContext {};

std::unique_ptr<at::ObserverContext> on_op_start(const at::RecordFunction& fn) {
  if (active_counter == nullptr || counted_depth > 0) return nullptr;
  const char* name = fn.name();
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    // A gradient's ops (an autograd kernel's matrix products) are not the model's forward.
  } else if (std::strcmp(name, "aten::convolution") == 0) {
    record_convolution(fn);
  } else if (std::strcmp(name, "detkit::patchwise_conv_transpose2d") == 0) {
    record_patchwise_transposed_convolution(fn);
  } else if (std::strcmp(name, "aten::linear") == 0 || std::strcmp(name, "aten::addmm") == 0 ||
             std::strcmp(name, "aten::matmul") == 0 || std::strcmp(name, "aten::mm") == 0) {
    record_matrix_product(fn, name);
  } else {
    return nullptr;
  }
  ++counted_depth;
  return std::make_unique<CountedOp>();
}

void on_op_end(const at::RecordFunction&, at::ObserverContext* context) {
  if (context != nullptr) --counted_depth;
}

}  // namespace

int64_t conv_flops(at::IntArrayRef input, at::IntArrayRef weight, at::IntArrayRef output,
                   bool transposed) {
  at::IntArrayRef spatial = (transposed ? input : output).slice(2);
  return input[0] * product(weight) * product(spatial);
}

FlopCounter::FlopCounter(const torch::nn::Module& model) : model_(&model) {
  for (const auto& p : model.named_parameters(/*recurse=*/true)) {
    size_t dot = p.key().rfind('.');
    owner_by_weight_[p.value().data_ptr()] = dot == std::string::npos ? "" : p.key().substr(0, dot);
  }
  previous_ = active_counter;
  active_counter = this;
  handle_ = at::addThreadLocalCallback(
      at::RecordFunctionCallback(&on_op_start, &on_op_end)
          .needsInputs(true)
          .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
}

FlopCounter::~FlopCounter() {
  at::removeCallback(handle_);
  active_counter = previous_;
}

std::string FlopCounter::owner_of_folded_weight(const void* weight_data) const {
  auto folded_here = [&](const torch::nn::Module& m) {
    const auto* conv = dynamic_cast<const layers::Conv2dImpl*>(&m);
    return conv != nullptr && conv->folded_weight_data() == weight_data;
  };
  if (folded_here(*model_)) return "";
  for (const auto& m : model_->named_modules("", /*include_self=*/false))
    if (folded_here(*m.value())) return m.key();
  return "";
}

void FlopCounter::record(const std::string& kind, const void* weight_data, int64_t flops) {
  auto it = owner_by_weight_.find(weight_data);
  by_module_[it != owner_by_weight_.end() ? it->second : owner_of_folded_weight(weight_data)] +=
      flops;
  by_operator_[kind] += flops;
}

int64_t FlopCounter::total() const {
  int64_t out = 0;
  for (const auto& [kind, flops] : by_operator_) out += flops;
  return out;
}

std::vector<ModuleRow> FlopCounter::rows(const torch::nn::Module& model, int64_t max_depth) const {
  std::map<std::string, std::vector<int64_t>> values;
  for (const auto& [module, flops] : by_module_) values[module] = {flops};
  if (values.empty()) values[""] = {0};
  return module_rows(model, values, max_depth);
}

}  // namespace detkit::analysis
