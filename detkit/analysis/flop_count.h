#pragma once
// FLOPs of convolutions, transposed convolutions and linear layers, counted as fvcore counts
// them (Detectron2's analyze_model --tasks flop): one multiply-add is one flop. Counting watches
// the ATen ops a forward pass runs on this thread (RecordFunction callbacks on aten::convolution
// and detkit::patchwise_conv_transpose2d, and on aten::linear / addmm / matmul / mm, which
// nn::Linear runs) and charges each op to the module owning its weight (the op's second matrix;
// for a layers::Conv2d that folded its norm in for inference, the folded weight it keeps).
#include <torch/nn/module.h>

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "detkit/analysis/model_analysis.h"

namespace detkit::analysis {

/// Counts while alive; one counter per thread at a time. Not copyable.
class FlopCounter {
 public:
  /// `model` names the weights: an op whose weight is a parameter of `model` is charged to that
  /// parameter's module, any other op to "" (the model itself). `model` outlives the counter.
  explicit FlopCounter(const torch::nn::Module& model);
  ~FlopCounter();
  FlopCounter(const FlopCounter&) = delete;
  FlopCounter& operator=(const FlopCounter&) = delete;

  /// Module name ("backbone.bottom_up.res2.0.conv1") -> flops of the ops charged to it.
  const std::map<std::string, int64_t>& by_module() const { return by_module_; }
  /// "conv", "conv_transpose", "linear" -> flops.
  const std::map<std::string, int64_t>& by_operator() const { return by_operator_; }
  int64_t total() const;

  /// Per-module rows (one value: flops) down to `max_depth`, as count_parameters gives them.
  std::vector<ModuleRow> rows(const torch::nn::Module& model, int64_t max_depth) const;

  /// Called by the op callbacks: charges `flops` of `kind` to the owner of `weight_data`.
  void record(const std::string& kind, const void* weight_data, int64_t flops);

 private:
  /// The module of `model_` whose Conv2d keeps `weight_data` as its folded weight, or "".
  std::string owner_of_folded_weight(const void* weight_data) const;

  const torch::nn::Module* model_;
  std::unordered_map<const void*, std::string> owner_by_weight_;
  std::map<std::string, int64_t> by_module_, by_operator_;
  uint64_t handle_ = 0;
  FlopCounter* previous_ = nullptr;
};

/// fvcore's conv count: batch * prod(weight shape) * prod(spatial shape), the spatial shape of
/// the output (the input for a transposed convolution).
int64_t conv_flops(at::IntArrayRef input, at::IntArrayRef weight, at::IntArrayRef output,
                   bool transposed);

}  // namespace detkit::analysis
