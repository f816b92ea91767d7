#include "detkit/solver/sgd_state.h"

#include <ATen/ATen.h>

#include "detkit/utils/error.h"

namespace detkit::solver {
namespace {

const std::string kStatePrefix = "state.";
const std::string kBufferSuffix = ".momentum_buffer";
const std::string kGroupPrefix = "param_groups.";

std::string group_key(size_t g, const std::string& field) {
  return kGroupPrefix + std::to_string(g) + "." + field;
}

double number_at(const NamedSGDState& named, const std::string& key) {
  auto it = named.numbers.find(key);
  if (it == named.numbers.end()) throw Error("optimizer state: missing number '" + key + "'");
  return it->second;
}

// Parses "state.<i>.momentum_buffer" to i; any other key is an error.
int64_t state_index(const std::string& key) {
  const bool shaped =
      key.size() > kStatePrefix.size() + kBufferSuffix.size() &&
      key.compare(0, kStatePrefix.size(), kStatePrefix) == 0 &&
      key.compare(key.size() - kBufferSuffix.size(), kBufferSuffix.size(), kBufferSuffix) == 0;
  const std::string digits =
      shaped
          ? key.substr(kStatePrefix.size(), key.size() - kStatePrefix.size() - kBufferSuffix.size())
          : "";
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) {
    throw Error("optimizer state: unexpected tensor '" + key +
                "' (expected state.<i>.momentum_buffer)");
  }
  return std::stoll(digits);
}

}  // namespace

NamedSGDState to_named(const SGDState& state) {
  NamedSGDState named;
  for (const auto& [index, buffer] : state.momentum_buffers) {
    named.tensors[kStatePrefix + std::to_string(index) + kBufferSuffix] = buffer;
  }
  for (size_t g = 0; g < state.param_groups.size(); ++g) {
    const SGDGroupState& group = state.param_groups[g];
    named.tensors[group_key(g, "params")] =
        at::tensor(std::vector<int64_t>(group.params), at::kLong);
    named.numbers[group_key(g, "lr")] = group.lr;
    named.numbers[group_key(g, "momentum")] = group.momentum;
    named.numbers[group_key(g, "dampening")] = group.dampening;
    named.numbers[group_key(g, "weight_decay")] = group.weight_decay;
    named.numbers[group_key(g, "nesterov")] = group.nesterov ? 1.0 : 0.0;
    if (group.initial_lr) named.numbers[group_key(g, "initial_lr")] = *group.initial_lr;
  }
  return named;
}

SGDState from_named(const NamedSGDState& named) {
  SGDState state;
  for (size_t g = 0; named.tensors.count(group_key(g, "params")) > 0; ++g) {
    const at::Tensor& params = named.tensors.at(group_key(g, "params"));
    if (params.dim() != 1 || params.scalar_type() != at::kLong) {
      throw Error("optimizer state: '" + group_key(g, "params") + "' must be a 1-D int64 tensor");
    }
    SGDGroupState group;
    const at::Tensor contiguous = params.contiguous();
    group.params.assign(contiguous.data_ptr<int64_t>(),
                        contiguous.data_ptr<int64_t>() + contiguous.numel());
    group.lr = number_at(named, group_key(g, "lr"));
    group.momentum = number_at(named, group_key(g, "momentum"));
    group.dampening = number_at(named, group_key(g, "dampening"));
    group.weight_decay = number_at(named, group_key(g, "weight_decay"));
    group.nesterov = number_at(named, group_key(g, "nesterov")) != 0;
    auto initial = named.numbers.find(group_key(g, "initial_lr"));
    if (initial != named.numbers.end()) group.initial_lr = initial->second;
    state.param_groups.push_back(std::move(group));
  }
  for (const auto& [key, tensor] : named.tensors) {
    if (key.compare(0, kGroupPrefix.size(), kGroupPrefix) == 0) {
      bool known = false;
      for (size_t g = 0; g < state.param_groups.size() && !known; ++g) {
        known = key == group_key(g, "params");
      }
      if (!known) throw Error("optimizer state: unexpected tensor '" + key + "'");
      continue;
    }
    state.momentum_buffers[state_index(key)] = tensor;
  }
  return state;
}

}  // namespace detkit::solver
