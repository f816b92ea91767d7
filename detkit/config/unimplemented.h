#pragma once
// Detectron2 keys that detkit defines (so Detectron2's YAML files load) but does not implement
// yet. Left at Detectron2's default they change nothing; set to anything else they would be
// silently ignored, so every command that builds a model refuses them with the key named.
#include <string>
#include <vector>

#include "detkit/config/cfg_node.h"

namespace detkit::config {

struct UnimplementedKey {
  std::string key;
  std::string feature;  // what setting it would turn on, for the message
};

/// The keys, each with the feature it stands for.
const std::vector<UnimplementedKey>& unimplemented_keys();

/// detkit::Error naming the first key of unimplemented_keys() whose value differs from
/// Detectron2's default (get_cfg()), with the value and the feature.
void check_implemented(const CfgNode& cfg);

}  // namespace detkit::config
