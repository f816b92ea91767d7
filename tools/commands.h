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

/// Lets `cmd` take trailing KEY VALUE config overrides (`help` shows an example). They are
/// collected as CLI11's extras, not as a vector option: CLI11 splits an option argument written
/// "[a, b]" into items, and Detectron2's list syntax "[57.375, 57.120, 58.395]" must reach the
/// config parser as written.
void accept_overrides(CLI::App* cmd, const std::string& help);
/// The overrides after parsing, in order. An argument starting with "--" is an unknown flag of
/// `cmd`, not a config key: detkit::Error naming it.
std::vector<std::string> overrides_of(const CLI::App& cmd);

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
CommandRunner add_convert_weights_command(CLI::App& app);
CommandRunner add_model_zoo_command(CLI::App& app);
CommandRunner add_plot_command(CLI::App& app);
CommandRunner add_export_command(CLI::App& app);
CommandRunner add_prepare_panoptic_fpn_command(CLI::App& app);

}  // namespace detkit::tools
