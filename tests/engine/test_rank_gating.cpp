// Rank awareness in training: what belongs to the whole job (config.yaml, metrics.json,
// checkpoints) is written by rank 0 only, every rank logs to its own file, the in-step seed
// differs between ranks, and a one-process run keeps the seeds it always had.
#include <ATen/Context.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "detkit/config/defaults.h"
#include "detkit/engine/defaults.h"
#include "detkit/engine/trainer.h"
#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"
#include "tests/support/scoped_rank.h"
#include "tests/support/tiny_shapes.h"

namespace detkit::engine {
namespace {

namespace fs = std::filesystem;

TEST(RankGating, OnlyRankZeroWritesTheJobsFiles) {
  testing::TinySetup setup("rank_gating");
  const config::CfgNode tiny = testing::tiny_config(setup, "rank_gating");
  for (int rank : {1, 0}) {
    config::CfgNode cfg = tiny;
    const std::string out = setup.dir.path("out_rank" + std::to_string(rank));
    cfg.merge_from_list({"OUTPUT_DIR", out, "DATASETS.TEST", "()", "SOLVER.MAX_ITER", "3"});
    testing::ScopedRank scoped(rank, 2);
    const uint64_t seed = default_setup(cfg);
    DefaultTrainer trainer(cfg, seed);
    trainer.resume_or_load(false);
    trainer.train();
    const bool main = rank == 0;
    EXPECT_EQ(fs::exists(out + "/config.yaml"), main) << "rank " << rank;
    EXPECT_EQ(fs::exists(out + "/metrics.json"), main) << "rank " << rank;
    EXPECT_EQ(fs::exists(out + "/model_final.pth"), main) << "rank " << rank;
    EXPECT_EQ(fs::exists(out + "/last_checkpoint"), main) << "rank " << rank;
    EXPECT_TRUE(fs::exists(out + (main ? "/log.txt" : "/log.txt.rank1"))) << "rank " << rank;
    EXPECT_GE(scoped.barriers(), 1) << "rank " << rank << " returned without waiting for the others";
  }
}

TEST(RankGating, EvaluationOnRankOneGathersToRankZeroAndReportsNothing) {
  testing::TinySetup setup("rank_gating_eval");
  config::CfgNode cfg = testing::tiny_config(setup, "rank_gating_eval");
  cfg.merge_from_list({"OUTPUT_DIR", setup.dir.path("out_eval")});
  auto model = modeling::build_model(cfg);
  testing::ScopedRank scoped(1, 2);
  const auto results = test(cfg, *model);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results.begin()->second.empty()) << "rank 1 reported AP";
  EXPECT_FALSE(fs::exists(setup.dir.path("out_eval/inference/coco_instances_results.json")))
      << "rank 1 wrote the results file";
  EXPECT_GE(scoped.collectives(), 2) << "rank 1 did not take part in the gather";
}

// World-size invariant batches (the default) continue exactly at another world size, and the log
// says so; Detectron2's sharded stream is re-sharded, with a warning.
TEST(RankGating, ResumingAtAnotherWorldSizeSaysWhatHappensToTheBatches) {
  testing::TinySetup setup("rank_gating_resume");
  config::CfgNode base = testing::tiny_config(setup, "rank_gating_resume");
  base.merge_from_list({"DATASETS.TEST", "()", "SOLVER.MAX_ITER", "2"});
  {
    config::CfgNode cfg = base;
    const std::string out = setup.dir.path("out_resume_invariant");
    cfg.merge_from_list({"OUTPUT_DIR", out});
    {
      testing::ScopedRank scoped(0, 2);
      DefaultTrainer trainer(cfg, 1);
      trainer.resume_or_load(false);
      trainer.train();
    }
    cfg.merge_from_list({"SOLVER.MAX_ITER", "3"});
    default_setup(cfg);
    DefaultTrainer trainer(cfg, 1);
    trainer.resume_or_load(true);
    const std::string log = read_file(out + "/log.txt");
    EXPECT_NE(log.find("was written by a job of 2 ranks and resumes on 1: the global batches "
                       "continue as they would have (DATALOADER.WORLD_SIZE_INVARIANT), now "
                       "sliced over 1 ranks"),
              std::string::npos)
        << log;
    EXPECT_EQ(log.find("re-sharded"), std::string::npos) << log;
  }
  config::CfgNode cfg = base;
  const std::string out = setup.dir.path("out_resume");
  cfg.merge_from_list({"OUTPUT_DIR", out, "DATALOADER.WORLD_SIZE_INVARIANT", "False"});
  {
    testing::ScopedRank scoped(0, 2);  // rank 0 of 2 writes the checkpoints
    DefaultTrainer trainer(cfg, 1);
    trainer.resume_or_load(false);
    trainer.train();
  }
  const std::string warning = "was written by a job of 2 ranks and resumes on 1: the training "
                              "sampler is re-sharded over 1 ranks, so from iteration 2";
  cfg.merge_from_list({"SOLVER.MAX_ITER", "3"});
  default_setup(cfg);  // log.txt
  {
    DefaultTrainer trainer(cfg, 1);
    trainer.resume_or_load(true);
  }
  EXPECT_NE(read_file(out + "/log.txt").find(warning), std::string::npos) << read_file(out + "/log.txt");
  // The same world size: no warning.
  {
    testing::ScopedRank scoped(0, 2);
    DefaultTrainer trainer(cfg, 1);
    trainer.resume_or_load(true);
    trainer.train();  // its checkpoints say 2 ranks again
  }
  fs::remove(out + "/log.txt");
  {
    testing::ScopedRank scoped(0, 2);
    default_setup(cfg);
    DefaultTrainer trainer(cfg, 1);
    trainer.resume_or_load(true);
  }
  const std::string log = read_file(out + "/log.txt");
  EXPECT_NE(log.find("Resuming from"), std::string::npos) << log;
  EXPECT_EQ(log.find("re-sharded"), std::string::npos) << log;
}

TEST(RankGating, OnlyRankZeroMakesTheBuiltInDatasetAndTheOthersWait) {
  testing::TempDir dir("rank_gating_shapes");
  setenv("DETKIT_DATASETS", dir.path("datasets").c_str(), 1);
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_list({"DATASETS.TRAIN", "('shapes_train',)", "DATASETS.TEST", "()"});
  {
    testing::ScopedRank scoped(1, 2);
    ensure_builtin_datasets(cfg);
    EXPECT_FALSE(fs::exists(dir.path("datasets/shapes"))) << "rank 1 made the dataset";
    EXPECT_EQ(scoped.barriers(), 1);
  }
  unsetenv("DETKIT_DATASETS");
}

TEST(RankGating, ANegativeSeedIsRankZerosOnEveryRank) {
  testing::TinySetup setup("rank_gating_seed");
  config::CfgNode cfg = testing::tiny_config(setup, "rank_gating_seed");
  cfg.merge_from_list({"SEED", "-1"});
  testing::ScopedRank scoped(1, 2);
  default_setup(cfg);
  EXPECT_EQ(scoped.collectives(), 1);  // the seed came from rank 0's broadcast
  cfg.merge_from_list({"SEED", "5"});
  EXPECT_EQ(default_setup(cfg), 5u);
  EXPECT_EQ(scoped.collectives(), 1);  // a set SEED is shared as it is
}

TEST(RankGating, DefaultTrainerScalesAConfigWrittenForAnotherWorldSize) {
  testing::TinySetup setup("rank_gating_scale");
  config::CfgNode cfg = testing::tiny_config(setup, "rank_gating_scale");
  // Written for 2 workers with 2 images in all; run by 1: 1 image, half the LR, twice the steps.
  cfg.merge_from_list({"DATASETS.TEST", "()", "SOLVER.REFERENCE_WORLD_SIZE", "2"});
  DefaultTrainer trainer(cfg, 1);
  EXPECT_EQ(trainer.config().get_int("SOLVER.IMS_PER_BATCH"), 1);
  EXPECT_DOUBLE_EQ(trainer.config().get_float("SOLVER.BASE_LR"), 0.005);
  EXPECT_EQ(trainer.config().get_int("SOLVER.MAX_ITER"), 12);
  EXPECT_EQ(trainer.config().get_int("SOLVER.REFERENCE_WORLD_SIZE"), 1);
}

TEST(RankGating, CudnnBenchmarkIsApplied) {
  testing::TinySetup setup("rank_gating_cudnn");
  config::CfgNode cfg = testing::tiny_config(setup, "rank_gating_cudnn");
  cfg.merge_from_list({"CUDNN_BENCHMARK", "True"});
  default_setup(cfg);
  EXPECT_TRUE(at::globalContext().benchmarkCuDNN());
  cfg.merge_from_list({"CUDNN_BENCHMARK", "False"});
  default_setup(cfg);
  EXPECT_FALSE(at::globalContext().benchmarkCuDNN());
}

TEST(RankGating, TheInStepSeedDependsOnTheRankAndRankZeroKeepsItsOldSeed) {
  // Values of detkit's iteration_seed(seed, iter) before ranks existed.
  EXPECT_EQ(iteration_seed(7, 0, 0), 7191089600892374487ull);
  EXPECT_EQ(iteration_seed(7, 5, 0), 4601199455465548305ull);
  EXPECT_EQ(iteration_seed(123456789, 80000, 0), 8790611848270969458ull);
  std::set<uint64_t> seen;
  for (int rank = 0; rank < 8; ++rank)
    for (int64_t iter = 0; iter < 100; ++iter) seen.insert(iteration_seed(7, iter, rank));
  EXPECT_EQ(seen.size(), 800u);  // no two (iteration, rank) pairs share a seed
}

}  // namespace
}  // namespace detkit::engine
