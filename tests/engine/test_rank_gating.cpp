// Rank awareness in training: what belongs to the whole job (config.yaml, metrics.json,
// checkpoints) is written by rank 0 only, every rank logs to its own file, the in-step seed
// differs between ranks, and a one-process run keeps the seeds it always had.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "detkit/engine/defaults.h"
#include "detkit/engine/trainer.h"
#include "detkit/utils/error.h"
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

TEST(RankGating, EvaluatingOnManyRanksIsRefusedUntilPredictionsAreGathered) {
  testing::TinySetup setup("rank_gating_eval");
  const config::CfgNode cfg = testing::tiny_config(setup, "rank_gating_eval");
  auto model = modeling::build_model(cfg);
  testing::ScopedRank scoped(1, 2);
  try {
    test(cfg, *model);
    ADD_FAILURE() << "evaluated on rank 1 of 2";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1: evaluating DATASETS.TEST on 2 ranks"),
              std::string::npos)
        << e.what();
  }
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
