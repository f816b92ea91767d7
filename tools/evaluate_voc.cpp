// detkit evaluate --voc-dir VOCdevkit/VOC2007 --split test --results DIR [--voc-metric
// 11point|area] [--json]: scores Detectron2's per-class results files (<class>.txt, the lines
// PascalVOCDetectionEvaluator writes) as its evaluate() does.
#include "tools/evaluate_voc.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <regex>

#include "detkit/data/voc/pascal_voc.h"
#include "detkit/evaluation/voc_eval.h"
#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"

namespace detkit::tools {

namespace {

namespace fs = std::filesystem;

// Detectron2's choice by the dataset's year: VOC2007 the 11-point metric, later years the area.
bool use_07_metric_of(const VocEvaluateOptions& o) {
  if (o.metric == "11point") return true;
  if (o.metric == "area") return false;
  if (!o.metric.empty()) throw Error("--voc-metric " + o.metric + ": expected 11point or area");
  fs::path dir = fs::path(o.voc_dir).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();  // "VOC2007/"
  const std::string folder = dir.filename().string();
  std::smatch year;
  static const std::regex kYear("VOC(\\d{4})");
  if (!std::regex_match(folder, year, kYear))
    throw Error("--voc-dir " + o.voc_dir +
                ": the folder is not named VOC<year>; give --voc-metric "
                "11point (VOC2007) or area (VOC2010 and later)");
  return year[1] == "2007";
}

}  // namespace

int evaluate_voc(const VocEvaluateOptions& o) {
  if (o.results_dir.empty()) throw Error("evaluate --voc-dir needs --results DIR (<class>.txt)");
  if (!fs::is_directory(o.results_dir))
    throw Error("--results " + o.results_dir +
                ": no such folder (Pascal VOC results are a folder "
                "of <class>.txt files)");
  const bool use_07_metric = use_07_metric_of(o);
  const auto& classes = data::voc_class_names();
  // Every .txt must be a class's: a stray one is a results file the evaluation would ignore.
  for (const auto& entry : fs::directory_iterator(o.results_dir)) {
    if (entry.path().extension() != ".txt") continue;
    const std::string stem = entry.path().stem().string();
    if (std::find(classes.begin(), classes.end(), stem) == classes.end())
      throw Error("results file " + entry.path().string() + ": '" + stem +
                  "' is not one of the 20 Pascal VOC classes");
  }
  const evaluation::VocGroundTruth gt = evaluation::load_voc_ground_truth(o.voc_dir, o.split);
  std::vector<std::vector<evaluation::VocDetection>> detections;
  for (const std::string& name : classes) {
    const std::string file = (fs::path(o.results_dir) / (name + ".txt")).string();
    if (!fs::exists(file))
      throw Error("results file " + file +
                  " does not exist (a class without detections has an "
                  "empty file)");
    detections.push_back(evaluation::parse_voc_detections(read_file(file), file, gt));
  }
  const auto result = evaluation::evaluate_voc(gt, classes, detections, use_07_metric);
  if (o.json) {
    std::cout << evaluation::voc_result_json(result) << "\n";
  } else {
    std::cout << gt.image_ids.size() << " images\n" << evaluation::voc_result_table(result);
  }
  return 0;
}

}  // namespace detkit::tools
