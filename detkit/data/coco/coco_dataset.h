#pragma once
// CocoDataset: a COCO instances file in memory, compact enough for train2017 (118k images, 860k
// annotations): one record per image and the annotations in struct-of-arrays form, their polygons
// in one flat coordinate pool, their RLEs in shared pools. Nothing is allocated per annotation.
//
// Order and meaning follow Detectron2's load_coco_json: images sorted by id; each image's
// annotations in file order; categories sorted by id and numbered 0..K-1 (the "class index",
// Detectron2's contiguous id); crowd regions kept and flagged (never training targets);
// polygons with fewer than 3 points (or an odd number of coordinates) dropped, and annotations
// whose every polygon was dropped removed.
//
//   const CocoDataset& ds = ...;
//   for (size_t i = 0; i < ds.num_images(); ++i) {
//     ImageView image = ds.image(i);          // image.id, image.file_name, image.height, ...
//     for (AnnotationView a : ds.annotations_of(i)) {
//       a.bbox();  a.class_index();  a.iscrowd();
//       for (size_t k = 0; k < a.num_polygons(); ++k) CoordSpan xy = a.polygon(k);
//     }
//   }
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "detkit/data/coco/pod_array.h"
#include "detkit/structures/mask_ops.h"

namespace detkit::data {

class CocoDataset;
class CocoDatasetBuilder;

/// One category as the file names it; person-keypoint files also name the category's keypoints
/// and its skeleton (pairs of 1-based keypoint numbers, COCO's convention). LVIS files also give
/// its synonyms (the first is Detectron2's class name), its frequency group ("r" rare, "c"
/// common, "f" frequent) and the number of images holding it (-1 when the file has none).
struct Category {
  int64_t id = 0;
  std::string name;
  std::vector<std::string> keypoints;
  std::vector<std::array<int64_t, 2>> skeleton;
  std::vector<std::string> synonyms;
  std::string frequency;
  int64_t image_count = -1;
};

/// Read-only view of contiguous category ids.
struct IdSpan {
  const int64_t* data;
  size_t size;
  const int64_t* begin() const { return data; }
  const int64_t* end() const { return data + size; }
  int64_t operator[](size_t i) const { return data[i]; }
};

/// The annotation format a dataset was read from.
enum class JsonFormat : uint8_t {
  kCoco,  // COCO instances
  kLvis,  // LVIS (Detectron2's load_lvis_json): lvis.h
};

/// One image: its id in the file, its path relative to the image root, and its size.
struct ImageView {
  size_t index;  // position in the dataset (0..num_images()-1)
  int64_t id;
  std::string_view file_name;
  int height;
  int width;
};

/// Read-only view of contiguous doubles (a polygon: x0, y0, x1, y1, ...).
struct CoordSpan {
  const double* data;
  size_t size;
  const double* begin() const { return data; }
  const double* end() const { return data + size; }
  double operator[](size_t i) const { return data[i]; }
};

enum class SegmentationKind : uint8_t {
  kNone,      // no "segmentation", or an empty list: box only
  kPolygons,  // one or more polygons of at least 3 points
  kRle,       // {"counts": string or list, "size": [h, w]}, typical of crowd regions
};

/// One annotation; cheap to copy, valid while its dataset lives.
class AnnotationView {
 public:
  AnnotationView(const CocoDataset* dataset, size_t index) : ds_(dataset), i_(index) {}

  size_t index() const { return i_; }  // position in the dataset's annotation arrays
  size_t image_index() const;
  int64_t id() const;
  int64_t category_id() const;  // as in the file
  int class_index() const;      // contiguous, 0..num_classes()-1
  bool iscrowd() const;
  std::array<double, 4> bbox() const;  // [x, y, width, height] in pixels, as in the file
  /// The file's "area"; when absent, Detectron2's fallback: polygon area, RLE area or box area.
  double area() const;

  SegmentationKind segmentation_kind() const;
  size_t num_polygons() const;
  CoordSpan polygon(size_t k) const;
  std::vector<std::vector<double>> polygons() const;  // copies, for PolygonMasks
  /// The RLE of a kRle segmentation (decoded from a compressed string if stored so); an error
  /// for other kinds.
  mask_ops::RLE rle() const;
  /// The mask as pycocotools' annToRLE gives it: polygons rasterised at the image's size and
  /// merged, or the RLE; an error for kNone.
  mask_ops::RLE mask_rle() const;

