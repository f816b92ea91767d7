// detkit evaluate --gt instances.json --results results.json --iou-type bbox|segm|keypoints
// [--json]: COCO metrics identical to pycocotools' COCOeval with default parameters (keypoints:
// OKS with COCO's 17 person-keypoint sigmas).
#include <iostream>
#include <memory>

#include "detkit/data/coco/coco.h"
#include "detkit/evaluation/coco_report.h"
#include "tools/commands.h"

namespace detkit::tools {

CommandRunner add_evaluate_command(CLI::App& app) {
  struct Options {
    std::string gt, results, iou_type = "bbox";
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "evaluate", "COCO AP/AR of a results file against ground truth (as pycocotools' COCOeval)");
  cmd->add_option("--gt", o->gt, "ground-truth COCO instances JSON")->required();
  cmd->add_option("--results", o->results, "COCO results JSON: a list of detections")->required();
  cmd->add_option("--iou-type", o->iou_type, "bbox, segm or keypoints (OKS, COCO's sigmas)")
      ->check(CLI::IsMember({"bbox", "segm", "keypoints"}));
  cmd->add_flag("--json", o->json,
                "print {\"stats\": [12 numbers, 10 for keypoints], \"per_category_ap\": {id: AP}} "
                "instead of tables");
  cmd->footer(
      "Example: detkit evaluate --gt datasets/coco/annotations/instances_val2017.json "
      "--results output/inference/coco_instances_results.json --iou-type segm\n");
  return [cmd, o]() {
    if (!*cmd) return -1;
    auto type = evaluation::parse_iou_type(o->iou_type);
    data::CocoDataset dataset = data::load_coco_json(o->gt, /*image_root=*/"");
    auto gt = evaluation::ground_truth_from_dataset(dataset, type);
    auto detections = evaluation::load_coco_results(o->results, type, gt.ids);
    auto report = evaluation::evaluate_coco(gt, std::move(detections), type);
    if (o->json) {
      std::cout << evaluation::report_json(report) << "\n";
    } else {
      std::cout << report.summary << evaluation::detectron2_tables(report, gt.category_names);
    }
    return 0;
  };
}

}  // namespace detkit::tools
