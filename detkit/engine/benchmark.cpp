#include "detkit/engine/benchmark.h"

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>
#include <torch/csrc/autograd/profiler_legacy.h>

#include <chrono>
#include <numeric>
#include <regex>

#include "detkit/analysis/flop_count.h"
#include "detkit/checkpoint/checkpointer.h"
#include "detkit/data/loader.h"
#include "detkit/distributed/comm.h"
#include "detkit/engine/amp_trainer.h"
#include "detkit/engine/hooks.h"
#include "detkit/engine/trainer.h"
#include "detkit/engine/writers.h"
#include "detkit/modeling/meta_arch/meta_arch.h"
#include "detkit/solver/build.h"
#include "detkit/utils/autocast.h"
#include "detkit/utils/error.h"
#include "detkit/utils/gpu.h"

namespace detkit::engine {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Inference and the loader run per process: several ranks would only time the same thing twice.
void refuse_many_ranks(const std::string& task) {
  if (distributed::get_world_size() > 1)
    throw Error("rank " + std::to_string(distributed::get_rank()) + ": benchmark --task " + task +
                " runs in one process; only --task train runs on " +
                std::to_string(distributed::get_world_size()) + " ranks");
}

// Fills the window averages of `r` from its per-iteration times.
BenchmarkResult summarize(BenchmarkResult r) {
  const auto b = r.window.begin, e = r.window.end;
  auto mean = [&](const std::vector<double>& v) {
    return v.size() < static_cast<size_t>(e)
               ? 0.0
               : std::accumulate(v.begin() + b, v.begin() + e, 0.0) / static_cast<double>(e - b);
  };
  r.seconds_per_iter = mean(r.iter_seconds);
  r.data_seconds_per_iter = mean(r.data_seconds);
  r.comm_seconds_per_iter = mean(r.comm_seconds);
  r.comm_wait_seconds_per_iter = mean(r.comm_wait_seconds);
  r.images_per_second = r.seconds_per_iter > 0 ? r.images_per_iter / r.seconds_per_iter : 0;
  r.peak_rss_mb = peak_rss_mb();
  r.peak_gpu_mb = peak_gpu_memory_mb();
  double idle = 0;
  int64_t known = 0;
  for (int64_t i = b; i < e && i < static_cast<int64_t>(r.gpu_idle_shares.size()); ++i)
    if (r.gpu_idle_shares[static_cast<size_t>(i)] >= 0)
      idle += r.gpu_idle_shares[static_cast<size_t>(i)], ++known;
  r.gpu_idle_share = known > 0 ? idle / static_cast<double>(known) : -1;
  return r;
}

BenchmarkResult start_result(const std::string& task, int64_t iterations, BenchmarkWindow window,
                             int64_t images_per_iter) {
  check_window(iterations, window);
  BenchmarkResult r;
  r.task = task;
  r.iterations = iterations;
  r.window = window;
  r.images_per_iter = images_per_iter;
  return r;
}

void log_iteration(const BenchmarkResult& r) {
  const std::string training = r.total_losses.empty()
                                   ? ""
                                   : fmt::format(", total_loss {:.4g}, lr {:.5g}",
                                                 r.total_losses.back(), r.learning_rates.back());
  spdlog::info("{} iteration {} of 0..{}: {:.4f} s (data {:.4f} s){}", r.task,
               r.iter_seconds.size() - 1, r.iterations - 1, r.iter_seconds.back(),
               r.data_seconds.back(), training);
}

std::shared_ptr<modeling::MetaArch> build_loaded_model(const config::CfgNode& cfg) {
  auto model = modeling::build_model(cfg);
  const std::string weights = cfg.get_string("MODEL.WEIGHTS");
  if (!weights.empty()) {
    checkpoint::Checkpointer checkpointer(model, cfg.get_string("OUTPUT_DIR"));
    checkpointer.resume_or_load(weights, /*resume=*/false);
  }
  return model;
}

// libtorch's profiler over a window: on while the iteration count is in [begin, end).
class WindowProfiler {
 public:
  WindowProfiler(std::string file, BenchmarkWindow window)
      : file_(std::move(file)), window_(window) {}
  /// Call before iteration `i` runs (and with the iteration count once the run is over).
  void before_iteration(int64_t i) {
    if (i == window_.end) profile_.reset();  // writes the trace
    if (!file_.empty() && i == window_.begin)
      profile_ = std::make_unique<torch::autograd::profiler::RecordProfile>(file_);
  }

