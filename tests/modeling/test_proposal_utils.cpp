// detkit::modeling::find_top_rpn_proposals: a hand-worked image (top-k, clipping, small boxes,
// NMS per level, post-NMS cut), several images, non-finite predictions, empty input, and parity
// with Detectron2's procedure (re-written in Python on torchvision's batched_nms).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <iostream>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "detkit/modeling/proposal_utils.h"
#include "detkit/utils/error.h"
#include "tests/parity/oracle.h"
#include "tests/support/tensor_compare.h"

using detkit::testing::max_abs_diff;

namespace detkit::modeling {
namespace {

using structures::Instances;

// (1, K, 4) boxes and (1, K) logits of one image.
at::Tensor image_boxes(std::vector<float> values) { return at::tensor(values).reshape({1, -1, 4}); }
at::Tensor logits(std::vector<float> values) { return at::tensor(values).reshape({1, -1}); }

const at::Tensor& proposal_boxes(const Instances& x) { return x.boxes("proposal_boxes").tensor(); }
const at::Tensor& objectness(const Instances& x) { return x.tensor("objectness_logits"); }

TEST(FindTopRpnProposalsTest, OneImageByHand) {
  // Image 100 (h) x 80 (w). Level 0 boxes, by logit:
  //   0: (0,0,20,20) 5.0  kept
  //   1: (1,1,21,21) 4.0  IoU 0.82 with box 0: suppressed at 0.7
  //   2: (70,90,95,120) 3.0  clipped to (70,90,80,100), kept
  //   3: (30,30,30.5,60) 2.0  width 0.5 <= min size 1: dropped
  //   4: (40,40,60,60) 1.0  kept
  //   5: (40,40,60,60) 0.5  not in the top 5
  const at::Tensor p = image_boxes({0,  0,  20,    20, 1,  1,  21, 21, 70, 90, 95, 120,
                                    30, 30, 30.5f, 60, 40, 40, 60, 60, 40, 40, 60, 60});
  const at::Tensor s = logits({5.0f, 4.0f, 3.0f, 2.0f, 1.0f, 0.5f});
  const auto out = find_top_rpn_proposals({p}, {s}, {{100, 80}}, 0.7, 5, 10, 1.0, false);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].image_height(), 100);
  EXPECT_EQ(out[0].image_width(), 80);
  EXPECT_EQ(max_abs_diff(proposal_boxes(out[0]), at::tensor({0.f, 0.f, 20.f, 20.f, 70.f, 90.f, 80.f,
                                                             100.f, 40.f, 40.f, 60.f, 60.f})
                                                     .reshape({3, 4})),
            0.0);
  EXPECT_EQ(max_abs_diff(objectness(out[0]), at::tensor({5.0f, 3.0f, 1.0f})), 0.0);
  // post_nms_topk keeps the best two.
  const auto two = find_top_rpn_proposals({p}, {s}, {{100, 80}}, 0.7, 5, 2, 1.0, false);
  EXPECT_EQ(max_abs_diff(objectness(two[0]), at::tensor({5.0f, 3.0f})), 0.0);
  // The input is left as it was (clipping works on a copy).
  EXPECT_EQ(p[0][2][3].item<float>(), 120.0f);
}

TEST(FindTopRpnProposalsTest, NmsIsPerLevelAndTopKPerLevel) {
  // The same box on two levels survives on both; pre_nms_topk = 1 takes each level's best.
  const at::Tensor level0 = image_boxes({0, 0, 10, 10, 50, 50, 60, 60});
  const at::Tensor level1 = image_boxes({0, 0, 10, 10, 20, 20, 30, 30});
  const auto out =
      find_top_rpn_proposals({level0, level1}, {logits({1.0f, 2.0f}), logits({3.0f, 0.0f})},
                             {{100, 100}}, 0.5, 1, 100, 0.0, false);
  EXPECT_EQ(
      max_abs_diff(proposal_boxes(out[0]),
                   at::tensor({0.f, 0.f, 10.f, 10.f, 50.f, 50.f, 60.f, 60.f}).reshape({2, 4})),
      0.0);
  EXPECT_EQ(max_abs_diff(objectness(out[0]), at::tensor({3.0f, 2.0f})), 0.0);
  // With a large pre_nms_topk, the copy of box (0, 0, 10, 10) on level 0 is not suppressed by
  // the one on level 1.
  const auto all =
      find_top_rpn_proposals({level0, level1}, {logits({1.0f, 2.0f}), logits({3.0f, 0.0f})},
                             {{100, 100}}, 0.5, 10, 100, 0.0, false);
  EXPECT_EQ(max_abs_diff(objectness(all[0]), at::tensor({3.0f, 2.0f, 1.0f, 0.0f})), 0.0);
}

TEST(FindTopRpnProposalsTest, SeveralImagesOfDifferentSizes) {
  // (2, 2, 4): the same boxes in both images, clipped differently.
  const at::Tensor p = at::tensor({0.f, 0.f, 50.f, 50.f, 60.f, 0.f, 90.f, 30.f})
                           .reshape({1, 2, 4})
                           .repeat({2, 1, 1});
  const at::Tensor s = at::tensor({1.0f, 2.0f, 4.0f, 3.0f}).reshape({2, 2});
  const auto out = find_top_rpn_proposals({p}, {s}, {{40, 40}, {100, 100}}, 0.7, 10, 10, 0.0, true);
  ASSERT_EQ(out.size(), 2u);
  // Image 0 is 40 wide: box 1 becomes (40, 0, 40, 30), empty, and is dropped.
  EXPECT_EQ(
      max_abs_diff(proposal_boxes(out[0]), at::tensor({0.f, 0.f, 40.f, 40.f}).reshape({1, 4})),
      0.0);
  EXPECT_EQ(max_abs_diff(proposal_boxes(out[1]),
                         at::tensor({0.f, 0.f, 50.f, 50.f, 60.f, 0.f, 90.f, 30.f}).reshape({2, 4})),
            0.0);
  EXPECT_EQ(max_abs_diff(objectness(out[1]), at::tensor({4.0f, 3.0f})), 0.0);
}

