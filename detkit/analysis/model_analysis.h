#pragma once
// What a model holds, module by module: parameter counts (as fvcore's parameter_count_table,
// which Detectron2's analyze_model prints) and the state dict in PyTorch's order, so a user can
// see why a checkpoint does or does not load.
#include <torch/nn/module.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace detkit::analysis {

/// One row of a per-module table: the module's dotted name ("" for the whole model), its depth
/// (0 for the model, 1 for "backbone", 2 for "backbone.bottom_up", ...) and values summed over
/// the module and everything under it.
struct ModuleRow {
  std::string name;
  int64_t depth = 0;
  std::vector<int64_t> values;
};

/// Sums `values_by_module` (module name -> values, all of one length) into a row per module of
/// `model` down to `max_depth`, in registration order (each module before its children). Rows
/// whose values are all zero are left out, except the first (the whole model).
std::vector<ModuleRow> module_rows(
    const torch::nn::Module& model,
    const std::map<std::string, std::vector<int64_t>>& values_by_module, int64_t max_depth);

/// Per module: {number of parameters, number of trainable (requires_grad) parameters}.
std::vector<ModuleRow> count_parameters(const torch::nn::Module& model, int64_t max_depth);

/// The state dict in PyTorch's order: a module's own parameters, then its own buffers, then
/// each child's entries in registration order (depth first), with dotted names.
std::vector<std::pair<std::string, at::Tensor>> ordered_state_dict(const torch::nn::Module& model);

/// A tensor's shape as "(256, 64, 1, 1)"; "()" for a scalar.
std::string shape_string(const at::Tensor& tensor);

/// 44343216 -> "44,343,216".
std::string with_thousands_separators(int64_t value);

/// A markdown table of `rows` (names indented by depth, "model" for the root) with one column
/// per value, right-aligned, numbers with thousands separators.
std::string format_module_table(const std::vector<ModuleRow>& rows,
                                const std::vector<std::string>& value_headers);

}  // namespace detkit::analysis
