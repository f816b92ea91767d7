#include "detkit/evaluation/coco_report.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "detkit/utils/error.h"

namespace detkit::evaluation {

const char* iou_type_name(IouType type) {
  switch (type) {
    case IouType::Bbox:
      return "bbox";
    case IouType::Segm:
      return "segm";
    case IouType::Keypoints:
      return "keypoints";
  }
  return "?";
}

IouType parse_iou_type(const std::string& name) {
  if (name == "bbox") return IouType::Bbox;
  if (name == "segm") return IouType::Segm;
  if (name == "keypoints") return IouType::Keypoints;
  throw Error("iou type must be 'bbox', 'segm' or 'keypoints', got '" + name + "'");
}

std::vector<std::string> detectron2_metric_names(IouType iou_type) {
  if (iou_type == IouType::Keypoints) return {"AP", "AP50", "AP75", "APm", "APl"};
  return {"AP", "AP50", "AP75", "APs", "APm", "APl"};
}

CocoEvalReport evaluate_coco(const CocoGroundTruth& gt, std::vector<EvalObject> detections,
                             IouType iou_type, std::optional<EvalParams> params) {
  COCOeval eval(gt.objects, std::move(detections), gt.image_ids, gt.category_ids, iou_type,
                params ? std::move(*params) : default_eval_params(iou_type));
  eval.evaluate();
  eval.accumulate();
  return {iou_type, eval.summarize(), eval.per_category_ap(), eval.summary_text()};
}

namespace {
std::string cell(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", v);
  return buf;
}
}  // namespace

std::map<std::string, double> detectron2_results(const CocoEvalReport& report) {
  std::map<std::string, double> out = report.results;
  const std::vector<std::string> names = detectron2_metric_names(report.iou_type);
  for (size_t i = 0; i < names.size() && i < report.stats.size(); ++i)
    if (report.stats[i] >= 0) out[names[i]] = 100 * report.stats[i];
  for (const auto& [id, ap] : report.per_category_ap) {
    if (!ap) continue;
    auto it = report.category_names.find(id);
    out["AP-" + (it != report.category_names.end() ? it->second : std::to_string(id))] = 100 * *ap;
  }
  return out;
}

std::string detectron2_tables(const CocoEvalReport& report,
                              const std::map<int64_t, std::string>& category_names) {
  const std::vector<std::string> names = detectron2_metric_names(report.iou_type);
  std::string out =
      std::string("Evaluation results for ") + iou_type_name(report.iou_type) + ":\n|";
  for (const std::string& n : names) out += "  " + n + std::string(6 - n.size(), ' ') + "|";
  out += "\n|";
  for (size_t i = 0; i < names.size(); ++i) out += ":------:|";
  out += "\n|";
  for (size_t i = 0; i < names.size(); ++i) {
    double v = report.stats[i];
    std::string c = v < 0 ? "nan" : cell(100 * v);
    out += " " + c + std::string(c.size() < 6 ? 6 - c.size() : 0, ' ') + " |";
  }
  out += "\nPer-category " + std::string(iou_type_name(report.iou_type)) + " AP:\n";
  // Three (category, AP) column pairs per row, as Detectron2 lays them out.
  std::vector<std::pair<std::string, std::string>> rows;
  size_t width = 8;
  for (const auto& [id, ap] : report.per_category_ap) {
    auto it = category_names.find(id);
    std::string name = it != category_names.end() ? it->second : std::to_string(id);
    width = std::max(width, name.size());
    rows.emplace_back(name, ap ? cell(100 * *ap) : "nan");
  }
  auto pad = [](const std::string& s, size_t w) {
    return s + std::string(w - std::min(w, s.size()), ' ');
  };
  const size_t pairs = std::min<size_t>(3, std::max<size_t>(rows.size(), 1));
  for (size_t p = 0; p < pairs; ++p) out += "| " + pad("category", width) + " | AP     ";
  out += "|\n";
  for (size_t p = 0; p < pairs; ++p) out += "|:" + std::string(width + 1, '-') + "|:-------";
  out += "|\n";
  for (size_t r = 0; r < rows.size(); r += pairs) {
    for (size_t p = 0; p < pairs; ++p) {
      if (r + p < rows.size())
        out += "| " + pad(rows[r + p].first, width) + " | " + pad(rows[r + p].second, 6) + " ";
      else
        out += "| " + pad("", width) + " |        ";
    }
    out += "|\n";
  }
  return out;
}

std::string report_json(const CocoEvalReport& report) {
  nlohmann::ordered_json j;
  j["stats"] = report.stats;
  nlohmann::ordered_json per_category = nlohmann::ordered_json::object();
  for (const auto& [id, ap] : report.per_category_ap)
    per_category[std::to_string(id)] = ap ? nlohmann::ordered_json(*ap) : nlohmann::ordered_json();
  j["per_category_ap"] = per_category;
  return j.dump();
}

}  // namespace detkit::evaluation
