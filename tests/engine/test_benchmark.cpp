// detkit benchmark: the window arithmetic, the three tasks on a tiny model, and the CLI's JSON.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <numeric>

#include "detkit/config/defaults.h"
#include "detkit/data/catalog.h"
#include "detkit/engine/benchmark.h"
#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"
#include "tests/support/scoped_rank.h"
#include "tests/support/tiny_shapes.h"

namespace detkit::engine {
namespace {

using testing::tiny_config;

double window_mean(const std::vector<double>& v, BenchmarkWindow w) {
  return std::accumulate(v.begin() + w.begin, v.begin() + w.end, 0.0) / (w.end - w.begin);
}

// The figures are the window's means of the per-iteration times.
void expect_window_figures(const BenchmarkResult& r, int64_t iterations, BenchmarkWindow w) {
  ASSERT_EQ(r.iter_seconds.size(), static_cast<size_t>(iterations));
  ASSERT_EQ(r.data_seconds.size(), static_cast<size_t>(iterations));
  EXPECT_DOUBLE_EQ(r.seconds_per_iter, window_mean(r.iter_seconds, w));
  EXPECT_DOUBLE_EQ(r.data_seconds_per_iter, window_mean(r.data_seconds, w));
  EXPECT_DOUBLE_EQ(r.images_per_second, r.images_per_iter / r.seconds_per_iter);
  for (size_t i = 0; i < r.iter_seconds.size(); ++i) {
    EXPECT_GT(r.iter_seconds[i], 0.0);
    EXPECT_LE(r.data_seconds[i], r.iter_seconds[i]);
  }
  EXPECT_GT(r.peak_rss_mb, 50.0);
}

TEST(BenchmarkWindow, ParsesAndRejects) {
  BenchmarkWindow w = parse_window("3:10");
  EXPECT_EQ(w.begin, 3);
  EXPECT_EQ(w.end, 10);
  EXPECT_EQ(parse_window("0:1").end, 1);
  for (const char* bad : {"10:3", "5:5", "3", "a:b", "-1:4", "3:10:2", ""}) {
    try {
      parse_window(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--window must be A:B"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(check_window(10, {3, 10}));
  try {
    check_window(8, {3, 10});
    ADD_FAILURE() << "a window past --iters was accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "--window 3:10 ends after the last iteration (--iters 8): lower the window or "
                 "raise --iters");
  }
  EXPECT_THROW(check_window(0, {0, 1}), Error);
}

TEST(Benchmark, TrainTimesEveryStepAndCountsFlops) {
  testing::TinySetup s("bench_train");
  config::CfgNode cfg = tiny_config(s, "bench_train");
  BenchmarkResult r = benchmark_train(cfg, 4, {1, 4}, 7);
  EXPECT_EQ(r.task, "train");
  EXPECT_EQ(r.images_per_iter, 2);
  expect_window_figures(r, 4, {1, 4});
  EXPECT_GT(r.train_gflops_per_iter, 0.0);
  EXPECT_DOUBLE_EQ(r.achieved_gflops, r.train_gflops_per_iter / r.seconds_per_iter);
  EXPECT_GT(r.gemm_peak_gflops, 0.0);
  // The config's schedule, warm-up included (BASE_LR 0.01, WARMUP_ITERS 2, factor 0.001,
  // MAX_ITER 6), as detkit train applies it: not BASE_LR from the first step.
  const std::vector<double> want = {1e-5, 0.01 * (0.001 * 0.5 + 0.5), 0.01, 0.01};
  ASSERT_EQ(r.learning_rates.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(r.learning_rates[i], want[i], 1e-15) << "iteration " << i;
  ASSERT_EQ(r.total_losses.size(), 4u);
  for (double loss : r.total_losses) EXPECT_TRUE(std::isfinite(loss) && loss > 0) << loss;
}

TEST(Benchmark, TrainRefusesToRunPastTheSchedule) {
  testing::TinySetup s("bench_past");
  config::CfgNode cfg = tiny_config(s, "bench_past");  // SOLVER.MAX_ITER 6
  try {
    benchmark_train(cfg, 7, {1, 4}, 7);
    ADD_FAILURE() << "ran past SOLVER.MAX_ITER";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--iters 7 runs past SOLVER.MAX_ITER (6)"),
              std::string::npos)
        << e.what();
  }
}

// The trace covers the window's iterations only: 2 of 4 training steps, 3 of 5 inference images.
TEST(Benchmark, ProfileTracesTheWindow) {
  testing::TinySetup s("bench_profile");
  config::CfgNode cfg = tiny_config(s, "bench_profile");
  auto count = [](const std::string& file, const std::string& op) {
    int64_t n = 0;
    for (const auto& event : nlohmann::json::parse(read_file(file)))
      n += event.value("name", "") == op;
    return n;
  };
  const std::string train = s.dir.path("train_trace.json"), eval = s.dir.path("eval_trace.json");
  benchmark_train(cfg, 4, {1, 3}, 7, train);
  benchmark_eval(cfg, 5, {2, 5}, eval);
  // Each forward max-pools twice (the ResNet stem and FPN's p6): count forwards by those.
  EXPECT_EQ(count(train, "aten::max_pool2d"), 2 * 2);
  EXPECT_EQ(count(eval, "aten::max_pool2d"), 3 * 2);
  EXPECT_GT(count(train, "detkit::_multilevel_roi_align_backward"), 0);  // backward is traced too
  EXPECT_EQ(count(eval, "detkit::_multilevel_roi_align_backward"), 0);
}

TEST(Benchmark, EvalCyclesThroughTheTestSet) {
  testing::TinySetup s("bench_eval");
  config::CfgNode cfg = tiny_config(s, "bench_eval");
  BenchmarkResult r = benchmark_eval(cfg, 5, {2, 5});  // 2 val images: 2.5 passes
  EXPECT_EQ(r.task, "eval");
  EXPECT_EQ(r.images_per_iter, 1);
  expect_window_figures(r, 5, {2, 5});
}

TEST(Benchmark, DataTimesTheLoaderAlone) {
  testing::TinySetup s("bench_data");
  config::CfgNode cfg = tiny_config(s, "bench_data");
  BenchmarkResult r = benchmark_data(cfg, 6, {2, 6}, 7);
  EXPECT_EQ(r.task, "data");
  expect_window_figures(r, 6, {2, 6});
  EXPECT_EQ(r.iter_seconds, r.data_seconds);
}

TEST(Benchmark, EvalAndDataRefuseSeveralRanks) {
  testing::TinySetup s("bench_ranks");
  config::CfgNode cfg = tiny_config(s, "bench_ranks");
  testing::ScopedRank rank(1, 2);
  auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([&] { benchmark_eval(cfg, 2, {0, 2}); }),
            "rank 1: benchmark --task eval runs in one process; only --task train runs on 2 ranks");
  EXPECT_EQ(message([&] { benchmark_data(cfg, 2, {0, 2}, 7); }),
            "rank 1: benchmark --task data runs in one process; only --task train runs on 2 ranks");
}

TEST(Benchmark, EvalWithoutTestDatasetIsNamed) {
  testing::TinySetup s("bench_notest");
  config::CfgNode cfg = tiny_config(s, "bench_notest");
  cfg.merge_from_list({"DATASETS.TEST", "()"});
  EXPECT_THROW(
      {
        try {
          benchmark_eval(cfg, 2, {0, 2});
        } catch (const Error& e) {
          EXPECT_STREQ(e.what(), "DATASETS.TEST is empty: --task eval needs a dataset");
          throw;
        }
      },
      Error);
}

// The CLI prints one JSON object on stdout with the documented fields.
TEST(BenchmarkCli, JsonHasTheDocumentedFields) {
  testing::TinySetup s("bench_cli");
  const std::string out = s.dir.path("stdout.json");
  const std::string command = "DETKIT_DATASETS='" + s.dir.path("datasets") + "' '" + DETKIT_BINARY +
                              "' --num-threads 1 benchmark --config-file '" + s.config +
                              "' --task data --window 1:3 --json OUTPUT_DIR '" + s.dir.path("out") +
                              "' > '" + out + "' 2> '" + s.dir.path("stderr.txt") + "'";
  ASSERT_EQ(std::system(command.c_str()), 0) << read_file(s.dir.path("stderr.txt"));
  nlohmann::json j = nlohmann::json::parse(read_file(out));
  for (const char* key : {"images_per_second", "seconds_per_iter", "data_seconds_per_iter",
                          "peak_rss_mb", "iter_seconds", "window", "num_threads", "num_workers"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["task"], "data");
  EXPECT_EQ(j["iterations"], 3);
  EXPECT_EQ(j["num_threads"], 1);
  EXPECT_EQ(j["window"], nlohmann::json({1, 3}));
  EXPECT_GT(j["images_per_second"].get<double>(), 0.0);
}

}  // namespace
}  // namespace detkit::engine
