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
// and COCO panoptic as Detectron2's builtin.py (S = train2017, val2017 or val2017_100; the images
// and instances file of coco_2017_{train,val,val_100}):
//   coco_2017_{train,val,val_100}_panoptic_separated   instances + coco/panoptic_stuff_S/ labels
//   coco_2017_{train,val,val_100}_panoptic             coco/annotations/panoptic_S.json
//   coco_2017_{train,val,val_100}_panoptic_stuffonly   images of coco/{train,val}2017/ with a
//                                                      label map in coco/panoptic_stuff_S/
//   all with the panoptic PNGs in coco/panoptic_S/
// and Pascal VOC as Detectron2's register_all_pascal_voc (year 2007: VOC2007/, 2012: VOC2012/):
//   voc_2007_{trainval,train,val,test}, voc_2012_{trainval,train,val}
//                                          VOC<year>/ImageSets/Main/<split>.txt, Annotations/,
//                                          JPEGImages/
// and LVIS as Detectron2's _PREDEFINED_SPLITS_LVIS (images under coco/, named by their coco_url):
//   lvis_v1_{train,val}                     lvis/lvis_v1_{train,val}.json
//   lvis_v1_test_{dev,challenge}            lvis/lvis_v1_image_info_test_{dev,challenge}.json
//   lvis_v0.5_{train,val,val_rand_100}      lvis/lvis_v0.5_{train,val,val_rand_100}.json
//   lvis_v0.5_test                          lvis/lvis_v0.5_image_info_test.json
//   lvis_v0.5_{train,val}_cocofied          lvis/lvis_v0.5_{train,val}_cocofied.json (COCO's
//                                           category ids; classes and metadata COCO's 80)
// so `mkdir datasets && ln -s /path/to/coco datasets/coco` is all COCO needs.
//
// Your own datasets, without writing code: set
//   DETKIT_DATASETS_REGISTER="my_train=/data/my/train.json:/data/my/images;my_val=val.json:imgs"
// and use the names (`DATASETS.TRAIN "('my_train',)"`). Entries are separated by ';', each one of
//   name=<annotation json>:<image root>     register_coco_instances: `name` (split at the last ':')
//   name=lvis:<annotation json>:<image root>
//                                           register_lvis_instances: `name`
//   name=panoptic_separated:<instances json>:<image root>:<panoptic json>:<panoptic root>:<sem_seg
//   root>
//                                           register_coco_panoptic_separated: `name`_separated and
//                                           `name`_stuffonly
//   name=panoptic:[<instances json>]:<image root>:<panoptic json>:<panoptic root>
//                                           register_coco_panoptic: `name`
//   name=voc:<VOC folder>:<split>:<year>    register_pascal_voc: `name` (year 2007 or 2012)
// The lvis and panoptic forms split at every ':' (their paths cannot hold one) and keep one field
// order: instances json, image root, panoptic json, panoptic root, sem_seg root. Relative paths are
// relative to the current directory. In C++: register_coco_instances("my_train", json_file,
// image_root) and the functions below. More in docs/DATASETS.md.
#include <map>
#include <string>
#include <vector>

#include "detkit/data/coco/coco.h"
#include "detkit/data/coco/panoptic_dataset.h"

