#include "detkit/solver/state_ivalue.h"

#include "detkit/utils/error.h"

namespace detkit::solver {

namespace {
using GenericDict = c10::Dict<c10::IValue, c10::IValue>;

GenericDict new_dict() { return GenericDict(c10::AnyType::get(), c10::AnyType::get()); }

const c10::IValue& entry(const GenericDict& d, const std::string& key, const char* where) {
  auto it = d.find(c10::IValue(key));
  if (it == d.end()) throw Error(std::string("checkpoint ") + where + " has no '" + key + "'");
  return it->value();
}

double number(const c10::IValue& v, const std::string& what) {
  if (v.isDouble()) return v.toDouble();
  if (v.isInt()) return static_cast<double>(v.toInt());
  if (v.isBool()) return v.toBool() ? 1.0 : 0.0;
  throw Error("checkpoint entry '" + what + "' is not a number");
}

GenericDict as_dict(const c10::IValue& v, const char* what) {
  if (!v.isGenericDict()) throw Error(std::string("checkpoint entry '") + what + "' is not a dict");
  return v.toGenericDict();
}
}  // namespace

c10::IValue optimizer_state_to_ivalue(const SGDState& state) {
  GenericDict per_param = new_dict();
  for (const auto& [index, buffer] : state.momentum_buffers) {
    GenericDict s = new_dict();
    s.insert(c10::IValue(std::string("momentum_buffer")), buffer);
    per_param.insert(c10::IValue(index), s);
  }
  c10::impl::GenericList groups(c10::AnyType::get());
  for (const auto& g : state.param_groups) {
    GenericDict d = new_dict();
    d.insert(c10::IValue(std::string("lr")), g.lr);
    d.insert(c10::IValue(std::string("momentum")), g.momentum);
    d.insert(c10::IValue(std::string("dampening")), g.dampening);
    d.insert(c10::IValue(std::string("weight_decay")), g.weight_decay);
    d.insert(c10::IValue(std::string("nesterov")), g.nesterov);
    if (g.initial_lr) d.insert(c10::IValue(std::string("initial_lr")), *g.initial_lr);
    c10::impl::GenericList params(c10::AnyType::get());
    for (int64_t p : g.params) params.push_back(p);
    d.insert(c10::IValue(std::string("params")), params);
    groups.push_back(d);
  }
  GenericDict out = new_dict();
  out.insert(c10::IValue(std::string("state")), per_param);
  out.insert(c10::IValue(std::string("param_groups")), groups);
  return out;
}

SGDState optimizer_state_from_ivalue(const c10::IValue& value) {
  GenericDict d = as_dict(value, "optimizer");
  SGDState state;
  for (const auto& item : as_dict(entry(d, "state", "optimizer"), "optimizer.state")) {
    GenericDict s = as_dict(item.value(), "optimizer.state.<i>");
    state.momentum_buffers[item.key().toInt()] =
        entry(s, "momentum_buffer", "optimizer state").toTensor();
  }
  const c10::IValue& groups = entry(d, "param_groups", "optimizer");
  if (!groups.isList()) throw Error("checkpoint entry 'optimizer.param_groups' is not a list");
  for (const auto& gv : groups.toListRef()) {
    GenericDict g = as_dict(gv, "optimizer.param_groups[i]");
    SGDGroupState group;
    group.lr = number(entry(g, "lr", "param group"), "lr");
    group.momentum = number(entry(g, "momentum", "param group"), "momentum");
    group.dampening = number(entry(g, "dampening", "param group"), "dampening");
    group.weight_decay = number(entry(g, "weight_decay", "param group"), "weight_decay");
    group.nesterov = number(entry(g, "nesterov", "param group"), "nesterov") != 0;
    if (g.contains(c10::IValue(std::string("initial_lr"))))
      group.initial_lr = number(entry(g, "initial_lr", "param group"), "initial_lr");
    for (const auto& p : entry(g, "params", "param group").toListRef()) group.params.push_back(p.toInt());
    state.param_groups.push_back(std::move(group));
  }
  return state;
}

c10::IValue scheduler_state_to_ivalue(const LRSchedulerState& state) {
  GenericDict d = new_dict();
  c10::impl::GenericList base(c10::AnyType::get());
  for (double lr : state.base_lrs) base.push_back(lr);
  d.insert(c10::IValue(std::string("base_lrs")), base);
  d.insert(c10::IValue(std::string("last_epoch")), state.last_epoch);
  return d;
}

LRSchedulerState scheduler_state_from_ivalue(const c10::IValue& value) {
  GenericDict d = as_dict(value, "scheduler");
  LRSchedulerState state;
  for (const auto& v : entry(d, "base_lrs", "scheduler").toListRef())
    state.base_lrs.push_back(number(v, "scheduler.base_lrs"));
  state.last_epoch = static_cast<int64_t>(number(entry(d, "last_epoch", "scheduler"), "last_epoch"));
  return state;
}

c10::IValue grad_scaler_state_to_ivalue(const GradScalerState& state) {
  GenericDict d = new_dict();
  d.insert(c10::IValue(std::string("scale")), state.scale);
  d.insert(c10::IValue(std::string("growth_factor")), state.growth_factor);
  d.insert(c10::IValue(std::string("backoff_factor")), state.backoff_factor);
  d.insert(c10::IValue(std::string("growth_interval")), state.growth_interval);
  d.insert(c10::IValue(std::string("_growth_tracker")), state.growth_tracker);
  return d;
}

GradScalerState grad_scaler_state_from_ivalue(const c10::IValue& value) {
  GenericDict d = as_dict(value, "grad_scaler");
  auto field = [&](const char* key) {
    return number(entry(d, key, "grad_scaler"), std::string("grad_scaler.") + key);
  };
  GradScalerState state;
  state.scale = field("scale");
  state.growth_factor = field("growth_factor");
  state.backoff_factor = field("backoff_factor");
  state.growth_interval = static_cast<int64_t>(field("growth_interval"));
  state.growth_tracker = static_cast<int64_t>(field("_growth_tracker"));
  return state;
}

}  // namespace detkit::solver