  /// COCO keypoints as the file has them: x, y, v per keypoint (v: 0 unlabeled, 1 labeled but
  /// not visible, 2 visible); empty when the annotation has no "keypoints".
  CoordSpan keypoints() const;
  /// The file's "num_keypoints"; when absent, the number of keypoints with v > 0.
  int num_keypoints() const;

 private:
  const CocoDataset* ds_;
  size_t i_;
};

/// The annotations of one image, iterable.
class AnnotationRange {
 public:
  class Iterator {
   public:
    Iterator(const CocoDataset* ds, size_t i) : ds_(ds), i_(i) {}
    AnnotationView operator*() const { return {ds_, i_}; }
    Iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator!=(const Iterator& other) const { return i_ != other.i_; }

   private:
    const CocoDataset* ds_;
    size_t i_;
  };
  AnnotationRange(const CocoDataset* ds, size_t begin, size_t end)
      : ds_(ds), begin_(begin), end_(end) {}
  size_t size() const { return end_ - begin_; }
  bool empty() const { return begin_ == end_; }
  AnnotationView operator[](size_t k) const { return {ds_, begin_ + k}; }
  Iterator begin() const { return {ds_, begin_}; }
  Iterator end() const { return {ds_, end_}; }

 private:
  const CocoDataset* ds_;
  size_t begin_, end_;
};

/// What loading dropped or filtered, for logs and the data doctor.
struct CocoLoadStats {
  size_t dropped_polygons = 0;  // fewer than 3 points or an odd number of coordinates
  size_t dropped_annotations =
      0;                       // every polygon dropped (Detectron2: "without valid segmentation")
  size_t filtered_images = 0;  // removed by filter_empty_annotations
};

class CocoDataset {
 public:
  CocoDataset() = default;

  const std::string& json_file() const { return json_file_; }
  const std::string& image_root() const { return image_root_; }

  size_t num_images() const { return image_ids_.size(); }
  ImageView image(size_t i) const;
  /// image_root/file_name.
  std::string image_path(size_t i) const;
  /// The semantic label map of image i (Detectron2's sem_seg_file_name) when the dataset has one
  /// per image (a "panoptic separated" dataset, catalog.h): sem_seg_root/<file_name without its
  /// extension>.png, as Detectron2's load_sem_seg pairs images and labels by their stems.
  std::optional<std::string> sem_seg_path(size_t i) const;
  const std::string& sem_seg_root() const { return sem_seg_root_; }
  /// Gives every image a label map under `root` (empty: none).
  void set_sem_seg_root(std::string root) { sem_seg_root_ = std::move(root); }
  /// Index of the image with this id, if any (for writing results back).
  std::optional<size_t> find_image(int64_t image_id) const;

  size_t num_annotations() const { return ann_ids_.size(); }
  AnnotationView annotation(size_t a) const { return {this, a}; }
  AnnotationRange annotations_of(size_t image_index) const {
    return {this, image_ann_begin_[image_index], image_ann_begin_[image_index + 1]};
  }
  size_t num_crowd() const;

  /// The format of the file it was read from.
  JsonFormat format() const { return format_; }
  /// LVIS: the categories image i was checked for and does not hold (its "neg_category_ids"),
  /// and those not exhaustively annotated on it ("not_exhaustive_category_ids"), as the file
  /// lists them (dataset category ids); empty for COCO files.
  IdSpan neg_category_ids(size_t i) const;
  IdSpan not_exhaustive_category_ids(size_t i) const;

  /// Categories sorted by id; a category's class index is its position here.
  const std::vector<Category>& categories() const { return categories_; }
  size_t num_classes() const { return categories_.size(); }
  /// Class names by class index: the categories' names (LVIS: their first synonym, as
  /// Detectron2's LVIS metadata, or the name when the file lists none).
  std::vector<std::string> class_names() const;
  /// The file's category id of a class index (results are written with it); an error when out of
  /// range.
  int64_t category_id_of(int class_index) const;
  /// The class index of a category id; an error naming the id when the file has no such category.
  int index_of(int64_t category_id) const;
  /// Makes `categories` (sorted by id) the classes, numbered by their position there, as
  /// Detectron2 numbers a COCOfied LVIS file by COCO's 80 categories. An error naming the first
  /// annotation whose category is not among them; nothing changes then.
  void use_categories(std::vector<Category> categories);

