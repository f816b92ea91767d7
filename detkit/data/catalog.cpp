#include "detkit/data/catalog.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "detkit/data/metadata.h"
#include "detkit/utils/error.h"
#include "detkit/utils/strings.h"

namespace detkit::data {
namespace {

constexpr const char* kRootVariable = "DETKIT_DATASETS";
constexpr const char* kRegisterVariable = "DETKIT_DATASETS_REGISTER";

struct Builtin {
  const char* name;
  const char* json_file;   // relative to the datasets root
  const char* image_root;  // relative to the datasets root
};

// Detectron2's data/datasets/builtin.py (_PREDEFINED_SPLITS_COCO["coco"] and
// ["coco_person"]), plus the synthetic
// shapes dataset in the layout its generator (detkit/data/shapes*) writes.
constexpr Builtin kBuiltins[] = {
    {"coco_2014_train", "coco/annotations/instances_train2014.json", "coco/train2014"},
    {"coco_2014_val", "coco/annotations/instances_val2014.json", "coco/val2014"},
    {"coco_2014_minival", "coco/annotations/instances_minival2014.json", "coco/val2014"},
    {"coco_2014_valminusminival", "coco/annotations/instances_valminusminival2014.json",
     "coco/val2014"},
    {"coco_2017_train", "coco/annotations/instances_train2017.json", "coco/train2017"},
    {"coco_2017_val", "coco/annotations/instances_val2017.json", "coco/val2017"},
    {"coco_2017_val_100", "coco/annotations/instances_val2017_100.json", "coco/val2017"},
    {"keypoints_coco_2014_train", "coco/annotations/person_keypoints_train2014.json",
     "coco/train2014"},
    {"keypoints_coco_2014_val", "coco/annotations/person_keypoints_val2014.json", "coco/val2014"},
    {"keypoints_coco_2014_minival", "coco/annotations/person_keypoints_minival2014.json",
     "coco/val2014"},
    {"keypoints_coco_2014_valminusminival",
     "coco/annotations/person_keypoints_valminusminival2014.json", "coco/val2014"},
    {"keypoints_coco_2017_train", "coco/annotations/person_keypoints_train2017.json",
     "coco/train2017"},
    {"keypoints_coco_2017_val", "coco/annotations/person_keypoints_val2017.json", "coco/val2017"},
    {"keypoints_coco_2017_val_100", "coco/annotations/person_keypoints_val2017_100.json",
     "coco/val2017"},
    {"shapes_train", "shapes/annotations/instances_train.json", "shapes/train"},
    {"shapes_val", "shapes/annotations/instances_val.json", "shapes/val"},
    {"shapes_triangles_train", "shapes/annotations/triangle_keypoints_train.json", "shapes/train"},
    {"shapes_triangles_val", "shapes/annotations/triangle_keypoints_val.json", "shapes/val"},
};

std::string join_path(const std::string& root, const std::string& relative) {
  if (root.empty()) return relative;
  return root.back() == '/' ? root + relative : root + "/" + relative;
}

}  // namespace

DatasetCatalog::DatasetCatalog() {
  for (const Builtin& b : kBuiltins) entries_[b.name] = {b.json_file, b.image_root, true};
}

DatasetCatalog DatasetCatalog::from_environment() {
  DatasetCatalog catalog;
  if (const char* entries = std::getenv(kRegisterVariable)) {
    catalog.register_from_string(entries, kRegisterVariable);
  }
  return catalog;
}

void DatasetCatalog::register_coco_instances(const std::string& name, const std::string& json_file,
                                             const std::string& image_root) {
  if (name.empty() || json_file.empty() || image_root.empty()) {
    throw Error(
        fmt::format("register_coco_instances(\"{}\", \"{}\", \"{}\"): the name, the json "
                    "file and the image root must all be given",
                    name, json_file, image_root));
  }
  auto it = entries_.find(name);
  if (it != entries_.end()) {
    throw Error(fmt::format("dataset '{}' is already registered (json file '{}', image root '{}')",
                            name, it->second.json_file, it->second.image_root));
  }
  entries_[name] = {json_file, image_root, false};
}

void DatasetCatalog::register_from_string(const std::string& entries, const std::string& source) {
  for (const std::string& raw : split(entries, ';')) {
    std::string entry = trim(raw);
    if (entry.empty()) continue;
    size_t equals = entry.find('=');
    size_t colon = entry.rfind(':');
    if (equals == std::string::npos || colon == std::string::npos || colon < equals) {
      throw Error(
          fmt::format("{}: entry '{}' is not name=<annotation json>:<image root>", source, entry));
    }
    std::string name = trim(entry.substr(0, equals));
    std::string json_file = trim(entry.substr(equals + 1, colon - equals - 1));
    std::string image_root = trim(entry.substr(colon + 1));
    try {
      register_coco_instances(name, json_file, image_root);
    } catch (const Error& e) {
      throw Error(fmt::format("{}: entry '{}': {}", source, entry, e.what()));
    }
  }
}

std::vector<std::string> DatasetCatalog::names() const {
  std::vector<std::string> names;
  for (const auto& [name, entry] : entries_) names.push_back(name);
  return names;
}

DatasetFiles DatasetCatalog::get(const std::string& name, const std::string& datasets_root) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    std::vector<std::string> known = names();
    std::string closest = closest_match(name, known);
    std::string hint = closest.empty() ? "" : fmt::format(" (did you mean '{}'?)", closest);
    throw Error(
        fmt::format("unknown dataset '{}'{}; registered datasets: {}. Register your own "
                    "with {}=\"name=<annotation json>:<image root>\"",
                    name, hint, join(known, ", "), kRegisterVariable));
  }
  const Entry& entry = it->second;
  if (!entry.builtin) return {name, entry.json_file, entry.image_root, false};
  return {name, join_path(datasets_root, entry.json_file),
          join_path(datasets_root, entry.image_root), true};
}

std::string DatasetCatalog::datasets_root() {
  const char* root = std::getenv(kRootVariable);
  return root && *root ? root : "./datasets";
}

DatasetCatalog& global_catalog() {
  static DatasetCatalog catalog = DatasetCatalog::from_environment();
  return catalog;
}

void register_coco_instances(const std::string& name, const std::string& json_file,
                             const std::string& image_root) {
  global_catalog().register_coco_instances(name, json_file, image_root);
  Metadata& m = global_metadata().get(name);  // made before registration: give it the files
  m.json_file = json_file;
  m.image_root = image_root;
  m.evaluator_type = "coco";
}

CocoDataset load_dataset(const std::string& name, const CocoLoadOptions& options) {
  DatasetFiles files = global_catalog().get(name);
  if (files.under_datasets_root && !std::filesystem::exists(files.json_file)) {
    throw Error(
        fmt::format("dataset '{}': annotation file '{}' does not exist (datasets root "
                    "'{}', set with {})",
                    name, files.json_file, DatasetCatalog::datasets_root(), kRootVariable));
  }
  CocoDataset dataset = load_coco_json(files.json_file, files.image_root, options);
  record_things(name, dataset);
  return dataset;
}

}  // namespace detkit::data
