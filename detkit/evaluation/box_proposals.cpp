#include "detkit/evaluation/box_proposals.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "detkit/structures/boxes.h"
#include "detkit/utils/error.h"

namespace detkit::evaluation {
namespace {

// For each ground-truth box, the IoU of the proposal matched to it (gt_overlaps of Detectron2):
// repeatedly the best-covered remaining box, with its best remaining proposal; both then used up.
at::Tensor greedy_coverage(at::Tensor overlaps) {
  const int64_t rounds = std::min(overlaps.size(0), overlaps.size(1));
  at::Tensor covered = at::zeros({overlaps.size(1)}, at::kFloat);
  for (int64_t j = 0; j < rounds; ++j) {
    const auto [max_overlaps, argmax_overlaps] = overlaps.max(0);
    const auto [best, gt_index] = max_overlaps.max(0);
    const int64_t g = gt_index.item<int64_t>();
    const int64_t p = argmax_overlaps[g].item<int64_t>();
    covered[j] = best;
    overlaps.select(0, p).fill_(-1);
    overlaps.select(1, g).fill_(-1);
  }
  return covered;
}

}  // namespace

double proposal_average_recall(const data::CocoDataset& dataset,
                               const std::vector<ImageProposals>& proposals, double min_area,
                               double max_area, int64_t limit) {
  std::vector<at::Tensor> gt_overlaps;
  int64_t num_pos = 0;
  for (const ImageProposals& image : proposals) {
    const auto index = dataset.find_image(image.image_id);
    if (!index) {
      throw Error("box proposals: image id " + std::to_string(image.image_id) +
                  " is not in the dataset " + dataset.json_file());
    }
    std::vector<float> boxes, areas;
    for (data::AnnotationView a : dataset.annotations_of(*index)) {
      if (a.iscrowd()) continue;
      const auto b = a.bbox();  // XYWH in double, converted before the float32 tensor is made
      for (double v : {b[0], b[1], b[0] + b[2], b[1] + b[3]})
        boxes.push_back(static_cast<float>(v));
      areas.push_back(static_cast<float>(a.area()));
    }
    const int64_t num_proposals = image.boxes.size(0);
    if (areas.empty() || num_proposals == 0) continue;
    const at::Tensor area = at::tensor(areas);
    const at::Tensor valid = area.ge(min_area).logical_and(area.le(max_area));
    const at::Tensor gt = at::tensor(boxes).view({-1, 4}).index({valid});
    num_pos += gt.size(0);
    if (gt.size(0) == 0) continue;
    const at::Tensor order =
        std::get<1>(image.objectness_logits.to(at::kFloat).sort(/*dim=*/0, /*descending=*/true));
    at::Tensor kept = image.boxes.to(at::kFloat).index_select(0, order);
    if (num_proposals > limit) kept = kept.narrow(0, 0, limit);
    gt_overlaps.push_back(
        greedy_coverage(structures::pairwise_iou(structures::Boxes(kept), structures::Boxes(gt))));
  }
  const at::Tensor overlaps =
      gt_overlaps.empty() ? at::zeros({0}, at::kFloat) : at::cat(gt_overlaps);
  // Thresholds 0.5, 0.55, ..., 0.95 as float32 (torch.arange's values), recall per threshold in
  // float32, their mean: Detectron2's AR.
  const at::Tensor thresholds = at::arange(0.5, 0.95 + 1e-5, 0.05, at::kFloat);
  at::Tensor recalls = at::zeros_like(thresholds);
  for (int64_t i = 0; i < thresholds.size(0); ++i)
    recalls[i] = overlaps.ge(thresholds[i]).to(at::kFloat).sum() / static_cast<double>(num_pos);
  return recalls.mean().item<double>();
}

std::string proposal_metrics_table(const std::map<std::string, double>& results) {
  // Detectron2's create_small_table: one centred row, in its order of the keys.
  std::string header = "|", rule = "|", row = "|";
  for (const char* limit : {"100", "1000"}) {
    for (const char* area : {"", "s", "m", "l"}) {
      const std::string name = std::string("AR") + area + "@" + limit;
      const auto it = results.find(name);
      if (it == results.end()) continue;
      const std::string value = std::isnan(it->second) ? "nan" : fmt::format("{:.3f}", it->second);
      const size_t width = std::max(name.size(), value.size()) + 4;
      header += fmt::format("{:^{}}|", name, width);
      rule += ":" + std::string(width - 2, '-') + ":|";
      row += fmt::format("{:^{}}|", value, width);
    }
  }
  return "Proposal metrics: \n" + header + "\n" + rule + "\n" + row;
}

std::map<std::string, double> box_proposal_results(const data::CocoDataset& dataset,
                                                   const std::vector<ImageProposals>& proposals) {
  const std::pair<const char*, std::pair<double, double>> areas[] = {
      {"", {0, 1e10}}, {"s", {0, 32 * 32}}, {"m", {32 * 32, 96 * 96}}, {"l", {96 * 96, 1e10}}};
  std::map<std::string, double> results;
  for (int64_t limit : {100, 1000}) {
    for (const auto& [suffix, range] : areas) {
      results["AR" + std::string(suffix) + "@" + std::to_string(limit)] =
          proposal_average_recall(dataset, proposals, range.first, range.second, limit) * 100;
    }
  }
  return results;
}

}  // namespace detkit::evaluation
