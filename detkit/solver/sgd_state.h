#pragma once
// SGD optimizer state, laid out as PyTorch's optimizer.state_dict() so a checkpoint writer can
// emit {"state": {i: {"momentum_buffer": T}}, "param_groups": [{"lr": ..., "params": [...]}]},
// and a flat form of named tensors and numbers for simple serialisers.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace detkit::solver {

struct SGDGroupState {
  double lr = 0;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
  std::optional<double> initial_lr;
  std::vector<int64_t> params;  // state indices of this group's parameters
};

struct SGDState {
  std::map<int64_t, at::Tensor> momentum_buffers;  // by state index; absent: not yet created
  std::vector<SGDGroupState> param_groups;
};

/// Flat form. tensors: "state.<i>.momentum_buffer", "param_groups.<g>.params" (int64, 1-D).
/// numbers: "param_groups.<g>.<lr|momentum|dampening|weight_decay|nesterov|initial_lr>"
/// (nesterov as 0/1; initial_lr only when set).
struct NamedSGDState {
  std::map<std::string, at::Tensor> tensors;
  std::map<std::string, double> numbers;
};

NamedSGDState to_named(const SGDState& state);
/// The inverse of to_named; a missing or malformed entry is a detkit::Error naming it.
SGDState from_named(const NamedSGDState& named);

}  // namespace detkit::solver
