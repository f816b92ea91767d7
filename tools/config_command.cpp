// detkit config --config-file X.yaml [KEY VALUE ...]: prints the merged config as YAML.
#include <iostream>
#include <memory>

#include "detkit/config/defaults.h"
#include "tools/commands.h"

namespace detkit::tools {

CommandRunner add_config_command(CLI::App& app) {
  struct Options {
    std::string config_file;
    std::vector<std::string> overrides;
  };
  auto options = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "config", "Print the merged config (defaults, the file's _BASE_ chain, overrides) as YAML");
  cmd->add_option("--config-file", options->config_file, "Detectron2-style YAML config file")
      ->required();
  accept_overrides(
      cmd, "KEY VALUE pairs, e.g. SOLVER.BASE_LR 0.0025 INPUT.MIN_SIZE_TRAIN \"(640, 672)\"");
  cmd->footer(
      "Example: detkit config --config-file configs/Base-RCNN-FPN.yaml SOLVER.IMS_PER_BATCH 2\n");
  return [cmd, options]() {
    if (!*cmd) return -1;
    options->overrides = overrides_of(*cmd);
    const config::CfgNode cfg = load_config(options->config_file, options->overrides);
    std::cout << cfg.dump();
    return 0;
  };
}

}  // namespace detkit::tools
