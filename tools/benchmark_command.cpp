// detkit benchmark: Detectron2's tools/benchmark.py — images/s of the training step, of inference
// or of the data loader for a config, averaged over a window of iterations; a table, or one JSON
// object on stdout with --json.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "detkit/config/defaults.h"
#include "detkit/engine/benchmark.h"
#include "detkit/engine/defaults.h"
#include "detkit/distributed/comm.h"
#include "tools/commands.h"
#include "tools/launch_flags.h"

namespace detkit::tools {

namespace {

nlohmann::json to_json(const engine::BenchmarkResult& r, const config::CfgNode& cfg,
                       const std::string& config_file) {
  nlohmann::json j = {{"task", r.task},
                      {"config_file", config_file},
                      {"iterations", r.iterations},
                      {"window", {r.window.begin, r.window.end}},
                      {"images_per_iter", r.images_per_iter},
                      {"images_per_second", r.images_per_second},
                      {"seconds_per_iter", r.seconds_per_iter},
                      {"data_seconds_per_iter", r.data_seconds_per_iter},
                      {"peak_rss_mb", r.peak_rss_mb},
                      {"num_threads", at::get_num_threads()},
                      {"world_size", distributed::get_world_size()},
                      {"num_workers", cfg.get_int("DATALOADER.NUM_WORKERS")},
                      {"iter_seconds", r.iter_seconds},
                      {"data_seconds", r.data_seconds}};
  if (r.peak_gpu_mb > 0) j["peak_gpu_mb"] = r.peak_gpu_mb;  // compare_torchvision's GPU column
  if (r.gpu_idle_share >= 0) j["gpu_idle_share"] = r.gpu_idle_share;
  if (r.task == "train") {
    j["train_gflops_per_iter"] = r.train_gflops_per_iter;
    j["achieved_gflops"] = r.achieved_gflops;
    j["gemm_peak_gflops"] = r.gemm_peak_gflops;
    j["gemm_peak_share"] = r.achieved_gflops / r.gemm_peak_gflops;
    j["learning_rates"] = r.learning_rates;
    j["total_losses"] = r.total_losses;
    j["comm_seconds_per_iter"] = r.comm_seconds_per_iter;
    j["comm_wait_seconds_per_iter"] = r.comm_wait_seconds_per_iter;
    j["gradient_mb"] = r.gradient_mb;
  }
  return j;
}

void print_table(const engine::BenchmarkResult& r, const config::CfgNode& cfg) {
  std::cout << fmt::format(
      "task {}: iterations {}..{} of {} ({} image(s) each), {} threads, {} loader workers\n"
      "  images/s        {:10.3f}\n"
      "  s/iter          {:10.4f}\n"
      "  data s/iter     {:10.4f}\n"
      "  peak RSS (MiB)  {:10.1f}\n",
      r.task, r.window.begin, r.window.end - 1, r.iterations, r.images_per_iter,
      at::get_num_threads(), cfg.get_int("DATALOADER.NUM_WORKERS"), r.images_per_second,
      r.seconds_per_iter, r.data_seconds_per_iter, r.peak_rss_mb);
  if (r.peak_gpu_mb > 0) std::cout << fmt::format("  peak GPU (MiB)  {:10.1f}\n", r.peak_gpu_mb);
  if (r.gpu_idle_share >= 0)
    std::cout << fmt::format("  GPU idle        {:9.1f}%  (waiting for the host between steps)\n",
                             100 * r.gpu_idle_share);
  if (r.task == "train")
    std::cout << fmt::format(
        "  GFLOP/iter      {:10.1f}  (conv + linear, forward x 3, 2 flops per multiply-add)\n"
        "  GFLOPS          {:10.1f}  ({:.0f}% of the {:.1f} GFLOPS a 2048^2 matmul reaches)\n",
        r.train_gflops_per_iter, r.achieved_gflops, 100 * r.achieved_gflops / r.gemm_peak_gflops,
        r.gemm_peak_gflops);
  if (r.task == "train" && distributed::get_world_size() > 1)
    std::cout << fmt::format(
        "  ranks           {:10d}\n"
        "  comm s/iter     {:10.4f}  (gradient all-reduce, first bucket's start to last's end)\n"
        "  comm wait s/iter{:10.4f}  ({:.1f}% of the step: the part backward did not hide)\n",
        distributed::get_world_size(), r.comm_seconds_per_iter, r.comm_wait_seconds_per_iter,
        100 * r.comm_wait_seconds_per_iter / r.seconds_per_iter);
}

}  // namespace

CommandRunner add_benchmark_command(CLI::App& app) {
  struct Options {
    std::string config_file, task = "train", window = "100:500", profile;
    int64_t iters = 0;
    bool json = false;
    std::vector<std::string> overrides;
    distributed::LaunchOptions launch;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "benchmark", "Images/s of training, inference or data loading for a config");
  cmd->add_option("--config-file", o->config_file, "Detectron2-style YAML config")->required();
  cmd->add_option("--task", o->task,
                  "train: loader + forward + backward + SGD step; eval: inference on "
                  "DATASETS.TEST[0], one image per iteration; data: the training loader alone")
      ->check(CLI::IsMember({"train", "eval", "data"}))
      ->capture_default_str();
  cmd->add_option("--window", o->window,
                  "A:B: the averages cover iterations A..B-1 (earlier ones are warm-up)")
      ->capture_default_str();
  cmd->add_option("--iters", o->iters, "iterations to run (default: the window's end)")
      ->check(CLI::PositiveNumber);
  cmd->add_option(
      "--profile", o->profile,
      "train and eval: write a Chrome trace of the window's iterations (libtorch profiler) "
      "to this file");
  cmd->add_flag("--json", o->json, "print one JSON object on stdout instead of the table");
  add_launch_flags(cmd, o->launch);
  accept_overrides(cmd, "KEY VALUE config overrides, as in detkit train");
  cmd->footer(
      "Examples:\n"
      "  detkit benchmark --config-file configs/quick/mask_rcnn_R_18_FPN_shapes.yaml "
      "--window 5:25\n"
      "  detkit benchmark --config-file X.yaml --task eval --window 5:50 --json\n"
      "  detkit benchmark --config-file X.yaml --task data --window 10:200 "
      "DATALOADER.NUM_WORKERS 2\n");
  return [cmd, o]() {
    if (!*cmd) return -1;
    o->overrides = overrides_of(*cmd);
    engine::BenchmarkWindow window = engine::parse_window(o->window);
    const int64_t iters = o->iters > 0 ? o->iters : window.end;
    engine::check_window(iters, window);
    if (launch_or_join(o->launch)) return 0;  // the workers printed rank 0's result
    const config::CfgNode cfg = load_config(o->config_file, o->overrides);
    int64_t seed = cfg.get_int("SEED");
    if (seed < 0) seed = 0;  // a benchmark repeats: the same batches every run
    at::manual_seed(static_cast<uint64_t>(seed));
    engine::ensure_builtin_datasets(cfg);
    engine::BenchmarkResult result =
        o->task == "train"  ? engine::benchmark_train(cfg, iters, window, seed, o->profile)
        : o->task == "eval" ? engine::benchmark_eval(cfg, iters, window, o->profile)
                            : engine::benchmark_data(cfg, iters, window, seed);
    if (!distributed::is_main_process()) return 0;
    if (o->json)
      std::cout << to_json(result, cfg, o->config_file).dump() << "\n";
    else
      print_table(result, cfg);
    return 0;
  };
}

}  // namespace detkit::tools
