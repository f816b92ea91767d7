#include "detkit/evaluation/lvis_report.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "detkit/evaluation/lvis_eval.h"

namespace detkit::evaluation {

LvisEvalReport evaluate_lvis(const LvisGroundTruth& gt, std::vector<LvisResult> results,
                             IouType iou_type, int64_t max_dets, const std::string& results_file) {
  std::vector<EvalObject> detections =
      lvis_results(std::move(results), gt, iou_type, max_dets, results_file);
  LvisEvalReport report;
  report.iou_type = iou_type;
  report.num_results_after_cap = detections.size();
  LVISEval eval(gt, std::move(detections), iou_type);
  eval.run();
  report.results = eval.results();
  report.per_category_ap = eval.per_category_ap();
  report.summary = eval.results_text();
  report.num_detections_evaluated = eval.num_detections_evaluated();
  report.num_ground_truth = eval.num_ground_truth();
  return report;
}

const std::vector<std::string>& lvis_detectron2_metric_names() {
  static const std::vector<std::string> names = {"AP",  "AP50", "AP75", "APs", "APm",
                                                 "APl", "APr",  "APc",  "APf"};
  return names;
}

std::vector<std::pair<std::string, double>> lvis_detectron2_results(const LvisEvalReport& report) {
  std::vector<std::pair<std::string, double>> out;
  for (const std::string& name : lvis_detectron2_metric_names())
    for (const auto& [key, value] : report.results)
      if (key == name) out.emplace_back(name, value * 100);
  return out;
}

std::string small_table(const std::vector<std::pair<std::string, double>>& results) {
  // tabulate's pipe format: each column as wide as its value or its header plus 2, the text
  // centred (the odd space on the right), one space of padding on either side.
  auto centred = [](const std::string& s, size_t width) {
    const size_t pad = width - std::min(width, s.size());
    return std::string(pad / 2, ' ') + s + std::string(pad - pad / 2, ' ');
  };
  std::string header = "|", rule = "|", row = "|";
  for (const auto& [key, value] : results) {
    const std::string cell = std::isnan(value) ? "nan" : fmt::format("{:.3f}", value);
    const size_t width = std::max(key.size() + 2, cell.size());
    header += " " + centred(key, width) + " |";
    rule += ":" + std::string(width, '-') + ":|";
    row += " " + centred(cell, width) + " |";
  }
  return header + "\n" + rule + "\n" + row;
}

std::string lvis_report_json(const LvisEvalReport& report) {
  nlohmann::ordered_json j;
  nlohmann::ordered_json results = nlohmann::ordered_json::object();
  for (const auto& [key, value] : report.results) results[key] = value;
  j["results"] = results;
  nlohmann::ordered_json per_category = nlohmann::ordered_json::object();
  for (const auto& [id, ap] : report.per_category_ap)
    per_category[std::to_string(id)] = ap ? nlohmann::ordered_json(*ap) : nlohmann::ordered_json();
  j["per_category_ap"] = per_category;
  j["n_results_after_cap"] = report.num_results_after_cap;
  j["n_detections_evaluated"] = report.num_detections_evaluated;
  j["n_gt"] = report.num_ground_truth;
  return j.dump();
}

}  // namespace detkit::evaluation
