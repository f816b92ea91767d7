#pragma once
// The dataset catalog: names used in configs (DATASETS.TRAIN, DATASETS.TEST) mapped to a COCO
// instances file and the folder its file_names are relative to.
//
// Built-in names use Detectron2's layout under the datasets root ($DETKIT_DATASETS, default
// ./datasets):
//   coco_2017_train           coco/annotations/instances_train2017.json          coco/train2017/
//   coco_2017_val             coco/annotations/instances_val2017.json            coco/val2017/
//   coco_2017_val_100         coco/annotations/instances_val2017_100.json        coco/val2017/
//   coco_2014_train           coco/annotations/instances_train2014.json          coco/train2014/
//   coco_2014_val             coco/annotations/instances_val2014.json            coco/val2014/
//   coco_2014_minival         coco/annotations/instances_minival2014.json        coco/val2014/
//   coco_2014_valminusminival coco/annotations/instances_valminusminival2014.json coco/val2014/
//   shapes_train, shapes_val  shapes/annotations/instances_{train,val}.json shapes/{train,val}/
// so `mkdir datasets && ln -s /path/to/coco datasets/coco` is all COCO needs.
//
// Your own COCO-format dataset, without writing code: set
//   DETKIT_DATASETS_REGISTER="my_train=/data/my/train.json:/data/my/images;my_val=val.json:imgs"
// and use the names (`DATASETS.TRAIN "('my_train',)"`). Entries are separated by ';', each is
// name=<annotation json>:<image root> split at its last ':'; relative paths are relative to the
// current directory. In C++: register_coco_instances("my_train", json_file, image_root). More in
// docs/DATASETS.md.
#include <map>
#include <string>
#include <vector>

#include "detkit/data/coco/coco.h"

namespace detkit::data {

/// Where a named dataset lives.
struct DatasetFiles {
  std::string name;
  std::string json_file;
  std::string image_root;
  bool under_datasets_root;  // a built-in name, resolved under the datasets root
};

class DatasetCatalog {
 public:
  /// The built-in names only.
  DatasetCatalog();
  /// The built-in names plus the entries of $DETKIT_DATASETS_REGISTER.
  static DatasetCatalog from_environment();

  /// Adds a dataset; an error when the name is taken or a field is empty.
  void register_coco_instances(const std::string& name, const std::string& json_file,
                               const std::string& image_root);
  /// Adds "name=<json>:<image root>;..." entries; `source` (e.g. the variable's name) is named in
  /// errors about a malformed entry.
  void register_from_string(const std::string& entries, const std::string& source);

  bool contains(const std::string& name) const { return entries_.count(name) > 0; }
  /// Registered names, sorted.
  std::vector<std::string> names() const;
  /// The files of `name`, built-in paths joined to `datasets_root`. An unknown name is an error
  /// listing the registered names and the closest one.
  DatasetFiles get(const std::string& name, const std::string& datasets_root) const;
  /// Same, under datasets_root().
  DatasetFiles get(const std::string& name) const { return get(name, datasets_root()); }

  /// $DETKIT_DATASETS, or "./datasets" when unset or empty.
  static std::string datasets_root();

 private:
  struct Entry {
    std::string json_file, image_root;
    bool builtin;  // paths relative to the datasets root
  };
  std::map<std::string, Entry> entries_;
};

/// The process-wide catalog (built-ins plus $DETKIT_DATASETS_REGISTER, read at first use).
/// Register datasets before starting threads that read it.
DatasetCatalog& global_catalog();

/// Registers into the global catalog (Detectron2's register_coco_instances), and gives the
/// name's metadata (global_metadata()) the files and evaluator type "coco".
void register_coco_instances(const std::string& name, const std::string& json_file,
                             const std::string& image_root);

/// Loads a dataset of the global catalog by name and records its things in the name's metadata
/// (an error when they differ from what the metadata holds, e.g. a coco_* file with other
/// categories). A missing annotation file is an error naming the datasets root and how to set it.
CocoDataset load_dataset(const std::string& name, const CocoLoadOptions& options = {});

}  // namespace detkit::data