namespace detkit::data {

struct Metadata;

/// How a named dataset's records are made (Detectron2's three COCO registrations).
enum class DatasetKind {
  kCocoInstances,          // register_coco_instances: a COCO instances file
  kCocoPanopticSeparated,  // register_coco_panoptic_separated: instances + semantic label maps
  kCocoPanoptic,           // register_coco_panoptic: a COCO panoptic file and its PNGs
  kSemSeg,                 // load_sem_seg: images and label maps paired by stem ("_stuffonly")
  kPascalVoc,              // register_pascal_voc: a VOC folder (image_root) and split
  kLvisInstances,          // register_lvis_instances: an LVIS file (load_lvis_json)
  kLvisCocofied,           // lvis_v0.5_*_cocofied: an LVIS file with COCO's categories
};

/// Where a named dataset lives.
struct DatasetFiles {
  std::string name;
  std::string json_file;  // the instances file (may be empty for kCocoPanoptic; empty: kSemSeg)
  std::string image_root;
  bool under_datasets_root;  // a built-in name, resolved under the datasets root
  DatasetKind kind = DatasetKind::kCocoInstances;
  std::string sem_seg_root;  // kCocoPanopticSeparated, kSemSeg: <stem>.png label maps
  std::string panoptic_json, panoptic_root;  // the panoptic kinds (kSemSeg: its stuff classes)
  std::string voc_split;  // kPascalVoc: ImageSets/Main/<voc_split>.txt under image_root
  int voc_year = 0;       // kPascalVoc: 2007 (11-point AP) or 2012 (area)
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
  /// Detectron2's register_lvis_instances: an LVIS file whose images are under `image_root` as
  /// their coco_url names them (lvis.h).
  void register_lvis_instances(const std::string& name, const std::string& json_file,
                               const std::string& image_root);
  /// Detectron2's register_coco_panoptic_separated: registers `name` + "_separated", the
  /// instances of `instances_json` with each image's semantic labels at
  /// sem_seg_root/<image file stem>.png (stuff classes 1.., things 0, 255 ignored:
  /// datasets/prepare_panoptic_fpn.py's output, `detkit prepare-panoptic-fpn`); the panoptic
  /// files are for evaluation. Also registers `name` + "_stuffonly": the images of image_root
  /// with a label map in sem_seg_root, without instances (load_sem_seg), for SemanticSegmentor.
  void register_coco_panoptic_separated(const std::string& name, const std::string& image_root,
                                        const std::string& panoptic_root,
                                        const std::string& panoptic_json,
                                        const std::string& sem_seg_root,
                                        const std::string& instances_json);
  /// Detectron2's register_coco_panoptic: registers `name`, the records of `panoptic_json`
  /// (load_panoptic_dataset). `instances_json` may be empty.
  void register_coco_panoptic(const std::string& name, const std::string& image_root,
                              const std::string& panoptic_root, const std::string& panoptic_json,
                              const std::string& instances_json);
  /// Detectron2's register_pascal_voc: `name`, the images of ImageSets/Main/<split>.txt under the
  /// VOC folder `dirname` (Annotations/, JPEGImages/) with the 20 VOC classes; `year` 2007 or
  /// 2012 picks the evaluator's metric.
  void register_pascal_voc(const std::string& name, const std::string& dirname,
                           const std::string& split, int year);
  /// Adds the entries of a DETKIT_DATASETS_REGISTER string (';'-separated; the syntax at the top
  /// of this file); `source` (e.g. the variable's name) is named in errors about a malformed
  /// entry.
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
    DatasetKind kind = DatasetKind::kCocoInstances;
    std::string sem_seg_root, panoptic_json, panoptic_root;
    std::string voc_split;
    int voc_year = 0;
  };
  void require_free(const std::string& name) const;  // an error when `name` is taken
  // A panoptic entry of register_from_string: fields[0] is its kind word.
  void register_panoptic_fields(const std::string& name, const std::vector<std::string>& fields);
  void add(const std::string& name, Entry entry);
  std::map<std::string, Entry> entries_;
};

/// The process-wide catalog (built-ins plus $DETKIT_DATASETS_REGISTER, read at first use).
/// Register datasets before starting threads that read it.
DatasetCatalog& global_catalog();

/// Registers into the global catalog (Detectron2's register_coco_instances), and gives the
/// name's metadata (global_metadata()) the files and evaluator type "coco".
void register_coco_instances(const std::string& name, const std::string& json_file,
                             const std::string& image_root);

/// Registers into the global catalog and gives the metadata the files and evaluator type "lvis"
/// (Detectron2's register_lvis_instances); loading it fills the metadata's things, their
/// class_image_count and class_frequency from the file's categories.
void register_lvis_instances(const std::string& name, const std::string& json_file,
                             const std::string& image_root);

/// Registers into the global catalog and gives the metadata the files (Detectron2's functions of
/// the same names; see DatasetCatalog).
void register_coco_panoptic_separated(const std::string& name, const std::string& image_root,
                                      const std::string& panoptic_root,
                                      const std::string& panoptic_json,
                                      const std::string& sem_seg_root,
                                      const std::string& instances_json);
void register_coco_panoptic(const std::string& name, const std::string& image_root,
                            const std::string& panoptic_root, const std::string& panoptic_json,
                            const std::string& instances_json);
void register_pascal_voc(const std::string& name, const std::string& dirname,
                         const std::string& split, int year);

/// What a dataset's files tell its metadata: the files, the evaluator type ("coco", "lvis",
/// "coco_panoptic_seg", "pascal_voc" with the VOC classes, dirname, split and year), the ignore
/// label and label divisor of the panoptic kinds.
void record_files(const DatasetFiles& files, Metadata& m);

/// Loads a dataset of the global catalog by name and records its things in the name's metadata
/// (an error when they differ from what the metadata holds, e.g. a coco_* file with other
/// categories). A missing annotation file is an error naming the datasets root and how to set it.
/// A "panoptic separated" name gives its instances with each image's sem_seg_path set, and its
/// metadata the stuff classes of its panoptic file (built-in names have COCO's). A "panoptic
/// standard" name is an error pointing to load_panoptic_dataset. A "_stuffonly" name (kSemSeg)
/// gives its images without annotations (load_sem_seg; `options`' filters do not apply) and its
/// metadata the stuff classes as its "_separated" twin.
CocoDataset load_dataset(const std::string& name, const CocoLoadOptions& options = {});

/// Loads a "panoptic standard" dataset (register_coco_panoptic) by name, and records its things
/// and stuff in its metadata (an error when they differ from what the metadata holds). Another
/// kind of name is an error.
PanopticDataset load_panoptic_dataset(const std::string& name);

}  // namespace detkit::data
