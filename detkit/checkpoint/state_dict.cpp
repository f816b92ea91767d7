#include "detkit/checkpoint/state_dict.h"

#include <sstream>

#include "detkit/checkpoint/torch_file.h"
#include "detkit/utils/error.h"

namespace detkit::checkpoint {

namespace {
std::string shape_text(const at::Tensor& t) {
  std::ostringstream out;
  out << t.sizes();
  return out.str();
}
}  // namespace

TensorDict state_dict(const torch::nn::Module& module) {
  TensorDict out;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) out[item.key()] = item.value();
  for (const auto& item : module.named_buffers(/*recurse=*/true)) out[item.key()] = item.value();
  return out;
}

std::string LoadReport::summary() const {
  std::string out = "loaded " + std::to_string(loaded) + " tensors";
  auto section = [&](const char* title, const std::vector<std::string>& names) {
    if (names.empty()) return;
    out += "\n" + std::string(title) + " (" + std::to_string(names.size()) + "):";
    for (const auto& n : names) out += "\n  " + n;
  };
  section("missing from the checkpoint", missing);
  section("unexpected in the checkpoint", unexpected);
  section("shape mismatch, not loaded", mismatched);
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
      report.mismatched.push_back(name + ": checkpoint " + shape_text(tensor) + " vs model " +
                                  shape_text(it->second));
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
