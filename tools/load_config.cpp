#include "detkit/config/defaults.h"
#include "detkit/utils/error.h"
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

void accept_overrides(CLI::App* cmd, const std::string& help) {
  cmd->allow_extras();
  cmd->description(cmd->get_description() + "\n  Trailing arguments: " + help);
}

std::vector<std::string> overrides_of(const CLI::App& cmd) {
  std::vector<std::string> overrides = cmd.remaining();
  for (const auto& arg : overrides)
    if (arg.rfind("--", 0) == 0)
      throw Error("detkit " + cmd.get_name() + ": unknown option '" + arg +
                  "' (see --help; config overrides are KEY VALUE pairs)");
  return overrides;
}

}  // namespace detkit::tools
