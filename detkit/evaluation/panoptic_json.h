#pragma once
// COCO panoptic JSON (panopticapi's format) as pq_compute reads it: the categories (id, isthing)
// and, per image, the PNG's file name and its segments (id, category_id, and for the ground truth
// iscrowd and area). Errors name the file and the entry: "pred.json: annotations[3] (image_id
// 139): segments_info[2]: missing \"category_id\"".
#include <cstdint>
#include <string>
#include <vector>

namespace detkit::evaluation {

struct PanopticCategory {
  int64_t id = 0;
  std::string name;
  bool isthing = false;
};

struct PanopticSegmentInfo {
  int64_t id = 0;
  int64_t category_id = 0;
  bool iscrowd = false;
  double area = 0;  // the ground truth's, from the JSON (pq_compute counts predictions' pixels)
};

struct PanopticAnnotation {
  int64_t image_id = 0;
  std::string file_name;  // the PNG, relative to the segmentation folder
  std::vector<PanopticSegmentInfo> segments_info;
};

struct PanopticJson {
  std::vector<PanopticCategory> categories;  // empty for a predictions file
  std::vector<PanopticAnnotation> annotations;
};

/// ground_truth: categories, iscrowd and area are required (pq_compute reads them); else only
/// annotations with image_id, file_name and segments' id and category_id. A segment id listed
/// twice in one image, or an image id twice, is an error.
PanopticJson parse_panoptic_json(const std::string& json_text, const std::string& file,
                                 bool ground_truth);
PanopticJson load_panoptic_json(const std::string& path, bool ground_truth);

}  // namespace detkit::evaluation