TEST(FindTopRpnProposalsTest, NonFinitePredictions) {
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const at::Tensor p = image_boxes({0, 0, 10, 10, 0, 0, kInf, 10, 20, 20, 30, 30, 40, 40, 50, 50});
  const at::Tensor s = logits({1.0f, 5.0f, kNaN, 0.5f});
  // Inference drops them.
  const auto out = find_top_rpn_proposals({p}, {s}, {{100, 100}}, 0.7, 10, 10, 0.0, false);
  EXPECT_EQ(max_abs_diff(objectness(out[0]), at::tensor({1.0f, 0.5f})), 0.0);
  // Training stops: it has diverged.
  EXPECT_THROW(find_top_rpn_proposals({p}, {s}, {{100, 100}}, 0.7, 10, 10, 0.0, true),
               detkit::Error);
}

TEST(FindTopRpnProposalsTest, EmptyInputs) {
  // No anchors on a level, and every box too small: no proposals, right shapes.
  const at::Tensor none = at::zeros({1, 0, 4});
  const at::Tensor tiny = image_boxes({0, 0, 0.5f, 0.5f});
  const auto out = find_top_rpn_proposals({none, tiny}, {at::zeros({1, 0}), logits({1.0f})},
                                          {{10, 10}}, 0.7, 10, 10, 1.0, false);
  EXPECT_EQ(out[0].size(), 0);
  EXPECT_EQ(proposal_boxes(out[0]).sizes(), (at::IntArrayRef{0, 4}));
  EXPECT_EQ(objectness(out[0]).sizes(), (at::IntArrayRef{0}));
  // No images.
  EXPECT_TRUE(find_top_rpn_proposals({at::zeros({0, 5, 4})}, {at::zeros({0, 5})}, {}, 0.7, 10, 10,
                                     0.0, false)
                  .empty());
}

TEST(FindTopRpnProposalsTest, RejectsBadShapes) {
  EXPECT_THROW(find_top_rpn_proposals({image_boxes({0, 0, 1, 1})}, {logits({1.0f, 2.0f})}, {{5, 5}},
                                      0.7, 10, 10, 0.0, false),
               c10::Error);
  EXPECT_THROW(find_top_rpn_proposals({image_boxes({0, 0, 1, 1})}, {logits({1.0f})},
                                      {{5, 5}, {5, 5}}, 0.7, 10, 10, 0.0, false),
               c10::Error);
  EXPECT_THROW(find_top_rpn_proposals({}, {}, {{5, 5}}, 0.7, 10, 10, 0.0, false), c10::Error);
}

TEST(FindTopRpnProposalsTest, MatchesDetectron2Procedure) {
  DETKIT_REQUIRE_ORACLE();
  auto gen = at::make_generator<at::CPUGeneratorImpl>(9);
  // 2 images, 3 levels of 1200, 300, 75 predictions; some boxes past the image, some tiny, some
  // non-finite.
  const std::vector<int64_t> counts = {1200, 300, 75};
  const std::vector<std::pair<int64_t, int64_t>> image_sizes = {{180, 240}, {200, 150}};
  std::vector<at::Tensor> proposals, scores;
  testing::TensorMap inputs;
  for (size_t i = 0; i < counts.size(); ++i) {
    const at::Tensor xy = at::rand({2, counts[i], 2}, gen) * 260 - 20;
    const at::Tensor wh =
        at::rand({2, counts[i], 2}, gen).pow(2) * 80.0 * static_cast<double>(i + 1);
    at::Tensor p = at::cat({xy, xy + wh}, 2);
    at::Tensor s = at::randn({2, counts[i]}, gen) * 3;
    p[0][7][2] = std::numeric_limits<float>::infinity();
    s[1][3] = std::numeric_limits<float>::quiet_NaN();
    proposals.push_back(p);
    scores.push_back(s);
    inputs["proposals_" + std::to_string(i)] = p.clone();
    inputs["logits_" + std::to_string(i)] = s.clone();
  }
  inputs["image_sizes"] = at::tensor({180, 240, 200, 150}, at::kLong).reshape({2, 2});
  using Setting = std::tuple<int64_t, int64_t, double>;  // pre, post top-k; min box size
  for (const auto& [pre, post, min_size] :
       std::vector<Setting>{{1000, 1000, 0.0}, {200, 150, 2.0}, {50, 20, 0.0}}) {
    inputs["params"] = at::tensor(
        {0.7, static_cast<double>(pre), static_cast<double>(post), min_size}, at::kDouble);
    const auto want = testing::run_oracle("oracle_modeling.py", "proposals", inputs);
    const auto out =
        find_top_rpn_proposals(proposals, scores, image_sizes, 0.7, pre, post, min_size, false);
    double worst = 0.0;
    for (size_t n = 0; n < out.size(); ++n) {
      worst = std::max(worst,
                       max_abs_diff(proposal_boxes(out[n]), want.at("boxes_" + std::to_string(n))));
      worst =
          std::max(worst, max_abs_diff(objectness(out[n]), want.at("logits_" + std::to_string(n))));
    }
    std::cout << "find_top_rpn_proposals vs Detectron2 (Python + torchvision NMS), pre " << pre
              << ", post " << post << ", min size " << min_size << ": " << out[0].size() << " + "
              << out[1].size() << " proposals, max abs diff " << worst << "\n";
    EXPECT_LE(worst, 1e-5);
  }
}

}  // namespace
}  // namespace detkit::modeling
