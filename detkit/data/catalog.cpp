#include "detkit/data/catalog.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "detkit/data/builtin_meta_panoptic.h"
#include "detkit/data/coco/lvis.h"
#include "detkit/data/metadata.h"
#include "detkit/data/sem_seg_dataset.h"
#include "detkit/data/voc/pascal_voc.h"
#include "detkit/utils/error.h"
#include "detkit/utils/strings.h"

namespace detkit::data {
namespace {

constexpr const char* kRootVariable = "DETKIT_DATASETS";
constexpr const char* kRegisterVariable = "DETKIT_DATASETS_REGISTER";
constexpr const char* kPanopticSeparatedForm =
    "name=panoptic_separated:<instances json>:<image root>:<panoptic json>:<panoptic root>:"
    "<sem_seg root>";
constexpr const char* kPanopticStandardForm =
    "name=panoptic:[<instances json>]:<image root>:<panoptic json>:<panoptic root>";
constexpr const char* kPascalVocForm = "name=voc:<VOC folder>:<split>:<year>";
constexpr const char* kLvisForm = "name=lvis:<annotation json>:<image root>";
const std::string kOtherForms =
    fmt::format("(or {}, or {}, or {}, or {})", kPanopticSeparatedForm, kPanopticStandardForm,
                kLvisForm, kPascalVocForm);

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

// Detectron2's _PREDEFINED_SPLITS_LVIS: every image root is coco/ (file names from coco_url).
constexpr Builtin kLvisBuiltins[] = {
    {"lvis_v1_train", "lvis/lvis_v1_train.json", "coco/"},
    {"lvis_v1_val", "lvis/lvis_v1_val.json", "coco/"},
    {"lvis_v1_test_dev", "lvis/lvis_v1_image_info_test_dev.json", "coco/"},
    {"lvis_v1_test_challenge", "lvis/lvis_v1_image_info_test_challenge.json", "coco/"},
    {"lvis_v0.5_train", "lvis/lvis_v0.5_train.json", "coco/"},
    {"lvis_v0.5_val", "lvis/lvis_v0.5_val.json", "coco/"},
    {"lvis_v0.5_val_rand_100", "lvis/lvis_v0.5_val_rand_100.json", "coco/"},
    {"lvis_v0.5_test", "lvis/lvis_v0.5_image_info_test.json", "coco/"},
};
constexpr Builtin kLvisCocofiedBuiltins[] = {
    {"lvis_v0.5_train_cocofied", "lvis/lvis_v0.5_train_cocofied.json", "coco/"},
    {"lvis_v0.5_val_cocofied", "lvis/lvis_v0.5_val_cocofied.json", "coco/"},
};

struct PanopticBuiltin {
  const char* name;  // the instances name is this without "_panoptic"
  const char* panoptic_root;
  const char* panoptic_json;
  const char* sem_seg_root;  // made by Detectron2's datasets/prepare_panoptic_fpn.py
  // When set, the instances file and images (else those of the instances name).
  const char* instances_json = nullptr;
  const char* image_root = nullptr;
};

// Detectron2's _PREDEFINED_SPLITS_COCO_PANOPTIC: each gives a "_separated" name, its "_stuffonly"
// twin and a standard one.
constexpr PanopticBuiltin kPanopticBuiltins[] = {
    {"coco_2017_train_panoptic", "coco/panoptic_train2017",
     "coco/annotations/panoptic_train2017.json", "coco/panoptic_stuff_train2017"},
    {"coco_2017_val_panoptic", "coco/panoptic_val2017", "coco/annotations/panoptic_val2017.json",
     "coco/panoptic_stuff_val2017"},
    {"coco_2017_val_100_panoptic", "coco/panoptic_val2017_100",
     "coco/annotations/panoptic_val2017_100.json", "coco/panoptic_stuff_val2017_100"},
    // The shapes on stuff textures (make_shapes with ShapesOptions::panoptic): images of their
    // own, not shapes_train's.
    {"shapes_train_panoptic", "shapes_panoptic/panoptic_train",
     "shapes_panoptic/annotations/panoptic_train.json", "shapes_panoptic/panoptic_stuff_train",
     "shapes_panoptic/annotations/instances_train.json", "shapes_panoptic/train"},
    {"shapes_val_panoptic", "shapes_panoptic/panoptic_val",
     "shapes_panoptic/annotations/panoptic_val.json", "shapes_panoptic/panoptic_stuff_val",
     "shapes_panoptic/annotations/instances_val.json", "shapes_panoptic/val"},
};

struct PascalVocBuiltin {
  const char* name;
  const char* dirname;  // relative to the datasets root
  const char* split;
  int year;
};

// Detectron2's register_all_pascal_voc.
constexpr PascalVocBuiltin kPascalVocBuiltins[] = {
    {"voc_2007_trainval", "VOC2007", "trainval", 2007},
    {"voc_2007_train", "VOC2007", "train", 2007},
    {"voc_2007_val", "VOC2007", "val", 2007},
    {"voc_2007_test", "VOC2007", "test", 2007},
    {"voc_2012_trainval", "VOC2012", "trainval", 2012},
    {"voc_2012_train", "VOC2012", "train", 2012},
    {"voc_2012_val", "VOC2012", "val", 2012},
};

std::string join_path(const std::string& root, const std::string& relative) {
  if (root.empty()) return relative;
  return root.back() == '/' ? root + relative : root + "/" + relative;
}

void require_file(const DatasetFiles& files, const std::string& file, const char* what) {
  if (files.under_datasets_root && !std::filesystem::exists(file)) {
    throw Error(
        fmt::format("dataset '{}': {} '{}' does not exist (datasets root '{}', set with {})",
                    files.name, what, file, DatasetCatalog::datasets_root(), kRootVariable));
  }
}

// The stuff classes of a user's separated dataset, from its panoptic file's categories (built-in
// names come with COCO's, under Detectron2's shortened names).
void record_separated_stuff(const std::string& name, const DatasetFiles& files) {
  if (files.under_datasets_root) return;
  if (!std::filesystem::exists(files.panoptic_json)) {
    spdlog::warn(
        "dataset '{}': panoptic file '{}' does not exist: no stuff classes in its metadata", name,
        files.panoptic_json);
    return;
  }
  set_stuff_from_categories(global_metadata().get(name),
                            read_panoptic_categories(files.panoptic_json), /*separated=*/true);
}

void check_panoptic_registration(const char* function, const std::string& name,
                                 const std::vector<std::pair<const char*, std::string>>& fields) {
  for (const auto& [field, value] : fields) {
    if (value.empty())
      throw Error(fmt::format("{}(\"{}\", ...): {} must be given", function, name, field));
  }
}

}  // namespace

DatasetCatalog::DatasetCatalog() {
  for (const Builtin& b : kBuiltins) entries_[b.name] = {b.json_file, b.image_root, true};
  for (const Builtin& b : kLvisBuiltins)
    entries_[b.name] = {b.json_file, b.image_root, true, DatasetKind::kLvisInstances};
  for (const Builtin& b : kLvisCocofiedBuiltins)
    entries_[b.name] = {b.json_file, b.image_root, true, DatasetKind::kLvisCocofied};
  for (const PanopticBuiltin& p : kPanopticBuiltins) {
    const std::string name = p.name;
    const Entry instances =
        p.instances_json ? Entry{p.instances_json, p.image_root, true}
                         : entries_.at(name.substr(0, name.size() - std::strlen("_panoptic")));
    entries_[name + "_separated"] = {instances.json_file,
                                     instances.image_root,
                                     true,
                                     DatasetKind::kCocoPanopticSeparated,
                                     p.sem_seg_root,
                                     p.panoptic_json,
                                     p.panoptic_root};
    entries_[name + "_stuffonly"] = {
        "", instances.image_root, true, DatasetKind::kSemSeg, p.sem_seg_root, p.panoptic_json, ""};
    entries_[name] = {
        instances.json_file, instances.image_root, true, DatasetKind::kCocoPanoptic, "",
        p.panoptic_json,     p.panoptic_root};
  }
  for (const PascalVocBuiltin& v : kPascalVocBuiltins)
    entries_[v.name] = {"", v.dirname, true, DatasetKind::kPascalVoc, "", "", "", v.split, v.year};
}

void DatasetCatalog::require_free(const std::string& name) const {
  auto it = entries_.find(name);
  if (it != entries_.end()) {
    throw Error(fmt::format("dataset '{}' is already registered (json file '{}', image root '{}')",
                            name, it->second.json_file, it->second.image_root));
  }
}

void DatasetCatalog::add(const std::string& name, Entry entry) {
  require_free(name);
  entries_[name] = std::move(entry);
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
  add(name, {json_file, image_root, false});
}

void DatasetCatalog::register_lvis_instances(const std::string& name, const std::string& json_file,
                                             const std::string& image_root) {
  if (name.empty() || json_file.empty() || image_root.empty()) {
    throw Error(
        fmt::format("register_lvis_instances(\"{}\", \"{}\", \"{}\"): the name, the json "
                    "file and the image root must all be given",
                    name, json_file, image_root));
  }
  add(name, {json_file, image_root, false, DatasetKind::kLvisInstances});
}

void DatasetCatalog::register_coco_panoptic_separated(const std::string& name,
                                                      const std::string& image_root,
                                                      const std::string& panoptic_root,
                                                      const std::string& panoptic_json,
                                                      const std::string& sem_seg_root,
                                                      const std::string& instances_json) {
  check_panoptic_registration("register_coco_panoptic_separated", name,
                              {{"the name", name},
                               {"the image root", image_root},
                               {"the panoptic root", panoptic_root},
                               {"the panoptic json", panoptic_json},
                               {"the sem_seg root", sem_seg_root},
                               {"the instances json", instances_json}});
  // Both names or neither: a taken "_stuffonly" must not leave "_separated" registered.
  require_free(name + "_separated");
  require_free(name + "_stuffonly");
  add(name + "_separated", {instances_json, image_root, false, DatasetKind::kCocoPanopticSeparated,
                            sem_seg_root, panoptic_json, panoptic_root});
  // The panoptic file is kept only for its stuff classes (record_separated_stuff).
  add(name + "_stuffonly",
      {"", image_root, false, DatasetKind::kSemSeg, sem_seg_root, panoptic_json, ""});
}

void DatasetCatalog::register_coco_panoptic(const std::string& name, const std::string& image_root,
                                            const std::string& panoptic_root,
                                            const std::string& panoptic_json,
                                            const std::string& instances_json) {
  check_panoptic_registration("register_coco_panoptic", name,
                              {{"the name", name},
                               {"the image root", image_root},
                               {"the panoptic root", panoptic_root},
                               {"the panoptic json", panoptic_json}});
  add(name, {instances_json, image_root, false, DatasetKind::kCocoPanoptic, "", panoptic_json,
             panoptic_root});
}

void DatasetCatalog::register_pascal_voc(const std::string& name, const std::string& dirname,
                                         const std::string& split, int year) {
  if (name.empty() || dirname.empty() || split.empty())
    throw Error(
        fmt::format("register_pascal_voc(\"{}\", \"{}\", \"{}\", {}): the name, the VOC "
                    "folder and the split must all be given",
                    name, dirname, split, year));
  if (year != 2007 && year != 2012)
    throw Error(
        fmt::format("register_pascal_voc(\"{}\", ...): year {} is not 2007 or 2012 (the "
                    "evaluator's metric: 11-point for 2007, area otherwise)",
                    name, year));
  add(name, {"", dirname, false, DatasetKind::kPascalVoc, "", "", "", split, year});
}

void DatasetCatalog::register_from_string(const std::string& entries, const std::string& source) {
  for (const std::string& raw : split(entries, ';')) {
    std::string entry = trim(raw);
    if (entry.empty()) continue;
    size_t equals = entry.find('=');
    size_t colon = entry.rfind(':');
    if (equals == std::string::npos || colon == std::string::npos || colon < equals) {
      throw Error(fmt::format("{}: entry '{}' is not name=<annotation json>:<image root> {}",
                              source, entry, kOtherForms));
    }
    std::string name = trim(entry.substr(0, equals));
    try {
      std::vector<std::string> fields = split(entry.substr(equals + 1), ':');
      for (std::string& field : fields) field = trim(field);
      // A panoptic kind word first; with two fields it is still the instances form, whose json
      // file may be named "panoptic" (entries written before the panoptic forms keep working).
      if (fields.size() > 2 && (fields[0] == "panoptic_separated" || fields[0] == "panoptic")) {
        register_panoptic_fields(name, fields);
        continue;
      }
      if (fields.size() > 2 && fields[0] == "voc") {
        int year = 0;
        if (fields.size() != 4 || (fields[3] != "2007" && fields[3] != "2012"))
          throw Error(fmt::format("expected {} with year 2007 or 2012", kPascalVocForm));
        year = std::stoi(fields[3]);
        register_pascal_voc(name, fields[1], fields[2], year);
        continue;
      }
      if (fields.size() > 2 && fields[0] == "lvis") {
        if (fields.size() != 3) {
          throw Error(fmt::format("{} ':'-separated fields after '{}=', expected 3: {}",
                                  fields.size(), name, kLvisForm));
        }
        register_lvis_instances(name, fields[1], fields[2]);
        continue;
      }
      std::string json_file = trim(entry.substr(equals + 1, colon - equals - 1));
      std::string image_root = trim(entry.substr(colon + 1));
      register_coco_instances(name, json_file, image_root);
    } catch (const Error& e) {
      throw Error(fmt::format("{}: entry '{}': {}", source, entry, e.what()));
    }
  }
}

void DatasetCatalog::register_panoptic_fields(const std::string& name,
                                              const std::vector<std::string>& fields) {
  const bool separated = fields[0] == "panoptic_separated";
  const size_t expected = separated ? 6 : 5;
  if (fields.size() != expected) {
    throw Error(fmt::format("{} ':'-separated fields after '{}=', expected {}: {}", fields.size(),
                            name, expected,
                            separated ? kPanopticSeparatedForm : kPanopticStandardForm));
  }
  // One field order for both kinds: instances json, image root, panoptic json, panoptic root,
  // sem_seg root.
  if (separated) {
    register_coco_panoptic_separated(name, fields[2], fields[4], fields[3], fields[5], fields[1]);
  } else {
    register_coco_panoptic(name, fields[2], fields[4], fields[3], fields[1]);
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
  // Built-in paths are relative to the datasets root; an empty one stays empty.
  auto path = [&](const std::string& p) {
    return entry.builtin && !p.empty() ? join_path(datasets_root, p) : p;
  };
  return {name,
          path(entry.json_file),
          path(entry.image_root),
          entry.builtin,
          entry.kind,
          path(entry.sem_seg_root),
          path(entry.panoptic_json),
          path(entry.panoptic_root),
          entry.voc_split,
          entry.voc_year};
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
  // The entry may have been made before registration: give it the files.
  record_files(global_catalog().get(name), global_metadata().get(name));
}

void register_lvis_instances(const std::string& name, const std::string& json_file,
                             const std::string& image_root) {
  global_catalog().register_lvis_instances(name, json_file, image_root);
  record_files(global_catalog().get(name), global_metadata().get(name));
}

void register_coco_panoptic_separated(const std::string& name, const std::string& image_root,
                                      const std::string& panoptic_root,
                                      const std::string& panoptic_json,
                                      const std::string& sem_seg_root,
                                      const std::string& instances_json) {
  global_catalog().register_coco_panoptic_separated(name, image_root, panoptic_root, panoptic_json,
                                                    sem_seg_root, instances_json);
  for (const std::string registered : {name + "_separated", name + "_stuffonly"})
    record_files(global_catalog().get(registered), global_metadata().get(registered));
}

void register_coco_panoptic(const std::string& name, const std::string& image_root,
                            const std::string& panoptic_root, const std::string& panoptic_json,
                            const std::string& instances_json) {
  global_catalog().register_coco_panoptic(name, image_root, panoptic_root, panoptic_json,
                                          instances_json);
  record_files(global_catalog().get(name), global_metadata().get(name));
}

void register_pascal_voc(const std::string& name, const std::string& dirname,
                         const std::string& split, int year) {
  global_catalog().register_pascal_voc(name, dirname, split, year);
  record_files(global_catalog().get(name), global_metadata().get(name));
}

void record_files(const DatasetFiles& files, Metadata& m) {
  m.json_file = files.json_file;
  m.image_root = files.image_root;
  if (files.kind == DatasetKind::kPascalVoc) {  // Detectron2's register_pascal_voc metadata
    m.evaluator_type = "pascal_voc";
    m.dirname = files.image_root;
    m.split = files.voc_split;
    m.year = files.voc_year;
    std::vector<int64_t> ids(voc_class_names().size());
    for (size_t k = 0; k < ids.size(); ++k) ids[k] = static_cast<int64_t>(k);
    m.set_things(voc_class_names(), ids);
    return;
  }
  if (files.kind == DatasetKind::kCocoInstances) {
    m.evaluator_type = "coco";
    return;
  }
  if (files.kind == DatasetKind::kLvisInstances || files.kind == DatasetKind::kLvisCocofied) {
    m.evaluator_type = "lvis";
    return;
  }
  if (files.kind == DatasetKind::kSemSeg) {  // Detectron2's "_stuffonly" metadata
    m.evaluator_type = "sem_seg";
    m.sem_seg_root = files.sem_seg_root;
    m.ignore_label = 255;
    return;
  }
  m.evaluator_type = "coco_panoptic_seg";
  m.panoptic_json = files.panoptic_json;
  m.panoptic_root = files.panoptic_root;
  m.sem_seg_root = files.sem_seg_root;
  m.ignore_label = 255;
  if (files.kind == DatasetKind::kCocoPanoptic) m.label_divisor = 1000;
}

CocoDataset load_dataset(const std::string& name, const CocoLoadOptions& options) {
  DatasetFiles files = global_catalog().get(name);
  if (files.kind == DatasetKind::kCocoPanoptic) {
    throw Error(fmt::format(
        "dataset '{}' is a COCO panoptic dataset (records of '{}'): load it with "
        "load_panoptic_dataset; to train Panoptic FPN or evaluate it, use '{}_separated'",
        name, files.panoptic_json, name));
  }
  if (files.kind == DatasetKind::kSemSeg) {
    // No instances, so nothing for `options`' filters: Detectron2 filters only datasets whose
    // records have "annotations", and a stuffonly dataset keeps every image.
    require_file(files, files.sem_seg_root, "label map folder");
    CocoDataset dataset = load_sem_seg(files.sem_seg_root, files.image_root);
    record_separated_stuff(name, files);
    return dataset;
  }
  if (files.kind == DatasetKind::kPascalVoc) {
    require_file(files, join_path(files.image_root, "ImageSets/Main/" + files.voc_split + ".txt"),
                 "Pascal VOC split file");
    CocoDataset dataset = load_voc_instances(files.image_root, files.voc_split, voc_class_names());
    // Detectron2 drops images without objects from training data of any format.
    if (options.filter_empty_annotations) filter_empty_annotations(dataset);
    record_things(name, dataset);
    return dataset;
  }
  require_file(files, files.json_file, "annotation file");
  if (files.kind == DatasetKind::kLvisCocofied) {
    // Detectron2's COCOfied LVIS: COCO's category ids, classes numbered as COCO's 80 things
    // (its COCO metadata), whatever categories the file lists.
    CocoLoadOptions lvis_options = options;
    lvis_options.lvis_any_category_ids = true;
    CocoDataset dataset = load_lvis_json(files.json_file, files.image_root, lvis_options);
    const Metadata& coco = global_metadata().get(name);  // COCO's things (builtin_meta.cpp)
    std::vector<Category> categories(coco.thing_classes.size());
    for (size_t k = 0; k < categories.size(); ++k) {
      categories[k].id = coco.thing_dataset_ids[k];
      categories[k].name = coco.thing_classes[k];
    }
    dataset.use_categories(std::move(categories));
    record_things(name, dataset);
    return dataset;
  }
  if (files.kind == DatasetKind::kLvisInstances) {
    CocoDataset dataset = load_lvis_json(files.json_file, files.image_root, options);
    record_things(name, dataset);
    return dataset;
  }
  CocoDataset dataset = load_coco_json(files.json_file, files.image_root, options);
  record_things(name, dataset);
  if (files.kind == DatasetKind::kCocoPanopticSeparated) {
    dataset.set_sem_seg_root(files.sem_seg_root);
    record_separated_stuff(name, files);
  }
  return dataset;
}

PanopticDataset load_panoptic_dataset(const std::string& name) {
  const DatasetFiles files = global_catalog().get(name);
  if (files.kind != DatasetKind::kCocoPanoptic) {
    throw Error(fmt::format(
        "dataset '{}' is not a COCO panoptic dataset (register_coco_panoptic); load it with "
        "load_dataset",
        name));
  }
  require_file(files, files.panoptic_json, "panoptic file");
  PanopticDataset dataset =
      load_coco_panoptic_json(files.panoptic_json, files.image_root, files.panoptic_root);
  std::vector<std::string> thing_classes;
  std::vector<int64_t> thing_ids;
  for (const PanopticCategory& c : dataset.categories()) {
    if (!c.isthing) continue;
    thing_classes.push_back(c.name);
    thing_ids.push_back(c.id);
  }
  Metadata& m = global_metadata().get(name);
  m.set_things(thing_classes, thing_ids);
  set_stuff_from_categories(m, dataset.categories(), /*separated=*/false);
  return dataset;
}

}  // namespace detkit::data
