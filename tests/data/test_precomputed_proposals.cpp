// Precomputed proposals (MODEL.LOAD_PROPOSALS): the proposal table of a dataset (sorted best
// first; a file that misses an image refused naming both), Detectron2's transform_proposals (the
// boxes through the resize and flip, clipped, empty ones dropped, the top k kept), and the loaders
// handing each image its proposals.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "detkit/config/defaults.h"
#include "detkit/data/coco/coco.h"
#include "detkit/data/detection_dataset.h"
#include "detkit/data/loader.h"
#include "detkit/data/precomputed_proposals.h"
#include "tests/support/error_of.h"
#include "tests/support/temp_dir.h"

namespace detkit::data {
namespace {

const std::string kTinyVal =
    std::string(DETKIT_SHARED_DIR) + "/data/coco_tiny/annotations/instances_val2017.json";

TEST(TransformProposals, BoxesFollowTheResizeAndFlipAreClippedFilteredAndCut) {
  TransformList transforms;
  transforms.push_back(std::make_shared<ResizeTransform>(100, 200, 50, 100));  // h, w -> half
  transforms.push_back(std::make_shared<HFlipTransform>(100));
  ImageProposals p;
  p.boxes = at::tensor({10.f,  20.f, 50.f,  60.f,    // inside
                        150.f, 0.f,  250.f, 40.f,    // past the right edge: clipped
                        -30.f, 10.f, -10.f, 30.f,    // left of the image: empty after clipping
                        60.f,  60.f, 60.f,  80.f,    // zero width: empty
                        0.f,   0.f,  200.f, 100.f})  // the whole image
                .view({5, 4});
  p.objectness_logits = at::tensor({5.f, 4.f, 3.f, 2.f, 1.f});
  const auto all = transform_proposals(p, transforms, 50, 100, 0);
  const at::Tensor want = at::tensor({100 - 25.f, 10.f, 100 - 5.f, 30.f,  // x -> 100 - x / 2
                                      0.f, 0.f, 25.f, 20.f,               // clipped at x 100
                                      0.f, 0.f, 100.f, 50.f})
                              .view({3, 4});
  EXPECT_TRUE(at::equal(all.boxes("proposal_boxes").tensor(), want))
      << all.boxes("proposal_boxes").tensor();
  EXPECT_TRUE(at::equal(all.tensor("objectness_logits"), at::tensor({5.f, 4.f, 1.f})));
  EXPECT_EQ(all.image_height(), 50);
  // The top k of what is left, after the empty ones went.
  const auto top2 = transform_proposals(p, transforms, 50, 100, 2);
  EXPECT_EQ(top2.size(), 2);
  EXPECT_TRUE(at::equal(top2.tensor("objectness_logits"), at::tensor({5.f, 4.f})));
}

TEST(ProposalTable, SortsEachImageBestFirstAndRefusesAFileMissingAnImage) {
  if (!std::filesystem::exists(kTinyVal)) GTEST_SKIP() << "shared data absent: " << kTinyVal;
  auto part = std::make_shared<const CocoDataset>(load_coco_json(kTinyVal, ""));
  const DetectionDataset dataset({part}, {"coco_tiny_val"});
  testing::TempDir dir("proposal_table");
  std::vector<ImageProposals> proposals;
  for (size_t i = 0; i < part->num_images(); ++i) {
    proposals.push_back({part->image(i).id,
                         at::tensor({0.f, 0.f, 5.f, 5.f, 1.f, 1.f, 9.f, 9.f}).view({2, 4}),
                         at::tensor({-1.f, 2.f})});
  }
  write_proposal_file(dir.path("all.pkl"), proposals);
  const ProposalTable table(dataset, {dir.path("all.pkl")});
  const ImageProposals& first = table.of(*part, part->image(0).id);
  EXPECT_TRUE(at::equal(first.objectness_logits, at::tensor({2.f, -1.f})));
  EXPECT_TRUE(at::equal(first.boxes[0], at::tensor({1.f, 1.f, 9.f, 9.f})));

  const int64_t missing_id = proposals.back().image_id;
  proposals.pop_back();
  write_proposal_file(dir.path("short.pkl"), proposals);
  const std::string e = testing::error_of([&] { ProposalTable(dataset, {dir.path("short.pkl")}); });
  testing::expect_contains(e, "short.pkl' has no proposals for image id " +
                                  std::to_string(missing_id) + " of coco_tiny_val");
  testing::expect_contains(testing::error_of([&] {
                             ProposalTable(dataset, {dir.path("all.pkl"), dir.path("all.pkl")});
                           }),
                           "2 proposal files for 1 datasets");
}

TEST(ProposalTable, TheConfigNamesOneFilePerDataset) {
  if (!std::filesystem::exists(kTinyVal)) GTEST_SKIP() << "shared data absent: " << kTinyVal;
  auto part = std::make_shared<const CocoDataset>(load_coco_json(kTinyVal, ""));
  const DetectionDataset dataset({part}, {"coco_2017_val"});
  config::CfgNode cfg = config::get_cfg();
  EXPECT_EQ(proposal_table_from_config(cfg, dataset, true), nullptr);  // LOAD_PROPOSALS off
  cfg.merge_from_list({"MODEL.LOAD_PROPOSALS", "True", "DATASETS.TRAIN", "('coco_2017_val',)",
                       "DATASETS.TEST", "('a', 'coco_2017_val')", "DATASETS.PROPOSAL_FILES_TEST",
                       "('a.pkl',)"});
  testing::expect_contains(
      testing::error_of([&] { proposal_table_from_config(cfg, dataset, false, "coco_2017_val"); }),
      "DATASETS.PROPOSAL_FILES_TEST must name one proposal file per dataset of DATASETS.TEST (2), "
      "got 1");
  testing::expect_contains(
      testing::error_of([&] { proposal_table_from_config(cfg, dataset, true); }),
      "DATASETS.PROPOSAL_FILES_TRAIN must name one proposal file per dataset of DATASETS.TRAIN");
}

}  // namespace
}  // namespace detkit::data
