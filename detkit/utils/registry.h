#pragma once
// Registry: components picked by name from configs (MODEL.BACKBONE.NAME, MODEL.ROI_HEADS.NAME,
// ...), as Detectron2's registries. An unknown name is an error listing the registered ones.
#include <functional>
#include <map>
#include <string>

#include "detkit/utils/error.h"
#include "detkit/utils/strings.h"

namespace detkit {

template <typename Factory>
class Registry {
 public:
  explicit Registry(std::string what) : what_(std::move(what)) {}

  /// Adds a factory; registering one name twice is a programming error.
  bool add(const std::string& name, Factory factory) {
    if (!entries_.emplace(name, std::move(factory)).second)
      throw Error(what_ + " '" + name + "' is registered twice");
    return true;
  }

  const Factory& get(const std::string& name) const {
    auto it = entries_.find(name);
    if (it != entries_.end()) return it->second;
    std::vector<std::string> names;
    for (const auto& [n, f] : entries_) names.push_back(n);
    std::string message = "unknown " + what_ + " '" + name + "'; registered: " + join(names, ", ");
    std::string close = closest_match(name, names);
    if (!close.empty()) message += " (did you mean '" + close + "'?)";
    throw Error(message);
  }

  bool has(const std::string& name) const { return entries_.count(name) > 0; }

 private:
  std::string what_;
  std::map<std::string, Factory> entries_;
};

}  // namespace detkit

/// The one registration idiom: adds `factory` under `name` to `registry` when the library
/// loads, e.g. DETKIT_REGISTER(::detkit::modeling::backbone_registry(), "my_backbone", f).
/// Each component folder wraps it (DETKIT_REGISTER_BACKBONE(name, factory), ...).
#define DETKIT_REGISTER(registry, name, ...)                                   \
  static const bool DETKIT_REGISTRY_CONCAT_(detkit_registered_, __COUNTER__) = \
      (registry).add(name, __VA_ARGS__)
#define DETKIT_REGISTRY_CONCAT_(a, b) DETKIT_REGISTRY_CONCAT_IMPL_(a, b)
#define DETKIT_REGISTRY_CONCAT_IMPL_(a, b) a##b
