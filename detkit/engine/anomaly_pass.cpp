#include "detkit/engine/anomaly_pass.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <c10/util/Exception.h>

#include <exception>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace detkit::engine {
namespace {

bool all_finite(const at::Tensor& t) {
  if (!t.defined() || t.numel() == 0 || !at::isFloatingType(t.scalar_type())) return true;
  return at::isfinite(t).all().item<bool>();
}

// "backbone.res2.0.conv1.weight" -> "backbone.res2.0.conv1".
std::string module_of(const std::string& tensor_name) {
  const size_t dot = tensor_name.rfind('.');
  return dot == std::string::npos ? "(the model itself)" : tensor_name.substr(0, dot);
}

std::string first_of(const std::vector<std::string>& names, const std::string& what) {
  return what + ": " + std::to_string(names.size()) + " (the first: " + names.front() + ")";
}

// The state of the observed pass; the callbacks are plain function pointers, and the pass runs
// in one thread, so they find it through a thread-local pointer.
struct Observer {
  // The module of each parameter and buffer, by data pointer (views and casts of a weight whose
  // storage it shares are found too).
  std::unordered_map<const void*, std::string> owner;
  std::string last_module = "(none yet)";
  std::vector<std::string> running;  // the ops begun and not yet ended, outermost first
  // The first non-finite output: "aten::addmm (its inner aten::copy_) in module first".
  std::string found;
};
thread_local Observer* observer = nullptr;

// Ops whose output is memory not yet written: never checked.
bool uninitialised_output(std::string_view op) {
  for (std::string_view prefix : {"aten::empty", "aten::new_empty", "aten::_empty", "aten::resize"})
    if (op.substr(0, prefix.size()) == prefix) return true;
  return false;
}

template <typename F>
void for_each_tensor(const c10::IValue& v, F&& f) {
  if (v.isTensor()) {
    f(v.toTensor());
  } else if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorVector()) f(t);
  } else if (v.isTuple()) {
    for (const c10::IValue& e : v.toTupleRef().elements()) for_each_tensor(e, f);
  }
}

// What the end of an op needs of its inputs, taken at its start: RecordFunction's inputs are
// only valid until the kernel runs.
struct OpInputs : at::ObserverContext {
  std::string module;                   // the module of a parameter or buffer among them
  std::vector<c10::Storage> storages;  // for telling a view of an input from a new value
};

std::unique_ptr<at::ObserverContext> on_op_start(const at::RecordFunction& fn) {
  if (observer == nullptr) return nullptr;
  observer->running.emplace_back(fn.name());
  auto inputs = std::make_unique<OpInputs>();
  for (const c10::IValue& input : fn.inputs())
    for_each_tensor(input, [&](const at::Tensor& t) {
      if (!t.defined() || !t.has_storage()) return;
      inputs->storages.push_back(t.storage());
      auto it = observer->owner.find(t.storage().data());
      if (it != observer->owner.end() && inputs->module.empty()) inputs->module = it->second;
    });
  if (observer->found.empty() && !inputs->module.empty()) observer->last_module = inputs->module;
  return inputs;
}

void on_op_end(const at::RecordFunction& fn, at::ObserverContext* context) {
  if (observer == nullptr) return;
  // The op the user called (aten::linear) rather than the step inside it that went non-finite.
  const std::string outermost = observer->running.empty() ? fn.name() : observer->running.front();
  if (!observer->running.empty()) observer->running.pop_back();
  const auto* inputs = static_cast<const OpInputs*>(context);
  if (!observer->found.empty() || inputs == nullptr) return;
  const std::string op = fn.name();
  if (uninitialised_output(op)) return;
  // A view or alias of an input (narrow, select, a no-op contiguous) is not checked: that input
  // was, or is memory still to be written. In-place and out= ops write what they return.
  const auto name = fn.operator_name();
  const bool writes = (!op.empty() && op.back() == '_') || (name && name->overload_name == "out");
  at::DisableRecordFunctionGuard not_observed;  // isfinite below is not an op of the model
  bool bad = false;
  for (const c10::IValue& output : fn.outputs())
    for_each_tensor(output, [&](const at::Tensor& t) {
      if (bad || !t.defined()) return;
      if (!writes && t.has_storage())
        for (const c10::Storage& in : inputs->storages)
          if (in.is_alias_of(t.storage())) return;
      bad = !all_finite(t);
    });
  if (!bad) return;
  observer->found = outermost + (outermost == op ? "" : " (its inner " + op + ")") +
                    (inputs->module.empty() ? ", after module " + observer->last_module
                                            : " in module " + inputs->module);
}

// While it lives, every op this thread runs is observed into `state`.
class ObservedPass {
 public:
  explicit ObservedPass(Observer& state)
      : handle_(at::addThreadLocalCallback(at::RecordFunctionCallback(on_op_start, on_op_end)
                                               .needsInputs(true)
                                               .needsOutputs(true)
                                               .scopes({at::RecordScope::FUNCTION}))) {
    observer = &state;
  }
  ~ObservedPass() {
    at::removeCallback(handle_);
    observer = nullptr;
  }
  ObservedPass(const ObservedPass&) = delete;
  ObservedPass& operator=(const ObservedPass&) = delete;

 private:
  at::CallbackHandle handle_;
};

}  // namespace

std::string anomaly_report(const torch::nn::Module& model, const std::function<void()>& forward) {
  std::vector<std::string> findings;
  Observer state;
  std::vector<std::string> bad_values, bad_grads;
  for (const auto& item : model.named_parameters(/*recurse=*/true)) {
    const at::Tensor& p = item.value();
    if (!all_finite(p)) bad_values.push_back(item.key());
    if (p.grad().defined() && !all_finite(p.grad())) bad_grads.push_back(item.key());
    if (p.has_storage()) state.owner.emplace(p.storage().data(), module_of(item.key()));
  }
  for (const auto& item : model.named_buffers(/*recurse=*/true)) {
    if (!all_finite(item.value())) bad_values.push_back(item.key());
    if (item.value().has_storage())
      state.owner.emplace(item.value().storage().data(), module_of(item.key()));
  }
  if (!bad_values.empty())
    findings.push_back(first_of(bad_values, "parameters and buffers already non-finite"));
  if (!bad_grads.empty())
    findings.push_back(first_of(bad_grads, "non-finite gradients of the previous step"));

  std::string error;
  {
    ObservedPass observed(state);
    try {
      forward();
    } catch (const c10::Error& e) {
      error = e.what_without_backtrace();
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  findings.push_back(state.found.empty()
                         ? "this batch's forward pass, run again, kept every op's output finite"
                         : "the first non-finite output of this batch's forward pass, run again: " +
                               state.found);
  if (!error.empty()) findings.push_back("the pass run again stopped on: " + error);
  std::string report = "anomaly pass: ";
  for (size_t i = 0; i < findings.size(); ++i) report += (i ? "; " : "") + findings[i];
  return report;
}

}  // namespace detkit::engine
