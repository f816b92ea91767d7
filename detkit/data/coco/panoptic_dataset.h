#pragma once
// PanopticDataset: a COCO panoptic file (panoptic_*.json) in memory, as Detectron2's
// load_coco_panoptic_json gives it — one record per entry of "annotations", in file order, with
// the image it annotates, its PNG (pan_seg_file_name: segment id = R + 256 G + 256^2 B, 0 void)
// and its segments_info — plus each image's size from "images" and the categories.
//
// Categories are numbered as Detectron2's "coco_panoptic_standard" metadata numbers them: things
// and stuff in one contiguous list, in id order (the contiguous id of a category is its position
// in categories()).
//
//   PanopticDataset ds = load_coco_panoptic_json(json, "coco/val2017", "coco/panoptic_val2017");
//   for (size_t i = 0; i < ds.num_images(); ++i) {
//     PanopticImageView image = ds.image(i);    // image.image_path, image.pan_seg_path, ...
//     for (const PanopticSegment& s : image.segments) s.contiguous_id, s.isthing ...
//   }
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace detkit::data {

/// One category of a panoptic file.
struct PanopticCategory {
  int64_t id = 0;
  std::string name;
  bool isthing = false;
};

/// One entry of an annotation's segments_info.
struct PanopticSegment {
  int64_t id = 0;             // its pixels' value in the PNG, 1 .. 2^24 - 1
  int64_t category_id = 0;    // as in the file
  int32_t contiguous_id = 0;  // the category's position in categories()
  bool isthing = false;
  bool iscrowd = false;          // the file's "iscrowd" (0 when absent)
  double area = 0;               // the file's "area" (0 when absent)
  std::array<double, 4> bbox{};  // the file's "bbox" [x, y, w, h] (zeros when absent)
};

/// Read-only view of contiguous segments.
struct SegmentSpan {
  const PanopticSegment* data = nullptr;
  size_t size = 0;
  const PanopticSegment* begin() const { return data; }
  const PanopticSegment* end() const { return data + size; }
  const PanopticSegment& operator[](size_t k) const { return data[k]; }
};

/// One record (Detectron2's dict): valid while its dataset lives.
struct PanopticImageView {
  int64_t id;
  /// image_root/<PNG file name's stem>.jpg, as Detectron2 names the image (its "file_name").
  std::string image_path;
  std::string pan_seg_path;  // panoptic_root/<the annotation's file_name>
  int height, width;         // from "images"
  SegmentSpan segments;
};

class PanopticDataset {
 public:
  const std::string& json_file() const { return json_file_; }
  const std::string& image_root() const { return image_root_; }
  const std::string& panoptic_root() const { return panoptic_root_; }

  size_t num_images() const { return ids_.size(); }
  PanopticImageView image(size_t i) const;
  size_t num_segments() const { return segments_.size(); }

  /// Sorted by id; a category's contiguous id is its position here.
  const std::vector<PanopticCategory>& categories() const { return categories_; }

 private:
  friend class PanopticJsonReader;

  std::string json_file_, image_root_, panoptic_root_;
  std::vector<PanopticCategory> categories_;
  // Records in the file's order; record i's PNG name is names_[name_begin_[i], name_begin_[i + 1])
  // and its segments segments_[segment_begin_[i], segment_begin_[i + 1]).
  std::vector<int64_t> ids_;
  std::vector<int32_t> heights_, widths_;
  std::string names_;
  std::vector<uint64_t> name_begin_{0};
  std::vector<PanopticSegment> segments_;
  std::vector<uint64_t> segment_begin_{0};
};

/// Loads a COCO panoptic file, streamed as the COCO loader streams instances files (simdjson over
/// blocks; memory is the dataset, not the file). A detkit::Error starting with the file and naming
/// the place for: malformed JSON, a missing or mistyped key, an image id listed twice in "images"
/// or in "annotations", an annotation of an image not in "images", a category id listed twice, a
/// segment whose category_id is not in "categories", a segment id listed twice in one image or
/// outside 1 .. 2^24 - 1, a file_name that leaves the panoptic root.
PanopticDataset load_coco_panoptic_json(const std::string& json_file, const std::string& image_root,
                                        const std::string& panoptic_root);

/// The categories of a panoptic file alone (sorted by id, checked as above).
std::vector<PanopticCategory> read_panoptic_categories(const std::string& json_file);

}  // namespace detkit::data
