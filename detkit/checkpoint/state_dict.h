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

struct LoadReport {
  std::vector<std::string> missing;     // in the module, not in the dict
  std::vector<std::string> unexpected;  // in the dict, not in the module
  std::vector<std::string> mismatched;  // "name: checkpoint (a, b) vs model (c, d)"; not loaded
  size_t loaded = 0;
  bool complete() const { return missing.empty() && unexpected.empty() && mismatched.empty(); }
  /// A readable multi-line summary for logs.
  std::string summary() const;
};

/// Copies every tensor of `dict` whose name and shape match into `module` (in place, no grad).
/// `prefix` is stripped from dict names first (e.g. "backbone." to load a backbone alone);
/// names without it are unexpected.
LoadReport load_state_dict(torch::nn::Module& module, const TensorDict& dict,
                           const std::string& prefix = "");

/// Reads a {name: tensor} dict or OrderedDict saved by Python's torch.save (or by
/// torch::pickle_save) with the restricted reader of torch_file.h.
TensorDict load_plain_tensor_dict(const std::string& path);

}  // namespace detkit::checkpoint
