#include "detkit/checkpoint/matching_heuristics.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <sstream>

#include "detkit/utils/error.h"

namespace detkit::checkpoint {
namespace {

// The longest checkpoint key that is a dot-bounded suffix of `model_key`; nullptr when none.
// Walks the suffixes from the longest (the key itself) to the last component; two suffixes of
// one string with the same length are equal, so the longest match is unique.
const std::string* best_match(const std::string& model_key, const TensorDict& checkpoint) {
  for (size_t start = 0; start <= model_key.size();) {
    auto it = checkpoint.find(model_key.substr(start));
    if (it != checkpoint.end()) return &it->first;
    const size_t dot = model_key.find('.', start);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return nullptr;
}

std::string shape_text(const at::Tensor& t) {
  std::ostringstream out;
  out << t.sizes();
  return out.str();
}

std::string common_prefix(const std::vector<std::string>& keys) {
  if (keys.empty()) return "";
  std::string prefix = keys.front();
  for (const std::string& key : keys) {
    size_t n = 0;
    while (n < prefix.size() && n < key.size() && prefix[n] == key[n]) ++n;
    prefix.resize(n);
  }
  const size_t dot = prefix.rfind('.');
  return dot == std::string::npos ? "" : prefix.substr(0, dot + 1);
}

}  // namespace

TensorDict align_to_model(const TensorDict& model, const TensorDict& checkpoint,
                          const std::map<std::string, std::string>& original) {
  auto file_name = [&](const std::string& key) {
    auto it = original.find(key);
    return it == original.end() ? key : it->second;
  };
  TensorDict result;
  std::map<std::string, std::string> matched;  // checkpoint key -> model key
  std::vector<std::string> lines;
  for (const auto& [model_key, model_tensor] : model) {
    const std::string* key = best_match(model_key, checkpoint);
    if (key == nullptr) continue;
    const at::Tensor& value = checkpoint.at(*key);
    if (value.sizes() != model_tensor.sizes()) {
      spdlog::warn("Shape of {} in checkpoint is {}, while shape of {} in model is {}.", *key,
                   shape_text(value), model_key, shape_text(model_tensor));
      spdlog::warn("{} will not be loaded. Please double check and see if this is desired.", *key);
      continue;
    }
    auto [it, inserted] = matched.emplace(*key, model_key);
    if (!inserted)
      throw Error("ambiguous weights: checkpoint key '" + file_name(*key) +
                  "' matches two keys of the model ('" + it->second + "' and '" + model_key +
                  "'); rename it in the file or load it with its full name");
    result.emplace(model_key, value);
    lines.push_back(model_key + " <- " + file_name(*key) + " " + shape_text(value));
  }
  if (matched.empty()) {
    spdlog::warn("No weights in checkpoint matched with model.");
    return checkpoint;
  }
  std::vector<std::string> model_keys;
  for (const auto& [key, model_key] : matched) model_keys.push_back(model_key);
  std::sort(model_keys.begin(), model_keys.end());
  const std::string prefix = common_prefix(model_keys);
  spdlog::info("Following weights matched with {} ({} tensors, model name <- checkpoint name):",
               prefix.empty() ? "model" : "submodule " + prefix.substr(0, prefix.size() - 1),
               matched.size());
  for (const std::string& line : lines) spdlog::debug("  {}", line);
  for (const auto& [key, tensor] : checkpoint)
    if (!matched.count(key)) result.emplace(key, tensor);
  return result;
}

}  // namespace detkit::checkpoint
