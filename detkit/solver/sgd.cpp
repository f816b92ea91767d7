#include "detkit/solver/sgd.h"

#include <ATen/ATen.h>

#include <sstream>

#include "detkit/solver/sgd_kernel.h"
#include "detkit/solver/sgd_multi_tensor.h"
#include "detkit/solver/state_ivalue.h"
#include "detkit/utils/error.h"

namespace detkit::solver {
namespace {

std::string text(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

void check_defaults(const SGDOptions& o) {
  if (o.lr() < 0) throw Error("SGD: invalid learning rate " + text(o.lr()));
  if (o.momentum() < 0) throw Error("SGD: invalid momentum " + text(o.momentum()));
  if (o.weight_decay() < 0) throw Error("SGD: invalid weight_decay " + text(o.weight_decay()));
  if (o.nesterov() && (o.momentum() <= 0 || o.dampening() != 0)) {
    throw Error("SGD: nesterov momentum requires a momentum and zero dampening, got momentum " +
                text(o.momentum()) + ", dampening " + text(o.dampening()));
  }
}

bool fusable(const at::Tensor& t) {
  return t.device().is_cpu() && t.scalar_type() == at::kFloat && t.layout() == at::kStrided &&
         t.is_contiguous();
}

std::string shape_text(at::IntArrayRef sizes) {
  std::ostringstream out;
  out << sizes;
  return out.str();
}

}  // namespace

SGD::SGD(std::vector<ParamGroup> groups, const SGDOptions& defaults) : defaults_(defaults) {
  check_defaults(defaults_);
  for (ParamGroup& group : groups) {
    if (group.params.size() != group.names.size()) {
      throw Error("SGD: a parameter group has " + std::to_string(group.params.size()) +
                  " parameters but " + std::to_string(group.names.size()) + " names");
    }
    SGDParamGroup g;
    g.params = std::move(group.params);
    g.names = std::move(group.names);
    g.lr = group.lr.value_or(defaults_.lr());
    g.momentum = defaults_.momentum();
    g.dampening = defaults_.dampening();
    g.weight_decay = group.weight_decay.value_or(defaults_.weight_decay());
    g.nesterov = defaults_.nesterov();
    g.momentum_buffers.resize(g.params.size());
    groups_.push_back(std::move(g));
  }
}

bool SGD::fused_step(SGDParamGroup& group, size_t i) {
  at::Tensor& p = group.params[i];
  const at::Tensor& grad = p.grad();
  at::Tensor& buffer = group.momentum_buffers[i];
  const bool momentum = group.momentum != 0;
  // The first step makes the momentum buffer op by op: making it here instead (at::empty_like)
  // raised a Mask R-CNN R50 run's peak RSS by 55 MB, measured, through where the heap put it.
  if (!fusable(p) || !fusable(grad) || grad.sizes() != p.sizes() ||
      (momentum && (!buffer.defined() || !fusable(buffer) || buffer.sizes() != p.sizes())))
    return false;
  SgdCoefficients c;
  c.weight_decay = static_cast<float>(group.weight_decay);
  c.momentum = static_cast<float>(group.momentum);
  c.one_minus_dampening = static_cast<float>(1 - group.dampening);
  c.minus_lr = static_cast<float>(-group.lr);
  c.nesterov = group.nesterov;
  sgd_update(p.data_ptr<float>(), grad.data_ptr<float>(),
             momentum ? buffer.data_ptr<float>() : nullptr, p.numel(), c);
  // As add_ / mul_ would: autograd then refuses a backward through a graph that saved `p`.
  p.unsafeGetTensorImpl()->bump_version();
  if (momentum) buffer.unsafeGetTensorImpl()->bump_version();
  return true;
}

std::vector<char> SGD::multi_tensor_step(SGDParamGroup& group) {
  std::vector<char> done(group.params.size(), 0);
  const bool momentum = group.momentum != 0;
  // [0]: parameters with a momentum buffer (or none needed), [1]: those starting one
  std::vector<at::Tensor> params[2], grads[2], buffers[2];
  for (size_t i = 0; i < group.params.size(); ++i) {
    const at::Tensor& p = group.params[i];
    const at::Tensor& grad = p.grad();
    if (!grad.defined() || !multi_tensor_sgd_takes(p) || !multi_tensor_sgd_takes(grad) ||
        grad.sizes() != p.sizes())
      continue;
    at::Tensor& buffer = group.momentum_buffers[i];
    bool first = false;
    if (momentum && !buffer.defined()) {
      buffer = at::empty_like(p);  // started as d by the kernel
      first = true;
    } else if (momentum && (!multi_tensor_sgd_takes(buffer) || buffer.sizes() != p.sizes())) {
      continue;
    }
    params[first].push_back(p);
    grads[first].push_back(grad);
    if (momentum) buffers[first].push_back(buffer);
    done[i] = 1;
  }
  MultiTensorSgd options;
  options.lr = group.lr;
  options.momentum = group.momentum;
  options.dampening = group.dampening;
  options.weight_decay = group.weight_decay;
  options.nesterov = group.nesterov;
  for (int first = 0; first < 2; ++first)
    multi_tensor_sgd(params[first], grads[first], buffers[first], options, first == 1);
  return done;
}

bool SGD::step() {
  at::NoGradGuard no_grad;
  if (clipper_) {
    for (const SGDParamGroup& group : groups_) {
      for (const at::Tensor& p : group.params) clipper_(p);
    }
  }
  for (SGDParamGroup& group : groups_) {
    const std::vector<char> on_gpu = multi_tensor_step(group);
    for (size_t i = 0; i < group.params.size(); ++i) {
      at::Tensor& p = group.params[i];
      if (on_gpu[i] || !p.grad().defined()) continue;
      if (fused_step(group, i)) continue;
      at::Tensor d_p = p.grad();
      if (group.weight_decay != 0) d_p = d_p.add(p, group.weight_decay);
      if (group.momentum != 0) {
        at::Tensor& buf = group.momentum_buffers[i];
        if (!buf.defined()) {
          buf = d_p.clone().detach();
        } else {
          buf.mul_(group.momentum).add_(d_p, 1 - group.dampening);
        }
        d_p = group.nesterov ? d_p.add(buf, group.momentum) : buf;
      }
      p.add_(d_p, -group.lr);
    }
  }
  return true;
}

void SGD::zero_grad(bool set_to_none) {
  for (SGDParamGroup& group : groups_) {
    for (at::Tensor& p : group.params) {
      at::Tensor& grad = p.mutable_grad();
      if (!grad.defined()) continue;
      if (set_to_none) {
        grad.reset();
        continue;
      }
      if (grad.grad_fn()) {
        grad.detach_();
      } else {
        grad.requires_grad_(false);
      }
      grad.zero_();
    }
  }
}

std::vector<std::string> SGD::param_names() const {
  std::vector<std::string> names;
  for (const SGDParamGroup& group : groups_) {
    names.insert(names.end(), group.names.begin(), group.names.end());
  }
  return names;
}

c10::IValue SGD::state() const { return optimizer_state_to_ivalue(state_dict()); }

void SGD::load_state(const c10::IValue& state) {
  load_state_dict(optimizer_state_from_ivalue(state));
}

SGDState SGD::state_dict() const {
  SGDState state;
  int64_t index = 0;
  for (const SGDParamGroup& group : groups_) {
    SGDGroupState g{group.lr,
                    group.momentum,
                    group.dampening,
                    group.weight_decay,
                    group.nesterov,
                    group.initial_lr,
                    {}};
    for (size_t i = 0; i < group.params.size(); ++i, ++index) {
      g.params.push_back(index);
      if (group.momentum_buffers[i].defined()) {
        state.momentum_buffers[index] = group.momentum_buffers[i].clone();
      }
    }
    state.param_groups.push_back(std::move(g));
  }
  return state;
}

void SGD::load_state_dict(const SGDState& state) {
  if (state.param_groups.size() != groups_.size()) {
    throw Error("optimizer state has " + std::to_string(state.param_groups.size()) +
                " parameter groups, the optimizer " + std::to_string(groups_.size()));
  }
  // Map saved indices to (group, position) in order, as PyTorch does; check everything first.
  std::map<int64_t, std::pair<size_t, size_t>> slot_of_index;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const auto& saved = state.param_groups[g].params;
    if (saved.size() != groups_[g].params.size()) {
      throw Error("optimizer state: parameter group " + std::to_string(g) + " has " +
                  std::to_string(saved.size()) + " parameters, the optimizer's " +
                  std::to_string(groups_[g].params.size()));
    }
    for (size_t i = 0; i < saved.size(); ++i) slot_of_index[saved[i]] = {g, i};
  }
  for (const auto& [index, buffer] : state.momentum_buffers) {
    auto it = slot_of_index.find(index);
    if (it == slot_of_index.end()) {
      throw Error("optimizer state: state." + std::to_string(index) +
                  " belongs to no parameter group");
    }
    const auto [g, i] = it->second;
    const at::Tensor& param = groups_[g].params[i];
    if (!buffer.defined() || buffer.sizes() != param.sizes()) {
      throw Error("optimizer state: state." + std::to_string(index) + ".momentum_buffer for " +
                  groups_[g].names[i] + " has shape " +
                  (buffer.defined() ? shape_text(buffer.sizes()) : "undefined") +
                  ", the parameter " + shape_text(param.sizes()));
    }
  }
  for (size_t g = 0; g < groups_.size(); ++g) {
    SGDParamGroup& group = groups_[g];
    const SGDGroupState& saved = state.param_groups[g];
    group.lr = saved.lr;
    group.momentum = saved.momentum;
    group.dampening = saved.dampening;
    group.weight_decay = saved.weight_decay;
    group.nesterov = saved.nesterov;
    group.initial_lr = saved.initial_lr;
    for (at::Tensor& buffer : group.momentum_buffers) buffer = at::Tensor();
  }
  for (const auto& [index, buffer] : state.momentum_buffers) {
    const auto [g, i] = slot_of_index.at(index);
    const at::Tensor& param = groups_[g].params[i];
    groups_[g].momentum_buffers[i] = buffer.to(param.options()).clone();
  }
}

}  // namespace detkit::solver