  const CocoLoadStats& stats() const { return stats_; }
  /// Heap bytes held by the dataset (its arrays' capacities).
  size_t memory_bytes() const;

 private:
  friend class AnnotationView;
  friend class CocoDatasetBuilder;
  /// Keeps the images (and their annotations) for which keep(image index) is true; returns how
  /// many were removed, also added to stats().filtered_images.
  size_t keep_images_where(const std::function<bool(size_t)>& keep);
  /// Puts annotation order[k] at position k in every annotation array.
  void reorder_annotations(const std::vector<uint32_t>& order);
  /// Puts image order[k] at position k in every per-image array but image_ann_begin_.
  void reorder_images(const std::vector<uint32_t>& order);
  friend size_t filter_empty_annotations(CocoDataset& dataset);
  friend size_t filter_images_with_few_keypoints(CocoDataset& dataset, int min_keypoints);
  friend CocoDataset load_sem_seg(const std::string& gt_root, const std::string& image_root);
  friend CocoDataset load_voc_instances(const std::string& dirname, const std::string& split,
                                        const std::vector<std::string>& class_names);

  struct Rle {
    int32_t h, w;
    bool compressed;  // counts as a COCO string in rle_chars_, else numbers in rle_counts_
    uint64_t begin;   // offset into rle_chars_ or rle_counts_
    uint32_t size;    // characters or counts
  };

  std::string json_file_, image_root_;
  JsonFormat format_ = JsonFormat::kCoco;
  std::string sem_seg_root_;  // empty: the images have no semantic label maps
  std::vector<Category> categories_;

  // Images, sorted by id. image_ann_begin_ has num_images() + 1 entries.
  PodArray<int64_t> image_ids_;
  PodArray<int32_t> heights_, widths_;
  PodArray<uint64_t> name_begin_;  // into names_
  PodArray<uint32_t> name_size_;
  std::string names_;
  PodArray<uint64_t> image_ann_begin_;
  // LVIS only (empty for COCO): image i's negative / not-exhaustive category ids are
  // image_cat_ids_[*_begin_[i], + *_size_[i]).
  PodArray<uint64_t> neg_begin_, not_exhaustive_begin_;
  PodArray<uint32_t> neg_size_, not_exhaustive_size_;
  PodArray<int64_t> image_cat_ids_;

  // Annotations, grouped by image.
  PodArray<int64_t> ann_ids_;
  PodArray<int32_t> ann_class_;
  PodArray<uint8_t> ann_iscrowd_;
  PodArray<std::array<double, 4>> ann_bbox_;
  PodArray<double> ann_area_;
  PodArray<uint32_t> ann_poly_begin_, ann_poly_count_;  // into poly_coord_begin_
  PodArray<int32_t> ann_rle_;                           // into rles_, -1 when none
  // Keypoints of annotation a: kpt_values_[ann_kpt_begin_[a], + ann_kpt_count_[a]) (x, y, v
  // triples, the file's numbers; count 0 when the annotation has none).
  PodArray<uint32_t> ann_kpt_begin_, ann_kpt_count_;
  PodArray<int32_t> ann_num_keypoints_;
  PodArray<double> kpt_values_;

  // Polygon k is coords_[poly_coord_begin_[k], poly_coord_begin_[k + 1]). Boxes, areas and
  // coordinates are doubles, exactly the file's numbers: pycocotools rasterises from doubles, and
  // with float32 coordinates 511 of coco_tiny's 1503 polygon masks come out different.
  PodArray<uint64_t> poly_coord_begin_;
  PodArray<double> coords_;
  std::vector<Rle> rles_;
  std::string rle_chars_;
  PodArray<uint32_t> rle_counts_;

  CocoLoadStats stats_;
};

}  // namespace detkit::data
