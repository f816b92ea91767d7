#pragma once
// A module's tensors by Detectron2 name ("backbone.bottom_up.res2.0.conv1.weight"), and loading
// such a map back with a report of what did not fit.
#include <torch/nn/module.h>

#include <map>
#include <string>
#include <vector>

namespace detkit::checkpoint {

using TensorDict = std::map<std::string, at::Tensor>;

/// Parameters and buffers of `module` and its children, by dotted name.
TensorDict state_dict(const torch::nn::Module& module);

/// state_dict(module) in PyTorch's order (each module's parameters, then its buffers, then its
/// children's), the order torch.nn.Module.state_dict() lists Detectron2's names in.
std::vector<std::pair<std::string, at::Tensor>> ordered_state_dict(const torch::nn::Module& module);

struct ShapeMismatch {
  std::string name;
  std::vector<int64_t> checkpoint, model;
};

struct LoadReport {
  std::vector<std::string> missing;       // in the module, not in the dict
  std::vector<std::string> unexpected;    // in the dict, not in the module
  std::vector<ShapeMismatch> mismatched;  // in both with different shapes; not loaded
  size_t loaded = 0;
  bool complete() const { return missing.empty() && unexpected.empty() && mismatched.empty(); }
  /// Detectron2's (fvcore's) load report: one "Skip loading parameter" line per mismatch, then
  /// the missing (mismatched ones included, as Detectron2 lists them) and the unused keys
  /// grouped by module ("roi_heads.box_predictor.{bias,
  /// weight}"-style lines under "Some model parameters or buffers are not found in the
  /// checkpoint:" and "The checkpoint state_dict contains keys that are not used by the model:").
  std::string summary() const;
};

/// fvcore's grouping of names: "a.b.{x, y}" for a.b.x and a.b.y, in first-seen order.
std::vector<std::string> group_names(const std::vector<std::string>& names);

/// Copies every tensor of `dict` whose name and shape match into `module` (in place, no grad).
/// `prefix` is stripped from dict names first (e.g. "backbone." to load a backbone alone);
/// names without it are unexpected.
LoadReport load_state_dict(torch::nn::Module& module, const TensorDict& dict,
                           const std::string& prefix = "");

/// Reads a {name: tensor} dict or OrderedDict saved by Python's torch.save (or by
/// torch::pickle_save) with the restricted reader of torch_file.h.
TensorDict load_plain_tensor_dict(const std::string& path);

}  // namespace detkit::checkpoint
