#pragma once
// Detectron2's default config (detectron2/config/defaults.py): every key, name, type and value.
#include <string>
#include <vector>

#include "detkit/config/cfg_node.h"

namespace detkit::config {

/// A fresh, unfrozen copy of the defaults tree.
CfgNode get_cfg();

/// The keys of get_cfg() that Detectron2's has not: detkit's own settings (a config.yaml
/// detkit writes has them; Detectron2 would refuse it until they are deleted).
const std::vector<std::string>& detkit_only_keys();

}  // namespace detkit::config