 private:
  std::string file_;
  BenchmarkWindow window_;
  std::unique_ptr<torch::autograd::profiler::RecordProfile> profile_;
};

// Records each training step's wall time (from the end of the previous one) and data wait.
class StepTimer : public HookBase {
 public:
  StepTimer(BenchmarkResult& result, const std::string& profile_file)
      : result_(result), profiler_(profile_file, result.window) {}
  void before_train(Trainer&) override {
    profiler_.before_iteration(0);
    last_ = Clock::now();
  }
  void after_step(Trainer& trainer) override {
    synchronize_gpu();  // a GPU's step is done when its queued work is, not when it was launched
    auto now = Clock::now();
    result_.iter_seconds.push_back(seconds(now - last_));
    result_.data_seconds.push_back(trainer.storage().latest("data_time").first);
    result_.learning_rates.push_back(trainer.storage().latest("lr").first);
    result_.total_losses.push_back(trainer.storage().latest("total_loss").first);
    const distributed::ReductionTiming comm = trainer.last_gradient_reduction();
    result_.comm_seconds.push_back(comm.communication);
    result_.comm_wait_seconds.push_back(comm.waiting);
    result_.gpu_idle_shares.push_back(trainer.gpu_idle_share());  // the GPU is done: known
    log_iteration(result_);
    profiler_.before_iteration(static_cast<int64_t>(result_.iter_seconds.size()));
    last_ = Clock::now();  // the profiler's start and stop are not the step's time
  }

 private:
  BenchmarkResult& result_;
  WindowProfiler profiler_;
  Clock::time_point last_;
};

// Conv + linear multiply-adds of one training forward pass (losses included) on `batch`.
int64_t training_forward_macs(modeling::MetaArch& model,
                              const std::vector<structures::ModelInput>& batch) {
  at::NoGradGuard no_grad;
  analysis::FlopCounter counter(model);
  model.train();
  model.losses(batch);
  return counter.total();
}

}  // namespace

double measure_gemm_gflops() {
  const int64_t n = 2048;
  at::Tensor a = at::rand({n, n}), b = at::rand({n, n}), c = at::empty({n, n});
  double best = 0;
  for (int i = 0; i < 6; ++i) {
    auto start = Clock::now();
    at::mm_out(c, a, b);
    best = std::max(best, 2.0 * n * n * n / seconds(Clock::now() - start) / 1e9);
  }
  return best;
}

void check_window(int64_t iterations, BenchmarkWindow window) {
  if (iterations < 1) throw Error("--iters must be at least 1, got " + std::to_string(iterations));
  if (window.end > iterations)
    throw Error("--window " + std::to_string(window.begin) + ":" + std::to_string(window.end) +
                " ends after the last iteration (--iters " + std::to_string(iterations) +
                "): lower the window or raise --iters");
}

BenchmarkWindow parse_window(const std::string& text) {
  static const std::regex kWindow(R"(^(\d{1,9}):(\d{1,9})$)");
  std::smatch match;
  BenchmarkWindow w;
  if (std::regex_match(text, match, kWindow)) {
    w.begin = std::stoll(match[1]);
    w.end = std::stoll(match[2]);
  }
  if (match.empty() || w.begin >= w.end)
    throw Error("--window must be A:B with 0 <= A < B (iterations A..B-1 are timed), got '" + text +
                "'");
  return w;
}

