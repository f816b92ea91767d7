#pragma once
// COCOEvaluator: collects a model's predictions on a COCO dataset, writes them as a COCO results
// file (OUTPUT_DIR/inference/coco_instances_results.json: original category ids, XYWH boxes, RLE
// masks as compressed strings, keypoints as COCO pixel indices: Detectron2 subtracts 0.5 from the
// model's continuous x, y) and evaluates bbox, segm and keypoints with COCOeval. A
// ProposalNetwork's proposals are written as OUTPUT_DIR/inference/box_proposals.pkl (Detectron2's
// proposal file) and scored as its "box_proposals" task (average recall, box_proposals.h).
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "detkit/data/coco/coco_dataset.h"
#include "detkit/data/proposal_file.h"
#include "detkit/evaluation/coco_report.h"
#include "detkit/evaluation/evaluator.h"
#include "detkit/structures/instances.h"

namespace detkit::evaluation {

class COCOEvaluator : public DatasetEvaluator {
 public:
  /// tasks: which of bbox / segm / keypoints to evaluate; output_dir "" writes no file;
  /// kpt_oks_sigmas: TEST.KEYPOINT_OKS_SIGMAS, empty for COCO's.
  COCOEvaluator(std::shared_ptr<const data::CocoDataset> dataset, std::vector<IouType> tasks,
                std::string output_dir, std::vector<double> kpt_oks_sigmas = {});

  /// predictions: "pred_boxes", "scores", "pred_classes" (class indices) and, for segm,
  /// "pred_masks" (R, H, W) bool, for keypoints "pred_keypoints" (R, K, 3: x, y, score), in the
  /// original image's size. Or "proposal_boxes" and "objectness_logits" (a ProposalNetwork's
  /// output): then every image is kept, with or without proposals, for the box_proposals task.
  void process(int64_t image_id, const structures::Instances& predictions);
  /// The output's instances (or proposals) under the sample's image id; an output without
  /// instances (a SemanticSegmentor's) is an error.
  void process(const data::InferenceSample& sample, const structures::ModelOutput& output) override;
  /// Writes the results file and returns a report per task, logging the tables. In a job of
  /// several ranks every rank calls it: the detections are gathered to rank 0, which writes and
  /// reports; the other ranks return no report.
  std::map<std::string, CocoEvalReport> evaluate() override;
  size_t num_detections() const { return results_.size(); }
  size_t num_proposal_images() const { return proposals_.size(); }

 private:
  struct Detection {
    EvalObject object;  // category_id in the file's ids; keypoints as written (x, y - 0.5)
    std::string rle_counts;
  };
  std::string serialize() const;
  void append_serialized(const std::string& bytes);
  /// Gathers the proposals to rank 0, writes box_proposals.pkl and scores them.
  std::optional<CocoEvalReport> evaluate_box_proposals();

  std::shared_ptr<const data::CocoDataset> dataset_;
  std::vector<IouType> tasks_;
  std::string output_dir_;
  std::vector<double> kpt_oks_sigmas_;
  std::vector<Detection> results_;
  std::vector<data::ImageProposals> proposals_;
};

}  // namespace detkit::evaluation
