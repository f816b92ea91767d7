#include "detkit/evaluation/coco_panoptic_evaluator.h"

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "detkit/distributed/comm.h"
#include "detkit/evaluation/panoptic_report.h"
#include "detkit/evaluation/segmentation_png.h"
#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"

namespace detkit::evaluation {

COCOPanopticEvaluator::COCOPanopticEvaluator(
    std::string panoptic_json, std::string panoptic_root,
    std::map<int64_t, int64_t> thing_contiguous_id_to_dataset_id,
    std::map<int64_t, int64_t> stuff_contiguous_id_to_dataset_id, std::string output_dir)
    : panoptic_json_(std::move(panoptic_json)),
      panoptic_root_(std::move(panoptic_root)),
      thing_to_dataset_id_(std::move(thing_contiguous_id_to_dataset_id)),
      stuff_to_dataset_id_(std::move(stuff_contiguous_id_to_dataset_id)),
      output_dir_(std::move(output_dir)) {
  if (!output_dir_.empty()) std::filesystem::create_directories(output_dir_);
}

void COCOPanopticEvaluator::process(int64_t image_id, const std::string& file_name,
                                    const structures::PanopticOutput& output) {
  const at::Tensor& ids = output.ids;
  if (ids.dim() != 2)
    throw Error(file_name + ": the panoptic id map must be (H, W), got " + c10::str(ids.sizes()));
  const at::Tensor ids32 = ids.to(at::kCPU, at::kInt).contiguous();
  Prediction p;
  p.annotation.image_id = image_id;
  p.annotation.file_name = std::filesystem::path(file_name).stem().string() + ".png";
  p.png = encode_panoptic_png(ids32.data_ptr<int32_t>(), ids32.size(0), ids32.size(1), file_name);
  nlohmann::ordered_json segments = nlohmann::ordered_json::array();
  for (const structures::PanopticSegment& s : output.segments) {
    // Detectron2's _convert_category_id: the class through the thing or the stuff map.
    const auto& to_dataset = s.isthing ? thing_to_dataset_id_ : stuff_to_dataset_id_;
    const auto it = to_dataset.find(s.category_id);
    if (it == to_dataset.end())
      throw Error(file_name + ": segment " + std::to_string(s.id) + " has " +
                  (s.isthing ? "thing" : "stuff") + " class " + std::to_string(s.category_id) +
                  ", which the dataset's " + (s.isthing ? "thing" : "stuff") +
                  "_dataset_id_to_contiguous_id does not map");
    p.annotation.segments_info.push_back({s.id, it->second, false, 0});
    // The keys Detectron2's PanopticFPN gives, "isthing" popped by the conversion.
    nlohmann::ordered_json entry = {{"id", s.id}};
    if (s.isthing) {
      entry["score"] = s.score;
      entry["category_id"] = it->second;
      entry["instance_id"] = s.instance_id;
    } else {
      entry["category_id"] = it->second;
      entry["area"] = s.area;
    }
    segments.push_back(std::move(entry));
  }
  p.segments_json = segments.dump();
  predictions_.push_back(std::move(p));
}

void COCOPanopticEvaluator::gather() {
  nlohmann::json mine = nlohmann::json::array();
  for (const Prediction& p : predictions_)
    mine.push_back({{"image_id", p.annotation.image_id},
                    {"file_name", p.annotation.file_name},
                    {"segments", p.segments_json},
                    {"png", nlohmann::json::binary({p.png.begin(), p.png.end()})}});
  const std::vector<uint8_t> cbor = nlohmann::json::to_cbor(mine);
  const auto all = distributed::all_gather_bytes(std::string(cbor.begin(), cbor.end()));
  if (!distributed::is_main_process()) return;
  predictions_.clear();
  for (const std::string& bytes : all) {  // rank order: each rank's contiguous shard
    for (const auto& entry : nlohmann::json::from_cbor(bytes)) {
      Prediction p;
      p.annotation.image_id = entry.at("image_id").get<int64_t>();
      p.annotation.file_name = entry.at("file_name").get<std::string>();
      p.segments_json = entry.at("segments").get<std::string>();
      const auto& png = entry.at("png").get_binary();
      p.png.assign(png.begin(), png.end());
      for (const auto& s : nlohmann::json::parse(p.segments_json))
        p.annotation.segments_info.push_back(
            {s.at("id").get<int64_t>(), s.at("category_id").get<int64_t>(), false, 0});
      predictions_.push_back(std::move(p));
    }
  }
}

void COCOPanopticEvaluator::write_predictions() const {
  const std::string folder = output_dir_ + "/predictions";
  spdlog::info("Writing all panoptic predictions to {} ...", folder);
  std::filesystem::create_directories(folder);
  for (const Prediction& p : predictions_)
    atomic_write(folder + "/" + p.annotation.file_name, p.png);
  // Detectron2: the ground-truth JSON with its annotations replaced by the predictions.
  nlohmann::ordered_json json;
  try {
    json = nlohmann::ordered_json::parse(read_file(panoptic_json_));
  } catch (const nlohmann::json::exception& e) {
    throw Error(panoptic_json_ + ": not valid JSON: " + e.what());
  }
  nlohmann::ordered_json annotations = nlohmann::ordered_json::array();
  for (const Prediction& p : predictions_)
    annotations.push_back({{"image_id", p.annotation.image_id},
                           {"file_name", p.annotation.file_name},
                           {"segments_info", nlohmann::ordered_json::parse(p.segments_json)}});
  json["annotations"] = std::move(annotations);
  atomic_write(output_dir_ + "/predictions.json", json.dump());
}

std::map<std::string, CocoEvalReport> COCOPanopticEvaluator::evaluate() {
  if (distributed::get_world_size() > 1) {
    gather();
    if (!distributed::is_main_process()) return {};  // rank 0 writes and reports (Detectron2)
  }
  const PanopticJson ground_truth = load_panoptic_json(panoptic_json_, /*ground_truth=*/true);
  if (!output_dir_.empty()) write_predictions();
  std::unordered_map<int64_t, const Prediction*> by_image;
  std::vector<PanopticAnnotation> annotations;
  for (const Prediction& p : predictions_) {
    if (!by_image.emplace(p.annotation.image_id, &p).second)
      throw Error("COCOPanopticEvaluator: image_id " + std::to_string(p.annotation.image_id) +
                  " was processed twice");
    annotations.push_back(p.annotation);
  }
  pq_result_ =
      pq_compute(ground_truth, panoptic_root_, annotations, [&](const PanopticAnnotation& a) {
        return decode_panoptic_png(by_image.at(a.image_id)->png, a.file_name);
      });
  CocoEvalReport report;
  report.iou_type = IouType::Segm;  // unused: the numbers are in `results`
  report.results = panoptic_results(*pq_result_);
  report.summary = panoptic_results_table(*pq_result_);
  spdlog::info("{}", report.summary);
  return {{"panoptic_seg", std::move(report)}};
}

}  // namespace detkit::evaluation
