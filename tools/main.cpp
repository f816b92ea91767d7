// detkit: one binary, Detectron2's commands. Errors print on one line and exit non-zero; a
// training run stopped by SIGTERM / SIGINT after saving its checkpoint exits 75 (EX_TEMPFAIL).
#include <spdlog/spdlog.h>

#include <iostream>

#include "detkit/utils/allocator.h"
#include "detkit/utils/cuda_build.h"
#include "detkit/utils/error.h"
#include "detkit/utils/logging.h"
#include "detkit/utils/stop_signal.h"
#include "detkit/utils/threads.h"
#include "detkit/utils/torch_build.h"
#include "tools/commands.h"

int main(int argc, char** argv) {
  detkit::configure_allocator();
  detkit::ignore_file_size_signal();  // a full disk is an error naming the file, not a kill
  detkit::setup_logging();
  CLI::App app{"detkit: train and run R-CNN detectors (Detectron2 configs, one native binary)"};
  app.require_subcommand(1);
  // torch's version and the CUDA, cuDNN and NCCL it was built with, and the GPUs seen.
  app.set_version_flag(
      "--version",
      [] {
        return "detkit " DETKIT_VERSION "\n" + detkit::torch_build_report() + "\n" +
               detkit::cuda_build_report();
      },
      "Print detkit's version, the torch build it runs on (CUDA, cuDNN, NCCL) and the GPUs seen");
  int num_threads = 0;
  app.add_option("--num-threads", num_threads,
                 "libtorch threads (default: $DETKIT_NUM_THREADS, else every core)");
  std::vector<detkit::tools::CommandRunner> commands = {
      detkit::tools::add_config_command(app),
      detkit::tools::add_make_shapes_command(app),
      detkit::tools::add_analyze_model_command(app),
      detkit::tools::add_evaluate_command(app),
      detkit::tools::add_train_command(app),
      detkit::tools::add_data_command(app),
      detkit::tools::add_infer_command(app),
      detkit::tools::add_export_command(app),
      detkit::tools::add_visualize_data_command(app),
      detkit::tools::add_benchmark_command(app),
      detkit::tools::add_convert_weights_command(app),
      detkit::tools::add_plot_command(app),
      detkit::tools::add_model_zoo_command(app),
      detkit::tools::add_prepare_panoptic_fpn_command(app),
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    detkit::configure_threads(num_threads);
    spdlog::info("{}", detkit::torch_build_report());  // its BLAS, oneDNN and OpenMP team
    spdlog::info("{}", detkit::cuda_build_report());   // CUDA, cuDNN, NCCL and the GPUs seen
    for (auto& run : commands) {
      int code = run();
      if (code >= 0) return code;
    }
    return 1;
  } catch (const detkit::Preempted& e) {  // stopped on a signal, its checkpoint saved
    std::cerr << "detkit: stopped: " << e.what() << "\n";
    return detkit::kPreemptedExitCode;
  } catch (const std::exception& e) {
    std::cerr << "detkit: error: " << e.what() << "\n";
    return 1;
  }
}
