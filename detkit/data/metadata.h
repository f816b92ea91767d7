#pragma once
// The metadata catalog beside the dataset catalog (Detectron2's MetadataCatalog): per dataset
// name, what a model's outputs mean — class names by contiguous id and the dataset's category id
// of each, keypoint names and which keypoints swap under a horizontal flip, the evaluator type.
//
//   const detkit::data::Metadata& m = detkit::data::global_metadata().get("coco_2017_val");
//   m.thing_classes[3];        // "motorcycle"
//   m.dataset_id(3);           // 4, the category id results files use
//
// Built-in names come filled (COCO's 80 things, COCO person keypoints, the shapes dataset);
// register_coco_instances() adds the files and the evaluator type, and loading a dataset fills
// its things from the file. Setting things that differ from what an entry already holds is an
// error naming the dataset (as Detectron2's Metadata refuses to change an attribute).
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "detkit/data/coco/coco_dataset.h"

namespace detkit::data {

/// Two keypoints the visualizer joins, and the line's colour (RGB).
struct KeypointConnection {
  std::string a, b;
  std::array<int, 3> rgb;
};

struct Metadata {
  std::string name;
  std::string evaluator_type;  // "coco" for COCO-format datasets, "coco_panoptic_seg" (panoptic)
  std::string json_file, image_root;
  std::vector<std::string> thing_classes;  // by contiguous id 0..N-1
  std::vector<int64_t> thing_dataset_ids;  // the dataset's category id of each contiguous id
  std::vector<int64_t> class_image_count;  // by contiguous id; LVIS categories' image_count
  /// The semantic classes (Detectron2's stuff_classes) and the dataset's category id of each
  /// (its stuff_dataset_id_to_contiguous_id, inverted). "Panoptic separated" datasets: "things"
  /// (id 0, every thing pixel) then the stuff categories; "panoptic standard" ones: every
  /// category of the panoptic file, things included, in id order.
  std::vector<std::string> stuff_classes;
  std::vector<int64_t> stuff_dataset_ids;
  /// Panoptic datasets: the panoptic file, the folder of its PNGs, and (separated) the folder of
  /// the semantic label maps.
  std::string panoptic_json, panoptic_root, sem_seg_root;
  /// The label of unlabelled pixels (Detectron2's ignore_label: 255 for COCO panoptic), and the
  /// panoptic id = category * label_divisor + instance convention (1000) of standard datasets;
  /// -1 when the dataset has none.
  int64_t ignore_label = -1;
  int64_t label_divisor = -1;
  std::vector<std::string> keypoint_names;
  std::vector<std::pair<std::string, std::string>> keypoint_flip_map;
  std::vector<KeypointConnection> keypoint_connection_rules;

  /// Sets thing_classes and thing_dataset_ids (same length, distinct ids). When they are set
  /// already, the new ones must be equal: otherwise a detkit::Error naming the dataset and the
  /// first difference.
  void set_things(const std::vector<std::string>& classes, const std::vector<int64_t>& ids);
  /// Sets stuff_classes and stuff_dataset_ids, with the same rules as set_things.
  void set_stuff(const std::vector<std::string>& classes, const std::vector<int64_t>& ids);
  /// Detectron2's stuff_dataset_id_to_contiguous_id[dataset_id]; an unknown id is an error.
  int stuff_contiguous_id(int64_t dataset_id) const;
  /// Detectron2's thing_dataset_id_to_contiguous_id[dataset_id]; an unknown id is an error.
  int contiguous_id(int64_t dataset_id) const;
  /// thing_dataset_ids[contiguous]; out of range is an error.
  int64_t dataset_id(int contiguous) const;
  /// For keypoint i, the index of the keypoint it becomes under a horizontal flip (itself when
  /// unpaired). A flip-map name that is not a keypoint is an error naming it.
  std::vector<int64_t> keypoint_flip_indices() const;
  /// The connection rules as keypoint index pairs with their colours; a rule naming an unknown
  /// keypoint is an error naming it.
  std::vector<std::pair<std::array<int64_t, 2>, std::array<int, 3>>> keypoint_skeleton() const;
  /// The index of a keypoint name; an error naming it and `table` when it is not a keypoint.
  int64_t keypoint_index(const std::string& keypoint, const char* table) const;
};

class MetadataCatalog {
 public:
  /// The entry of `name`, made on first use (filled from the built-in tables when the name is
  /// built in, empty otherwise), as Detectron2's MetadataCatalog.get. References stay valid.
  Metadata& get(const std::string& name);
  bool contains(const std::string& name) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, Metadata> entries_;
};

/// The process-wide metadata catalog.
MetadataCatalog& global_metadata();

/// The things of a loaded COCO file, into `name`'s entry (see Metadata::set_things).
void record_things(const std::string& name, const CocoDataset& dataset);

}  // namespace detkit::data
