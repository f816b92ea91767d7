#pragma once
// The flags with which `detkit train` and `detkit benchmark` run as several processes
// (Detectron2's --num-gpus, --num-machines, --machine-rank, --dist-url, plus --dist-timeout),
// and what a command does with them before its own work.
#include <CLI/CLI.hpp>

#include "detkit/distributed/launcher.h"

namespace detkit::tools {

void add_launch_flags(CLI::App* cmd, distributed::LaunchOptions& options);

/// Joins the job an external launcher (torchrun, srun, or this one) describes in the
/// environment, and returns false: this process is a rank and goes on. Otherwise, when the
/// flags ask for several processes, starts and supervises them and returns true once they all
/// succeeded: the command is done. With neither, returns false: a job of one process.
bool launch_or_join(const distributed::LaunchOptions& options);

}  // namespace detkit::tools
