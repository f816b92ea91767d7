#pragma once
// Detectron2's default config (detectron2/config/defaults.py): every key, name, type and value.
#include "detkit/config/cfg_node.h"

namespace detkit::config {

/// A fresh, unfrozen copy of the defaults tree.
CfgNode get_cfg();

}  // namespace detkit::config