BenchmarkResult benchmark_train(const config::CfgNode& cfg, int64_t iterations,
                                BenchmarkWindow window, uint64_t seed,
                                const std::string& profile_file) {
  BenchmarkResult result =
      start_result("train", iterations, window, cfg.get_int("SOLVER.IMS_PER_BATCH"));
  const int64_t max_iter = cfg.get_int("SOLVER.MAX_ITER");
  if (iterations > max_iter)
    throw Error("--iters " + std::to_string(iterations) + " runs past SOLVER.MAX_ITER (" +
                std::to_string(max_iter) +
                "), where the LR schedule ends: lower --iters or raise SOLVER.MAX_ITER");
  auto model = build_loaded_model(cfg);
  // Several ranks: rank 0's weights everywhere, each rank its share of the global batch; the
  // Trainer averages the gradients. images_per_iter stays the global batch.
  broadcast_weights_from_main(*model);
  auto optimizer = solver::build_optimizer(cfg, *model);
  for (const at::Tensor& p : optimizer->parameters())
    result.gradient_mb += static_cast<double>(p.numel() * p.element_size()) / 1e6;
  auto scheduler = solver::build_lr_scheduler(cfg, *optimizer);
  auto loader = data::build_detection_train_loader(cfg, distributed::get_rank(),
                                                   distributed::get_world_size(), seed);
  const int64_t macs = training_forward_macs(*model, loader->next_batch());
  // SOLVER.AMP as `detkit train` applies it.
  const solver::AmpOptions amp = solver::amp_options_from_config(cfg);
  solver::GradScaler scaler(amp.loss_scale);
  auto trainer = build_trainer(
      amp, &scaler, model, *optimizer, [&loader] { return loader->next_batch(); }, seed);
  trainer->set_pad_to_global_batch(loader->options().world_size_invariant);
  trainer->register_hook(std::make_shared<LRSchedulerHook>(*scheduler));  // records "lr" first
  trainer->register_hook(std::make_shared<StepTimer>(result, profile_file));
  trainer->train(0, iterations);
  result = summarize(std::move(result));
  result.train_gflops_per_iter = 2.0 * 3.0 * static_cast<double>(macs) / 1e9;
  result.achieved_gflops = result.train_gflops_per_iter / result.seconds_per_iter;
  result.gemm_peak_gflops = measure_gemm_gflops();
  return result;
}

BenchmarkResult benchmark_eval(const config::CfgNode& cfg, int64_t iterations,
                               BenchmarkWindow window, const std::string& profile_file) {
  refuse_many_ranks("eval");
  BenchmarkResult result = start_result("eval", iterations, window, 1);
  const auto names = cfg.get_string_list("DATASETS.TEST");
  if (names.empty()) throw Error("DATASETS.TEST is empty: --task eval needs a dataset");
  auto model = build_loaded_model(cfg);
  model->eval();
  at::InferenceMode inference_mode;
  const solver::AmpOptions amp = solver::amp_options_from_config(cfg);
  // As evaluation in training runs.
  const AutocastGuard autocast(amp.enabled, amp.precision, amp.device);
  auto loader = data::build_detection_test_loader(cfg, names.front());
  if (loader->size() == 0) throw Error("DATASETS.TEST '" + names.front() + "' has no images");
  WindowProfiler profiler(profile_file, window);
  for (int64_t i = 0; i < iterations; ++i) {
    profiler.before_iteration(i);
    auto start = Clock::now();
    auto sample = loader->next();
    if (!sample) {  // a new pass; starting the loader is not the model's time
      loader = data::build_detection_test_loader(cfg, names.front());
      start = Clock::now();
      sample = loader->next();
    }
    auto fetched = Clock::now();
    model->inference({sample->input});
    synchronize_gpu();
    auto done = Clock::now();
    result.iter_seconds.push_back(seconds(done - start));
    result.data_seconds.push_back(seconds(fetched - start));
    log_iteration(result);
  }
  profiler.before_iteration(iterations);
  return summarize(std::move(result));
}

BenchmarkResult benchmark_data(const config::CfgNode& cfg, int64_t iterations,
                               BenchmarkWindow window, uint64_t seed) {
  refuse_many_ranks("data");
  BenchmarkResult result =
      start_result("data", iterations, window, cfg.get_int("SOLVER.IMS_PER_BATCH"));
  auto loader = data::build_detection_train_loader(cfg, /*rank=*/0, /*world_size=*/1, seed);
  for (int64_t i = 0; i < iterations; ++i) {
    auto start = Clock::now();
    auto batch = loader->next_batch();
    double s = seconds(Clock::now() - start);
    result.iter_seconds.push_back(s);
    result.data_seconds.push_back(s);
    log_iteration(result);
  }
  return summarize(std::move(result));
}

}  // namespace detkit::engine
