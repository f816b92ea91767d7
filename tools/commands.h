#pragma once
// Each `detkit <command>` registers its flags on the CLI app and runs when chosen.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "detkit/config/cfg_node.h"

namespace detkit::tools {

/// The frozen config a command runs with: Detectron2's defaults, then `config_file` (with its
/// _BASE_ chain), then the command line's KEY VALUE `overrides`.
config::CfgNode load_config(const std::string& config_file,
                            const std::vector<std::string>& overrides);

/// Adds the subcommand to `app`; the returned function runs it (after parsing) and returns the
/// process exit code.
using CommandRunner = std::function<int()>;
CommandRunner add_config_command(CLI::App& app);
CommandRunner add_make_shapes_command(CLI::App& app);
CommandRunner add_analyze_model_command(CLI::App& app);
CommandRunner add_evaluate_command(CLI::App& app);
CommandRunner add_train_command(CLI::App& app);
CommandRunner add_data_command(CLI::App& app);
CommandRunner add_infer_command(CLI::App& app);
CommandRunner add_visualize_data_command(CLI::App& app);
CommandRunner add_benchmark_command(CLI::App& app);

}  // namespace detkit::tools
