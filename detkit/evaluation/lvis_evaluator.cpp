#include "detkit/evaluation/lvis_evaluator.h"

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "detkit/distributed/comm.h"
#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"

namespace detkit::evaluation {

LVISEvaluator::LVISEvaluator(std::string json_file, std::vector<IouType> tasks,
                             std::string output_dir, int64_t max_dets_per_image,
                             std::vector<int64_t> class_to_category_id)
    : json_file_(std::move(json_file)),
      tasks_(std::move(tasks)),
      output_dir_(std::move(output_dir)),
      max_dets_(max_dets_per_image),
      class_to_category_id_(std::move(class_to_category_id)) {
  for (IouType t : tasks_)
    if (t == IouType::Keypoints) throw Error("LVISEvaluator: LVIS has no keypoints task");
}

void LVISEvaluator::process(int64_t image_id, const structures::Instances& on_device) {
  // Read on the host: a model on a GPU hands its predictions over where it computed them.
  const structures::Instances predictions = on_device.to(c10::kCPU);
  ++num_images_;
  const int64_t n = predictions.size();
  if (n == 0) return;
  at::Tensor boxes = predictions.boxes("pred_boxes").tensor().to(at::kFloat).contiguous();
  at::Tensor scores = predictions.tensor("scores").to(at::kFloat).contiguous();
  at::Tensor classes = predictions.tensor("pred_classes").to(at::kLong).contiguous();
  at::Tensor masks;
  if (predictions.has("pred_masks"))
    masks = predictions.tensor("pred_masks").to(at::kByte).contiguous();
  auto b = boxes.accessor<float, 2>();
  auto s = scores.accessor<float, 1>();
  auto c = classes.accessor<int64_t, 1>();
  for (int64_t i = 0; i < n; ++i) {
    Detection d;
    d.image_id = image_id;
    const int64_t k = c[i];
    if (class_to_category_id_.empty()) {
      d.category_id = k + 1;  // Detectron2: LVIS's ids are the contiguous classes + 1
    } else {
      if (k < 0 || k >= static_cast<int64_t>(class_to_category_id_.size()))
        throw Error("LVISEvaluator: image id " + std::to_string(image_id) +
                    ": pred_classes holds " + std::to_string(k) + ", but the dataset has " +
                    std::to_string(class_to_category_id_.size()) + " classes");
      d.category_id = class_to_category_id_[k];
    }
    d.score = s[i];
    // XYXY -> XYWH in float32, as Detectron2 converts the tensor before writing.
    d.xywh = {b[i][0], b[i][1], b[i][2] - b[i][0], b[i][3] - b[i][1]};
    if (masks.defined()) {
      mask_ops::RLE rle =
          mask_ops::encode(masks[i].data_ptr<uint8_t>(), masks.size(1), masks.size(2));
      d.mask_h = rle.h;
      d.mask_w = rle.w;
      d.mask_counts = mask_ops::to_string(rle);
    }
    detections_.push_back(std::move(d));
  }
}

void LVISEvaluator::process(const data::InferenceSample& sample,
                            const structures::ModelOutput& output) {
  if (!output.instances)
    throw Error("LVISEvaluator: the model gave no instances for image id " +
                std::to_string(sample.image_id) + " (" + sample.input.file_name + ")");
  process(sample.image_id, *output.instances);
}

std::string LVISEvaluator::results_json() const {
  // Detectron2's instances_to_coco_json, with the dataset's category ids: one object per line.
  std::string out = "[";
  for (size_t i = 0; i < detections_.size(); ++i) {
    const Detection& d = detections_[i];
    nlohmann::ordered_json r;
    r["image_id"] = d.image_id;
    r["category_id"] = d.category_id;
    r["bbox"] = {double(d.xywh[0]), double(d.xywh[1]), double(d.xywh[2]), double(d.xywh[3])};
    r["score"] = double(d.score);
    if (!d.mask_counts.empty())
      r["segmentation"] = {{"size", {d.mask_h, d.mask_w}}, {"counts", d.mask_counts}};
    out += (i ? ",\n" : "\n") + r.dump();
  }
  return out + "]";
}

CocoEvalReport LVISEvaluator::evaluate_task(const LvisGroundTruth& gt,
                                            const std::string& results_text, IouType type) const {
  const std::string name = iou_type_name(type);
  CocoEvalReport report;
  report.iou_type = type;
  const std::string file = output_dir_.empty() ? std::string("LVISEvaluator's detections")
                                               : output_dir_ + "/lvis_instances_results.json";
  std::vector<LvisResult> results = parse_lvis_results(results_text, file, gt);
  if (results.empty()) {
    spdlog::warn("No predictions from the model!");
    for (const std::string& metric : lvis_detectron2_metric_names())
      report.results[metric] = std::numeric_limits<double>::quiet_NaN();
    report.summary = small_table({report.results.begin(), report.results.end()});
    return report;
  }
  // Detectron2 drops the box before mask AP, so that LVISResults takes the mask's area.
  if (type == IouType::Segm)
    for (LvisResult& r : results) r.has_bbox = false;
  spdlog::info("Evaluating {} with max detections per image = {}", name, max_dets_);
  LvisEvalReport lvis = evaluate_lvis(gt, std::move(results), type, max_dets_, file);
  const auto d2 = lvis_detectron2_results(lvis);
  const std::string table = small_table(d2);
  spdlog::info("LVISEval {}:\n{}", name, lvis.summary);
  spdlog::info("Evaluation results for {}: \n{}", name, table);
  report.results = {d2.begin(), d2.end()};
  report.summary = lvis.summary + "Evaluation results for " + name + ": \n" + table;
  return report;
}

std::map<std::string, CocoEvalReport> LVISEvaluator::evaluate() {
  std::string text = results_json();
  size_t images = num_images_;
  bool masks = std::any_of(detections_.begin(), detections_.end(),
                           [](const Detection& d) { return !d.mask_counts.empty(); });
  if (distributed::get_world_size() > 1) {
    // "<images> <masks>\n[...]" from each rank, in rank order (each saw a contiguous shard).
    const auto all = distributed::all_gather_bytes(std::to_string(images) + " " +
                                                   std::to_string(int(masks)) + "\n" + text);
    if (!distributed::is_main_process()) return {};
    images = 0;
    masks = false;
    text = "[";
    for (const std::string& rank : all) {
      const size_t newline = rank.find('\n');
      if (newline == std::string::npos) throw Error("LVISEvaluator: a malformed gathered record");
      images += std::stoull(rank.substr(0, newline));
      masks = masks || rank.substr(0, newline).back() == '1';
      const std::string list = rank.substr(newline + 1);  // "[...]"
      const std::string body = list.substr(1, list.size() - 2);
      if (body.find_first_not_of(" \n") == std::string::npos) continue;
      text += (text.size() > 1 ? "," : "") + body;
    }
    text += "]";
    spdlog::info("Gathered the detections of {} images from {} ranks", images, all.size());
  }
  if (images == 0) {
    spdlog::warn("[LVISEvaluator] Did not receive valid predictions.");
    return {};
  }
  if (!output_dir_.empty()) {
    std::filesystem::create_directories(output_dir_);
    const std::string path = output_dir_ + "/lvis_instances_results.json";
    atomic_write(path, text);
    spdlog::info("Saving results to {}", path);
  }
  std::vector<IouType> tasks = tasks_;
  if (tasks.empty()) {
    tasks = {IouType::Bbox};
    if (masks) tasks.push_back(IouType::Segm);
  }
  std::map<std::string, CocoEvalReport> reports;
  for (IouType type : tasks) {
    if (type == IouType::Segm && !masks) {
      spdlog::warn("LVISEvaluator: no masks among the detections; segm is not evaluated");
      continue;
    }
    const LvisGroundTruth gt = load_lvis_ground_truth(json_file_, type);
    if (gt.annotations.empty()) {  // a test set's file: the evaluation server scores it
      spdlog::info("Annotations are not available for evaluation.");
      return {};
    }
    reports[iou_type_name(type)] = evaluate_task(gt, text, type);
  }
  return reports;
}

}  // namespace detkit::evaluation
