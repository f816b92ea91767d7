#include "detkit/evaluation/coco_evaluator.h"

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"

namespace detkit::evaluation {

COCOEvaluator::COCOEvaluator(std::shared_ptr<const data::CocoDataset> dataset,
                             std::vector<IouType> tasks, std::string output_dir)
    : dataset_(std::move(dataset)), tasks_(std::move(tasks)), output_dir_(std::move(output_dir)) {}

void COCOEvaluator::process(int64_t image_id, const structures::Instances& predictions) {
  const int64_t n = predictions.size();
  if (n == 0) return;
  at::Tensor boxes = predictions.boxes("pred_boxes").tensor().to(at::kFloat).contiguous();
  at::Tensor scores = predictions.tensor("scores").to(at::kFloat).contiguous();
  at::Tensor classes = predictions.tensor("pred_classes").to(at::kLong).contiguous();
  const bool with_masks = predictions.has("pred_masks");
  at::Tensor masks;
  if (with_masks) masks = predictions.tensor("pred_masks").to(at::kByte).contiguous();
  auto b = boxes.accessor<float, 2>();
  for (int64_t i = 0; i < n; ++i) {
    Detection d;
    EvalObject& o = d.object;
    o.id = static_cast<int64_t>(results_.size()) + 1;
    o.image_id = image_id;
    o.category_id = dataset_->category_id_of(static_cast<int>(classes[i].item<int64_t>()));
    o.score = scores[i].item<float>();
    // XYXY -> XYWH in float32, as Detectron2 converts the tensor before writing.
    float x0 = b[i][0], y0 = b[i][1], w = b[i][2] - b[i][0], h = b[i][3] - b[i][1];
    o.bbox = {x0, y0, w, h};
    if (with_masks) {
      o.rle = mask_ops::encode(masks[i].data_ptr<uint8_t>(), masks.size(1), masks.size(2));
      d.rle_counts = mask_ops::to_string(o.rle);
    }
    results_.push_back(std::move(d));
  }
}

std::map<std::string, CocoEvalReport> COCOEvaluator::evaluate() {
  if (!output_dir_.empty()) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& d : results_) {
      const EvalObject& o = d.object;
      nlohmann::json r = {{"image_id", o.image_id}, {"category_id", o.category_id},
                          {"bbox", o.bbox}, {"score", o.score}};
      if (!d.rle_counts.empty())
        r["segmentation"] = {{"size", {o.rle.h, o.rle.w}}, {"counts", d.rle_counts}};
      all.push_back(std::move(r));
    }
    std::filesystem::create_directories(output_dir_);
    std::string path = output_dir_ + "/coco_instances_results.json";
    atomic_write(path, all.dump());
    spdlog::info("Saving results to {}", path);
  }
  std::map<std::string, CocoEvalReport> reports;
  for (IouType type : tasks_) {
    if (type == IouType::Segm && !results_.empty() && results_.front().rle_counts.empty()) continue;
    CocoGroundTruth gt = ground_truth_from_dataset(*dataset_, type);
    std::vector<EvalObject> detections;
    detections.reserve(results_.size());
    for (const auto& d : results_) {
      EvalObject o = d.object;
      o.area = type == IouType::Bbox ? o.bbox[2] * o.bbox[3]
                                     : static_cast<double>(mask_ops::area(o.rle));
      detections.push_back(std::move(o));
    }
    CocoEvalReport report = evaluate_coco(gt, std::move(detections), type);
    spdlog::info("Evaluation results for {}:\n{}{}", iou_type_name(type), report.summary,
                 detectron2_tables(report, gt.category_names));
    reports[iou_type_name(type)] = std::move(report);
  }
  return reports;
}

}  // namespace detkit::evaluation
