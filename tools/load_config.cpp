#include "detkit/config/defaults.h"
#include "tools/commands.h"

namespace detkit::tools {

config::CfgNode load_config(const std::string& config_file,
                            const std::vector<std::string>& overrides) {
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_file(config_file);
  cfg.merge_from_list(overrides);
  cfg.freeze();
  return cfg;
}

}  // namespace detkit::tools
