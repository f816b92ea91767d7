// Panoptic FPN (R-50-FPN Mask R-CNN + SemSegFPNHead) against Detectron2 itself
// (../shared/fixtures/detectron2_panoptic): the fixture's weights and images give its FPN
// features, the stride-4 semantic logits, the output-size sem_seg, the detections and masks,
// the combined panoptic map with its segments_info, the six training losses (loss_sem_seg among
// them) and the recorded gradients (five of the semantic head's).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "detkit/modeling/meta_arch/panoptic_fpn.h"
#include "detkit/modeling/meta_arch/semantic_segmentor.h"
#include "detkit/structures/mask_ops.h"
#include "detkit/utils/error.h"
#include "tests/modeling/meta_arch/parity_checks.h"
#include "tests/modeling/meta_arch/zoo_fixture.h"

namespace detkit::modeling {
namespace {

using structures::Instances;
using testing::ZooFixture;

struct PanopticFixture : testing::ZooFixture {
  PanopticFixture() : ZooFixture("detectron2_panoptic") {}

  /// The two images with Detectron2's training targets: instances whose classes are coco_tiny's
  /// supercategory groups (outputs.json's thing_class_of_supercategory), and the mapped
  /// semantic labels.
  std::vector<ModelInput> training_batch() {
    std::vector<ModelInput> inputs = batch(true);
    const nlohmann::json coco = nlohmann::json::parse(std::ifstream(
        std::string(DETKIT_SHARED_DIR) + "/data/coco_tiny/annotations/instances_val2017.json"));
    std::map<int64_t, std::string> supercategory;
    for (const auto& c : coco["categories"]) supercategory[c["id"]] = c["supercategory"];
    std::vector<int64_t> group_of_contiguous;  // fixture_targets numbers the sorted ids
    for (const auto& [id, super] : supercategory)
      group_of_contiguous.push_back(meta["thing_class_of_supercategory"].at(super));
    const at::Tensor groups = at::tensor(group_of_contiguous);
    for (int i = 0; i < 2; ++i) {
      Instances& t = *inputs[i].instances;
      t.set("gt_classes", groups.index_select(0, t.tensor("gt_classes")));
      inputs[i].sem_seg = fx.outputs().at("train_gt_sem_seg_" + std::to_string(i)).to(at::kLong);
    }
    return inputs;
  }
};

/// The (H, W) bool map of a compressed RLE string.
at::Tensor decode_rle(const std::string& counts, int64_t height, int64_t width) {
  auto pixels = mask_ops::decode(mask_ops::from_string(counts, height, width));
  return at::from_blob(pixels.data(), {height, width}, at::kByte).to(at::kBool);
}

TEST(PanopticFPNParity, FeaturesAndSemanticLogitsMatchDetectron2) {
  PanopticFixture f;
  REQUIRE_FIXTURE(f);
  auto model = f.model<PanopticFPN>();
  model->eval();
  at::NoGradGuard no_grad;
  const auto batch = f.batch(false);
  const structures::ImageList images = model->preprocess_image(batch);
  const at::Tensor want_shape = f.fx.outputs().at("padded_batch_shape");
  EXPECT_TRUE(at::equal(at::tensor(images.tensor().sizes().vec()), want_shape));
  const FeatureMap features = model->backbone()->forward(images.tensor());
  for (const char* level : {"p2", "p3", "p4", "p5", "p6"}) {
    const at::Tensor want = f.fx.outputs().at(std::string("features_") + level + "_first4ch");
    const double d = testing::max_abs_diff(features.at(level).narrow(1, 0, 4).contiguous(), want);
    std::cout << "[ detectron2 parity ] panoptic " << level << " features: max abs diff " << d
              << "\n";
    EXPECT_LT(d, 1e-4);
  }
  const at::Tensor logits = model->sem_seg_head()->layers(features);
  const at::Tensor want = f.fx.outputs().at("sem_seg_logits_stride4");
  const double d = testing::max_abs_diff(logits, want);
  std::cout << "[ detectron2 parity ] panoptic stride-4 semantic logits: max abs diff " << d
            << " (values up to " << want.abs().max().item<double>() << ")\n";
  EXPECT_LT(d, 1e-4);
}

TEST(PanopticFPNParity, InstancesSemSegAndPanopticSegMatchDetectron2) {
  PanopticFixture f;
  REQUIRE_FIXTURE(f);
  auto model = f.model<PanopticFPN>();
  model->eval();
  at::NoGradGuard no_grad;
  const auto batch = f.batch(false);
  const auto outputs = model->outputs(batch);
  ASSERT_EQ(outputs.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const std::string s = std::to_string(i);
    const auto& image = f.meta["images"][i];
    const int64_t h = image["height"], w = image["width"];
    const auto& out = outputs[i];
    ASSERT_TRUE(out.instances && out.sem_seg && out.panoptic_seg);
    // Instances.
    const Instances& r = *out.instances;
    const auto m = testing::match_fixture_detections(r, f.fx.outputs(), i);
    const int64_t mask_differing = testing::mask_pixels_differing(
        r.tensor("pred_masks"), image["pred_mask_rles"], m.partner, h, w);
    EXPECT_EQ(m.unexplained, 0) << "image " << i;
    EXPECT_LT(double(mask_differing), 1e-3 * double(r.tensor("pred_masks").numel()));
    // sem_seg: (4, H, W) logits at every 8th row and column, and its argmax per class.
    const at::Tensor& sem_seg = *out.sem_seg;
    ASSERT_EQ(sem_seg.sizes(), at::IntArrayRef({4, h, w}));
    const at::Tensor want_every8 = f.fx.outputs().at("sem_seg_every8_" + s);
    const double ds = testing::max_abs_diff(
        sem_seg.slice(1, 0, h, 8).slice(2, 0, w, 8).contiguous(), want_every8);
    const at::Tensor argmax = sem_seg.argmax(0);
    int64_t argmax_differing = 0;
    for (int64_t c = 0; c < 4; ++c)
      argmax_differing +=
          (argmax.eq(c) != decode_rle(image["sem_seg_argmax_rles"][c], h, w)).sum().item<int64_t>();
    // panoptic_seg: segments_info as Detectron2's (instance ids through the detection pairing),
    // each segment's pixels, and the void.
    const auto& segments = out.panoptic_seg->segments;
    const auto& want_segments = image["segments_info"];
    ASSERT_EQ(segments.size(), want_segments.size()) << "image " << i;
    int64_t segment_differing = 0;
    for (size_t k = 0; k < segments.size(); ++k) {
      const auto& want_k = want_segments[k];
      const auto& got = segments[k];
      EXPECT_EQ(got.id, want_k["id"].get<int>());
      EXPECT_EQ(got.isthing, want_k["isthing"].get<bool>());
      EXPECT_EQ(got.category_id, want_k["category_id"].get<int64_t>());
      if (got.isthing) {
        EXPECT_NEAR(got.score, want_k["score"].get<double>(), 1e-4);
        EXPECT_EQ(got.instance_id, m.partner.at(want_k["instance_id"].get<size_t>()))
            << "image " << i << " segment " << got.id;
      } else {
        EXPECT_NEAR(double(got.area), want_k["area"].get<double>(), 5) << "segment " << got.id;
      }
      const at::Tensor want_pixels = decode_rle(image["panoptic_seg_rles"][k], h, w);
      segment_differing += (out.panoptic_seg->ids.eq(got.id) != want_pixels).sum().item<int64_t>();
    }
    const int64_t void_area = out.panoptic_seg->ids.eq(0).sum().item<int64_t>();
    std::cout << "[ detectron2 parity ] panoptic image " << i << ": " << m.summary()
              << "; mask pixels differing " << mask_differing << "; sem_seg logits max abs diff "
              << ds << ", argmax pixels differing " << argmax_differing << "; " << segments.size()
              << " segments, pixels differing " << segment_differing << ", void " << void_area
              << " vs " << image["panoptic_void_area"] << "\n";
    EXPECT_LT(ds, 1e-4);
    EXPECT_LE(double(argmax_differing), 1e-4 * double(h * w));
    EXPECT_LE(double(segment_differing), 1e-3 * double(h * w));
  }
}

TEST(PanopticFPNParity, TrainingLossesAndGradientsMatchDetectron2) {
  PanopticFixture f;
  REQUIRE_FIXTURE(f);
  auto model = f.model<PanopticFPN>();
  model->train();
  auto inputs = f.training_batch();
  for (int i = 0; i < 2; ++i) {
    const std::string s = std::to_string(i);
    EXPECT_LT(testing::max_abs_diff(inputs[i].instances->boxes("gt_boxes").tensor(),
                                    f.fx.outputs().at("train_gt_boxes_" + s)),
              1e-4);
    EXPECT_TRUE(at::equal(inputs[i].instances->tensor("gt_classes"),
                          f.fx.outputs().at("train_gt_classes_" + s)));
  }
  testing::CapturedScalars scalars;
  const auto losses = model->losses(inputs);
  testing::expect_scalars_match(scalars.values, f.meta["train_event_scalars"], "panoptic");
  EXPECT_EQ(losses.size(), 6u);
  EXPECT_EQ(losses.count("loss_sem_seg"), 1u);
  testing::expect_losses_match(losses, f.meta["train_losses"], "panoptic").backward();
  EXPECT_EQ(testing::expect_gradients_match(*model, f.fx.outputs(), "panoptic"), 11);
}

// SemanticSegmentor is Panoptic FPN's backbone and semantic head alone: with the fixture's
// weights for those two (the R-CNN ones left unused), its sem_seg and loss_sem_seg are
// Detectron2's.
TEST(SemanticSegmentorParity, SemSegAndLossMatchDetectron2sPanopticFPN) {
  PanopticFixture f;
  REQUIRE_FIXTURE(f);
  config::CfgNode cfg = f.fx.config();
  cfg.merge_from_list({"MODEL.META_ARCHITECTURE", "SemanticSegmentor"});
  auto model = std::dynamic_pointer_cast<SemanticSegmentor>(build_model(cfg));
  ASSERT_NE(model, nullptr);
  const auto report = checkpoint::load_state_dict(*model, f.fx.weights());
  EXPECT_TRUE(report.missing.empty()) << report.summary();
  for (const auto& name : report.unexpected)
    EXPECT_TRUE(name.rfind("proposal_generator.", 0) == 0 || name.rfind("roi_heads.", 0) == 0)
        << name;
  model->eval();
  {
    at::NoGradGuard no_grad;
    const auto outputs = model->outputs(f.batch(false));
    for (int i = 0; i < 2; ++i) {
      const auto& image = f.meta["images"][i];
      const int64_t h = image["height"], w = image["width"];
      ASSERT_TRUE(outputs[i].sem_seg && !outputs[i].instances && !outputs[i].panoptic_seg);
      const double d = testing::max_abs_diff(
          outputs[i].sem_seg->slice(1, 0, h, 8).slice(2, 0, w, 8).contiguous(),
          f.fx.outputs().at("sem_seg_every8_" + std::to_string(i)));
      std::cout << "[ detectron2 parity ] SemanticSegmentor image " << i
                << ": sem_seg max abs diff " << d << "\n";
      EXPECT_LT(d, 1e-4);
    }
    EXPECT_THROW(model->inference(f.batch(false)), Error);  // no instances to give
  }
  model->train();
  const auto losses = model->losses(f.training_batch());
  ASSERT_EQ(losses.size(), 1u);
  const double got = losses.at("loss_sem_seg").item<double>();
  const double want = f.meta["train_losses"]["loss_sem_seg"];
  std::cout << "[ detectron2 parity ] SemanticSegmentor loss_sem_seg " << got << " vs " << want
            << "\n";
  EXPECT_LT(std::abs(got - want), 1e-4 * want);
}

}  // namespace
}  // namespace detkit::modeling
