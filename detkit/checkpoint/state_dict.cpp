#include "detkit/checkpoint/state_dict.h"

#include <algorithm>

#include "detkit/checkpoint/torch_file.h"
#include "detkit/utils/error.h"

namespace detkit::checkpoint {

namespace {
std::string tuple_text(const std::vector<int64_t>& shape) {
  std::string out = "(";
  for (size_t d = 0; d < shape.size(); ++d) out += (d ? ", " : "") + std::to_string(shape[d]);
  return out + (shape.size() == 1 ? ",)" : ")");
}
}  // namespace

TensorDict state_dict(const torch::nn::Module& module) {
  TensorDict out;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) out[item.key()] = item.value();
  for (const auto& item : module.named_buffers(/*recurse=*/true)) out[item.key()] = item.value();
  return out;
}

namespace {
void append_state(const torch::nn::Module& module, const std::string& prefix,
                  std::vector<std::pair<std::string, at::Tensor>>& out) {
  for (const auto& item : module.named_parameters(/*recurse=*/false))
    out.emplace_back(prefix + item.key(), item.value());
  for (const auto& item : module.named_buffers(/*recurse=*/false))
    out.emplace_back(prefix + item.key(), item.value());
  for (const auto& child : module.named_children())
    append_state(*child.value(), prefix + child.key() + ".", out);
}
}  // namespace

std::vector<std::pair<std::string, at::Tensor>> ordered_state_dict(
    const torch::nn::Module& module) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  append_state(module, "", out);
  return out;
}

std::vector<std::string> group_names(const std::vector<std::string>& names) {
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  for (const std::string& name : names) {
    const size_t dot = name.rfind('.');
    const std::string head = dot == std::string::npos ? name : name.substr(0, dot);
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == head; });
    if (it == groups.end()) it = groups.insert(groups.end(), {head, {}});
    if (dot != std::string::npos) it->second.push_back(name.substr(dot + 1));
  }
  std::vector<std::string> out;
  for (const auto& [head, tails] : groups) {
    std::string line = head;
    if (tails.size() == 1) line += "." + tails[0];
    if (tails.size() > 1) {
      line += ".{";
      for (size_t i = 0; i < tails.size(); ++i) line += (i ? ", " : "") + tails[i];
      line += "}";
    }
    out.push_back(line);
  }
  return out;
}

std::string LoadReport::summary() const {
  std::string out = "loaded " + std::to_string(loaded) + " tensors";
  for (const ShapeMismatch& m : mismatched)
    out += "\nSkip loading parameter '" + m.name +
           "' to the model due to incompatible shapes: " + tuple_text(m.checkpoint) +
           " in the checkpoint but " + tuple_text(m.model) +
           " in the model! You might want to double check if this is expected.";
  auto section = [&](const char* title, const std::vector<std::string>& names) {
    if (names.empty()) return;
    out += "\n" + std::string(title);
    for (const std::string& line : group_names(names)) out += "\n  " + line;
  };
  // Detectron2 lists the shape-mismatched keys (not loaded) among the missing ones too.
  std::vector<std::string> not_loaded = missing;
  for (const ShapeMismatch& m : mismatched) not_loaded.push_back(m.name);
  std::sort(not_loaded.begin(), not_loaded.end());
  section("Some model parameters or buffers are not found in the checkpoint:", not_loaded);
  section("The checkpoint state_dict contains keys that are not used by the model:", unexpected);
  return out;
}

LoadReport load_state_dict(torch::nn::Module& module, const TensorDict& dict,
                           const std::string& prefix) {
  TensorDict own = state_dict(module);
  LoadReport report;
  torch::NoGradGuard no_grad;
  std::map<std::string, bool> seen;
  for (const auto& [full_name, tensor] : dict) {
    if (full_name.compare(0, prefix.size(), prefix) != 0) {
      report.unexpected.push_back(full_name);
      continue;
    }
    std::string name = full_name.substr(prefix.size());
    auto it = own.find(name);
    if (it == own.end()) {
      report.unexpected.push_back(full_name);
      continue;
    }
    seen[name] = true;
    if (it->second.sizes() != tensor.sizes()) {
      report.mismatched.push_back({name, tensor.sizes().vec(), it->second.sizes().vec()});
      continue;
    }
    it->second.copy_(tensor);
    ++report.loaded;
  }
  for (const auto& [name, tensor] : own)
    if (!seen.count(name)) report.missing.push_back(name);
  return report;
}

TensorDict load_plain_tensor_dict(const std::string& path) {
  const c10::IValue value = load_torch_file(path);
  if (!value.isGenericDict()) throw Error("'" + path + "' does not hold a dict of tensors");
  TensorDict out;
  for (const auto& entry : value.toGenericDict()) {
    if (!entry.key().isString() || !entry.value().isTensor())
      throw Error("'" + path + "': every entry must map a name to a tensor");
    out[entry.key().toStringRef()] = entry.value().toTensor();
  }
  return out;
}

}  // namespace detkit::checkpoint
