// Box-proposal recall against Detectron2's COCOEvaluator (../shared/fixtures/detectron2_rpn:
// `proposal_eval`, its AR@100 ... ARl@1000 for the RPN's own proposals and for a mixed set that
// covers the ground truth at every area), through COCOEvaluator as inference feeds it, and the
// proposal file it writes.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "detkit/checkpoint/state_dict.h"
#include "detkit/data/coco/coco.h"
#include "detkit/evaluation/box_proposals.h"
#include "detkit/evaluation/coco_evaluator.h"
#include "tests/support/error_of.h"
#include "tests/support/temp_dir.h"

namespace detkit::evaluation {
namespace {

const std::string kRpnFixtureDir = std::string(DETKIT_SHARED_DIR) + "/fixtures/detectron2_rpn/";
const std::string kRpnGroundTruth =
    std::string(DETKIT_SHARED_DIR) + "/data/coco_tiny/annotations/instances_val2017.json";

struct RpnEvalFixture {
  std::shared_ptr<const data::CocoDataset> dataset;
  checkpoint::TensorDict outputs;
  nlohmann::json meta;
  bool present() const { return std::filesystem::exists(kRpnFixtureDir + "outputs.json"); }
  RpnEvalFixture() {
    if (!present()) return;
    dataset = std::make_shared<const data::CocoDataset>(data::load_coco_json(kRpnGroundTruth, ""));
    outputs = checkpoint::load_plain_tensor_dict(kRpnFixtureDir + "outputs.pth");
    meta = nlohmann::json::parse(std::ifstream(kRpnFixtureDir + "outputs.json"));
  }
  // A ProposalNetwork's output for image i from the fixture's tensors `<prefix>_boxes_i`.
  structures::Instances output(const std::string& prefix, int i) const {
    const auto& image = meta["images"][i];
    structures::Instances out(image["height"], image["width"]);
    const std::string n = std::to_string(i);
    out.set("proposal_boxes", structures::Boxes(outputs.at(prefix + "_boxes_" + n)));
    out.set("objectness_logits", outputs.at(prefix + "_logits_" + n));
    return out;
  }
};

TEST(BoxProposals, AverageRecallEqualsDetectron2sCOCOEvaluator) {
  RpnEvalFixture f;
  if (!f.present()) GTEST_SKIP() << "fixture absent: " << kRpnFixtureDir;
  for (const auto& [prefix, set] :
       {std::pair{"proposal", "model_proposals"}, {"eval_proposal", "mixed_proposals"}}) {
    testing::TempDir dir("box_proposals");
    COCOEvaluator evaluator(f.dataset, {IouType::Bbox}, dir.path());
    for (int i = 0; i < 2; ++i)
      evaluator.process(f.meta["images"][i]["image_id"], f.output(prefix, i));
    const auto reports = evaluator.evaluate();
    ASSERT_EQ(reports.size(), 1u);
    const auto results = detectron2_results(reports.at("box_proposals"));
    const auto& want = f.meta["proposal_eval"][set];
    ASSERT_EQ(results.size(), want.size()) << set;
    double largest = 0;
    for (const auto& [name, value] : want.items()) {
      ASSERT_EQ(results.count(name), 1u) << name;
      largest = std::max(largest, std::abs(results.at(name) - value.get<double>()));
      EXPECT_NEAR(results.at(name), value.get<double>(), 1e-4) << set << " " << name;
    }
    std::cout << "[ detectron2 parity ] box_proposals of " << set << ": AR@100 "
              << results.at("AR@100") << ", AR@1000 " << results.at("AR@1000")
              << "; largest difference to Detectron2 " << largest << " (x100 scale)\n";
    // The proposal file holds what was evaluated.
    const auto file = data::read_proposal_file(dir.path("box_proposals.pkl"));
    ASSERT_EQ(file.size(), 2u);
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(file[i].image_id, f.meta["images"][i]["image_id"].get<int64_t>());
      EXPECT_TRUE(at::equal(file[i].boxes, f.output(prefix, i).boxes("proposal_boxes").tensor()));
    }
  }
}

TEST(BoxProposals, ImagesWithoutProposalsOrGroundTruthAreSkippedAsDetectron2Does) {
  if (!std::filesystem::exists(kRpnGroundTruth))
    GTEST_SKIP() << "shared data absent: " << kRpnGroundTruth;
  const data::CocoDataset ds = data::load_coco_json(kRpnGroundTruth, "");
  // Image 0's ground truth as proposals, image 1 with none: image 1's boxes are not counted.
  std::vector<float> boxes;
  for (data::AnnotationView a : ds.annotations_of(0)) {
    if (a.iscrowd()) continue;
    const auto b = a.bbox();
    for (double v : {b[0], b[1], b[0] + b[2], b[1] + b[3]}) boxes.push_back(static_cast<float>(v));
  }
  ASSERT_FALSE(boxes.empty());
  const auto n = static_cast<int64_t>(boxes.size() / 4);
  std::vector<ImageProposals> proposals = {
      {ds.image(0).id, at::tensor(boxes).view({n, 4}), at::arange(n, at::kFloat)},
      {ds.image(1).id, at::zeros({0, 4}), at::zeros({0})}};
  EXPECT_DOUBLE_EQ(proposal_average_recall(ds, proposals, 0, 1e10, 1000), 1.0);
  // The top proposal only: one box of n recalled.
  EXPECT_NEAR(proposal_average_recall(ds, proposals, 0, 1e10, 1), 1.0 / n, 1e-6);
  proposals[0].image_id = 999999999;
  testing::expect_contains(
      testing::error_of([&] { proposal_average_recall(ds, proposals, 0, 1e10, 100); }),
      "image id 999999999 is not in the dataset");
}

}  // namespace
}  // namespace detkit::evaluation
