#pragma once
// The checks every model's Detectron2 parity test makes: training losses against the fixture's
// outputs.json "train_losses", gradients against its outputs.pth "grad.<name>" tensors (each
// printed with the difference seen), and pasted masks against its RLE strings.
#include <gtest/gtest.h>
#include <torch/nn/module.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "detkit/checkpoint/state_dict.h"
#include "detkit/structures/mask_ops.h"
#include "detkit/structures/model_io.h"
#include "tests/support/matched_sets.h"
#include "tests/support/tensor_compare.h"

namespace detkit::testing {

/// For each row of `reference` (R, C), the index of the row of `ours` nearest to it (largest
/// absolute column difference); rows in another order — near-tied scores swapped on another CPU
/// — still pair up. Fails the test for a reference row with no row of ours within `tol`.
inline at::Tensor nearest_rows(const at::Tensor& ours, const at::Tensor& reference, double tol) {
  EXPECT_EQ(ours.size(0), reference.size(0));
  const at::Tensor distance =
      (reference.unsqueeze(1) - ours.unsqueeze(0)).abs().amax(-1);  // (R_ref, R_ours)
  const auto [nearest, index] = distance.min(1);
  const int64_t far = (nearest > tol).sum().item<int64_t>();
  EXPECT_EQ(far, 0) << far << " reference rows have no row of ours within " << tol;
  return index;
}

/// Expects every loss of `want` (name -> value) within 1e-4 relative; returns their sum.
inline at::Tensor expect_losses_match(const structures::LossDict& losses,
                                      const nlohmann::json& want, const std::string& label) {
  at::Tensor total = at::zeros({});
  for (const auto& [name, value] : want.items()) {
    if (!losses.count(name)) {
      ADD_FAILURE() << label << ": no loss " << name;
      continue;
    }
    const double got = losses.at(name).item<double>();
    const double rel = std::abs(got - value.get<double>()) / std::abs(value.get<double>());
    std::cout << "[ detectron2 parity ] " << label << " " << name << " " << got << " vs "
              << value.get<double>() << " (relative diff " << rel << ")\n";
    EXPECT_LT(rel, 1e-4) << label << " " << name;
    total = total + losses.at(name);
  }
  return total;
}

/// Expects each "grad.<name>" of `outputs` within 1e-4 of its largest value; returns how many.
inline int expect_gradients_match(const torch::nn::Module& model,
                                  const checkpoint::TensorDict& outputs, const std::string& label) {
  const auto params = model.named_parameters();
  int checked = 0;
  for (const auto& [key, want] : outputs) {
    if (key.rfind("grad.", 0) != 0) continue;
    const std::string name = key.substr(5);
    const at::Tensor* param = params.find(name);
    if (param == nullptr || !param->grad().defined()) {
      ADD_FAILURE() << label << ": no gradient for " << name;
      continue;
    }
    const double diff = (param->grad() - want).abs().max().item<double>();
    const double scale = want.abs().max().item<double>();
    std::cout << "[ detectron2 parity ] " << label << " grad " << name << ": max abs diff " << diff
              << " (values up to " << scale << ")\n";
    EXPECT_LT(diff, 1e-4 * scale) << label << " " << name;
    ++checked;
  }
  return checked;
}

/// One image's detections matched as sets (1e-3 px boxes, 1e-4 scores, same class) against the
/// fixture's pred_boxes_<image>, scores_<image>, pred_classes_<image>.
inline SetMatch match_fixture_detections(const structures::Instances& r,
                                         const checkpoint::TensorDict& outputs, int image) {
  const std::string s = std::to_string(image);
  return match_sets(
      {r.boxes("pred_boxes").tensor(), r.tensor("scores"), r.tensor("pred_classes")},
      {outputs.at("pred_boxes_" + s), outputs.at("scores_" + s), outputs.at("pred_classes_" + s)},
      /*box_tol=*/1e-3, /*score_tol=*/1e-4);
}

/// Pixels where masks[partner[k]] (R, H, W) bool differs from the k-th RLE of `rles`, over the
/// matched detections (partner[k] >= 0).
inline int64_t mask_pixels_differing(const at::Tensor& masks, const nlohmann::json& rles,
                                     const std::vector<int64_t>& partner, int64_t height,
                                     int64_t width) {
  int64_t differing = 0;
  for (size_t k = 0; k < partner.size() && k < rles.size(); ++k) {
    if (partner[k] < 0) continue;
    auto want = mask_ops::decode(mask_ops::from_string(rles[k], height, width));
    const at::Tensor want_mask =
        at::from_blob(want.data(), {height, width}, at::kByte).to(at::kBool);
    differing += (masks[partner[k]] != want_mask).sum().item<int64_t>();
  }
  return differing;
}

}  // namespace detkit::testing
