#pragma once
// Pascal VOC detection AP as Detectron2's voc_eval computes it
// (evaluation/pascal_voc_evaluation.py, after py-faster-rcnn): per class, detections sorted by
// score (highest first) are matched greedily to the ground-truth box of highest IoU in their image
// (VOC's +1 pixel widths); a match needs IoU > ovthresh (strict), a box matched twice is a false
// positive, `difficult` objects neither count nor penalise. AP is the VOC2007 11-point mean of the
// interpolated precision at recall 0, 0.1, ..., 1 (use_07_metric) or the area under the
// interpolated curve (VOC2010+). numpy's order of operations is kept (its pairwise sums), so the
// numbers are Detectron2's bit for bit. Detections with equal scores keep their file order (numpy's
// argsort is not stable: there Detectron2's order is unspecified).
//
//   VocGroundTruth gt = load_voc_ground_truth("VOCdevkit/VOC2007", "test");
//   auto dets = parse_voc_detections(read_file("dog.txt"), "dog.txt", gt);
//   double ap = voc_eval(gt, "dog", dets, 0.5, /*use_07_metric=*/true).ap;
#include <array>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace detkit::evaluation {

/// One ground-truth object as voc_eval's parse_rec reads it (integer VOC pixels, 1-based).
struct VocGtObject {
  std::string name;
  bool difficult = false;
  std::array<double, 4> bbox;  // xmin, ymin, xmax, ymax
};

/// The objects of every image of a split, in the split file's order.
struct VocGroundTruth {
  std::vector<std::string> image_ids;             // the stems
  std::vector<std::vector<VocGtObject>> objects;  // per image
  std::unordered_map<std::string, size_t> index;  // stem -> position
  /// Adds an image; a stem added twice is an error naming `source`.
  void add_image(const std::string& image_id, std::vector<VocGtObject> image_objects,
                 const std::string& source);
  std::optional<size_t> find(const std::string& image_id) const;
};

/// parse_rec: an annotation file's objects (name, pose, truncated, difficult and integer
/// bndbox/{xmin,ymin,xmax,ymax} required); an error naming the file and the element path.
std::vector<VocGtObject> read_voc_gt_objects(const std::string& xml_file);

/// The split <dirname>/ImageSets/Main/<split>.txt and <dirname>/Annotations/<stem>.xml of each of
/// its images. A missing file is an error naming it; an image listed twice names the split file.
VocGroundTruth load_voc_ground_truth(const std::string& dirname, const std::string& split);

/// One detection of one class: its image (position in the ground truth), score and box in VOC's
/// 1-based pixels (as written: xmin + 1, ymin + 1, xmax, ymax of the model's box).
struct VocDetection {
  size_t image;
  double score;
  std::array<double, 4> box;
};

/// A class's results file: lines "<image id> <score> <xmin> <ymin> <xmax> <ymax>". An image id
/// that the ground truth lacks, a line of another shape or a non-finite number is an error
/// naming `source` and the line.
std::vector<VocDetection> parse_voc_detections(const std::string& text, const std::string& source,
                                               const VocGroundTruth& gt);

/// The line Detectron2's PascalVOCDetectionEvaluator writes for a detection of the model's
/// continuous box [x0, y0, x1, y1] (float32): "{id} {score:.3f} {x0 + 1:.1f} {y0 + 1:.1f}
/// {x1:.1f} {y1:.1f}", the + 1 in float32.
std::string voc_detection_line(const std::string& image_id, float score,
                               const std::array<float, 4>& box);

/// voc_ap: AP from the recall and precision curves (11-point or area).
double voc_ap(const std::vector<double>& recall, const std::vector<double>& precision,
              bool use_07_metric);

struct VocCurve {
  std::vector<double> recall, precision;  // after each detection, in score order
  double ap = 0;                          // a fraction; NaN when the class has detections but
                                          // no non-difficult object under the area metric
  int64_t npos = 0;                       // non-difficult objects of the class
};

/// voc_eval of one class at one IoU threshold.
VocCurve voc_eval(const VocGroundTruth& gt, const std::string& class_name,
                  const std::vector<VocDetection>& detections, double ovthresh, bool use_07_metric);

/// Detectron2's PascalVOCDetectionEvaluator numbers: per class the AP (x100) at IoU 0.50, 0.55,
/// ..., 0.95, then AP50, AP75 (means over classes) and AP (mean over thresholds).
struct VocResult {
  std::vector<std::string> class_names;
  std::vector<std::array<double, 10>> ap;  // [class][t], t = 50, 55, ..., 95; percent
  double AP = 0, AP50 = 0, AP75 = 0;
  bool use_07_metric = true;
};

/// detections[c]: the detections of class_names[c] (the ground truth's objects of other names
/// are ignored, as voc_eval ignores them).
VocResult evaluate_voc(const VocGroundTruth& gt, const std::vector<std::string>& class_names,
                       const std::vector<std::vector<VocDetection>>& detections,
                       bool use_07_metric);

/// {"bbox": {"AP": .., "AP50": .., "AP75": ..}} (percent), the dict Detectron2's evaluate()
/// returns.
std::string voc_result_json(const VocResult& result);
/// The metric line, AP/AP50/AP75 and a per-class table of AP50 and AP75.
std::string voc_result_table(const VocResult& result);

}  // namespace detkit::evaluation
