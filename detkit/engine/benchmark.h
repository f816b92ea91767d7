#pragma once
// Throughput of the three jobs a detector run spends its time on (Detectron2's
// tools/benchmark.py): the training step, inference over a dataset, and the data loader alone.
//
//   auto window = detkit::engine::parse_window("3:10");        // iterations 3..9 are timed
//   auto result = detkit::engine::benchmark_train(cfg, 10, window, seed);
//   result.images_per_second;                                  // over the window only
//
// Every iteration is timed (wall clock, the data wait included); the figures average the
// iterations of the window, so warm-up (allocator, oneDNN primitive caches, loader start) can be
// left out. Peak memory is the process's resident high-water mark (peak_rss_mb in writers.h),
// loader threads included.
#include <cstdint>
#include <string>
#include <vector>

#include "detkit/config/cfg_node.h"

namespace detkit::engine {

/// Iterations [begin, end) of a run.
struct BenchmarkWindow {
  int64_t begin = 100;
  int64_t end = 500;
};

/// "A:B" with 0 <= A < B; anything else is a detkit::Error naming --window.
BenchmarkWindow parse_window(const std::string& text);

/// A detkit::Error naming --iters / --window unless 1 <= iterations and window.end <= iterations.
void check_window(int64_t iterations, BenchmarkWindow window);

struct BenchmarkResult {
  std::string task;  // "train", "eval" or "data"
  int64_t iterations = 0;
  BenchmarkWindow window;
  int64_t images_per_iter = 0;  // SOLVER.IMS_PER_BATCH for train and data, 1 for eval
  double images_per_second = 0;
  double seconds_per_iter = 0;       // mean over the window
  double data_seconds_per_iter = 0;  // mean time waiting for the loader, over the window
  double peak_rss_mb = 0;
  double peak_gpu_mb = 0;            // on a GPU: its tensors' peak over the run (0 on the CPU)
  std::vector<double> iter_seconds;  // every iteration, warm-up included
  std::vector<double> data_seconds;
  // train only, every iteration: the lr the step applied (largest parameter group) and the
  // total loss it computed.
  std::vector<double> learning_rates;
  std::vector<double> total_losses;
  // train only: conv + linear flops of one step (2 per multiply-add; backward counted as twice
  // the forward: input and weight gradients), the rate the step reaches, and the machine's GEMM
  // peak with the same threads (measure_gemm_gflops).
  double train_gflops_per_iter = 0;
  double achieved_gflops = 0;
  double gemm_peak_gflops = 0;
  // train on several ranks, every iteration: seconds of gradient communication, and the part of
  // it backward did not hide (Trainer::last_gradient_reduction); window means.
  std::vector<double> comm_seconds, comm_wait_seconds;
  double comm_seconds_per_iter = 0, comm_wait_seconds_per_iter = 0;
  double gradient_mb = 0;  // train: bytes of the trainable parameters' gradients, in MB (1e6)
  // train on a GPU, every iteration: the share of the step the GPU waited for the host before
  // the step's work began (Trainer::gpu_idle_share; -1 where unknown), and its window mean (-1
  // on the CPU). The benchmark waits for the GPU after every step, which this includes.
  std::vector<double> gpu_idle_shares;
  double gpu_idle_share = -1;
};

/// The real training step (loader, forward with losses, backward, SGD) of build_model(cfg) on
/// DATASETS.TRAIN for `iterations` iterations under the config's LR schedule, warm-up included,
/// as `detkit train` applies it (Detectron2's benchmark.py keeps SOLVER.BASE_LR throughout, which
/// from random init diverges where training would not); MODEL.WEIGHTS when set, else random
/// init. The window must lie within the iterations, and the iterations within SOLVER.MAX_ITER
/// (detkit::Error otherwise). In a job of several ranks, each trains on its share of
/// SOLVER.IMS_PER_BATCH from rank 0's weights, gradients averaged; images/s counts the global
/// batch; the eval and data tasks refuse to run on several ranks. Before the
/// timed run, one untimed forward pass on a batch counts the step's conv + linear flops.
/// With `profile_file`, libtorch's profiler records the window's iterations there as a Chrome
/// trace (op names with self times; chrome://tracing or bench/compare_torchvision/op_profile.py).
BenchmarkResult benchmark_train(const config::CfgNode& cfg, int64_t iterations,
                                BenchmarkWindow window, uint64_t seed,
                                const std::string& profile_file = "");

/// GFLOPS of a large float32 matrix product (best of several) with libtorch's current threads.
double measure_gemm_gflops();

/// Inference (eval mode, no autograd) one image at a time over DATASETS.TEST[0], restarting the
/// dataset when it runs out; an iteration is one image. `profile_file` as for benchmark_train.
BenchmarkResult benchmark_eval(const config::CfgNode& cfg, int64_t iterations,
                               BenchmarkWindow window, const std::string& profile_file = "");

/// The training loader alone (DATALOADER.NUM_WORKERS threads): an iteration is one batch.
BenchmarkResult benchmark_data(const config::CfgNode& cfg, int64_t iterations,
                               BenchmarkWindow window, uint64_t seed);

}  // namespace detkit::engine
