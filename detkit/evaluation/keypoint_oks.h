#pragma once
// Object keypoint similarity (OKS), pycocotools' computeOks: for each detection and ground truth,
// the mean over the ground truth's labelled keypoints (v > 0) of
//   exp(-d^2 / (2 * area * (2 * sigma)^2)),
// and for a ground truth with no labelled keypoint, the same with d the distance from each
// detected keypoint to the ground-truth box grown by its size on every side.
#include <array>
#include <vector>

namespace detkit::evaluation {

/// COCO's 17 person-keypoint sigmas (pycocotools' kpt_oks_sigmas: .26, .25, ... / 10).
std::vector<double> coco_person_keypoint_sigmas();

struct OksGroundTruth {
  const std::vector<double>* keypoints;  // x, y, v per keypoint
  std::array<double, 4> bbox;            // x, y, w, h
  double area;
};

/// dts.size() x gts.size(), row-major; each detection's keypoints are x, y, score per keypoint.
/// Every keypoint list must hold 3 * sigmas.size() values (the caller checks and names them).
std::vector<double> keypoint_oks(const std::vector<const std::vector<double>*>& dts,
                                 const std::vector<OksGroundTruth>& gts,
                                 const std::vector<double>& sigmas);

}  // namespace detkit::evaluation
