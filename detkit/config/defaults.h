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

/// MODEL.DEVICE's default comes from a probe of the devices this process sees, which the
/// modeling library installs when it loads ("cuda" where a GPU is visible, else "cpu"; the
/// config library itself links no CUDA); "cpu" until one is installed.
using DefaultDeviceProbe = std::string (*)();
void set_default_device_probe(DefaultDeviceProbe probe);

}  // namespace detkit::config
