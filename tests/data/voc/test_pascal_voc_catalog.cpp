// Pascal VOC in the catalog: Detectron2's register_all_pascal_voc names under the datasets root,
// their metadata (the 20 classes, dirname, split, year, evaluator "pascal_voc"), the
// DETKIT_DATASETS_REGISTER form name=voc:<dir>:<split>:<year>, and loading a registered folder.
#include <gtest/gtest.h>

#include <filesystem>

#include "detkit/data/catalog.h"
#include "detkit/data/metadata.h"
#include "detkit/data/voc/pascal_voc.h"
#include "tests/support/error_of.h"

namespace detkit::data {
namespace {

using detkit::testing::error_of;
using detkit::testing::expect_contains;

const std::string kVocCatalogFixtures = std::string(DETKIT_SHARED_DIR) + "/fixtures/voc_eval/";

TEST(PascalVocCatalog, BuiltinNamesAsDetectron2) {
  const DatasetCatalog catalog;
  for (const auto& [name, dir, split, year] :
       {std::tuple{"voc_2007_trainval", "VOC2007", "trainval", 2007},
        std::tuple{"voc_2007_train", "VOC2007", "train", 2007},
        std::tuple{"voc_2007_val", "VOC2007", "val", 2007},
        std::tuple{"voc_2007_test", "VOC2007", "test", 2007},
        std::tuple{"voc_2012_trainval", "VOC2012", "trainval", 2012},
        std::tuple{"voc_2012_train", "VOC2012", "train", 2012},
        std::tuple{"voc_2012_val", "VOC2012", "val", 2012}}) {
    const DatasetFiles files = catalog.get(name, "/data");
    EXPECT_EQ(files.kind, DatasetKind::kPascalVoc) << name;
    EXPECT_EQ(files.image_root, std::string("/data/") + dir) << name;
    EXPECT_EQ(files.voc_split, split) << name;
    EXPECT_EQ(files.voc_year, year) << name;
    EXPECT_TRUE(files.under_datasets_root);
  }
  EXPECT_FALSE(catalog.contains("voc_2012_test"));  // Detectron2 has none either
  const Metadata& m = global_metadata().get("voc_2012_val");
  EXPECT_EQ(m.evaluator_type, "pascal_voc");
  EXPECT_EQ(m.thing_classes, voc_class_names());
  EXPECT_EQ(m.thing_classes.size(), 20u);
  EXPECT_EQ(m.split, "val");
  EXPECT_EQ(m.year, 2012);
  EXPECT_EQ(m.dirname, DatasetCatalog::datasets_root() + "/VOC2012");
}

TEST(PascalVocCatalog, RegisterFromStringAndItsErrors) {
  DatasetCatalog catalog;
  catalog.register_from_string("my_voc = voc:/x/VOC2007:val:2007; other=voc:/y:trainval:2012",
                               "TEST");
  const DatasetFiles files = catalog.get("my_voc");
  EXPECT_EQ(files.kind, DatasetKind::kPascalVoc);
  EXPECT_EQ(files.image_root, "/x/VOC2007");
  EXPECT_EQ(files.voc_split, "val");
  EXPECT_EQ(files.voc_year, 2007);
  EXPECT_EQ(catalog.get("other").voc_year, 2012);
  expect_contains(
      error_of([&] { catalog.register_from_string("bad=voc:/x:val:2010", "TEST"); }),
      "TEST: entry 'bad=voc:/x:val:2010': expected name=voc:<VOC folder>:<split>:<year>");
  expect_contains(error_of([&] { catalog.register_from_string("bad=voc:/x:val", "TEST"); }),
                  "expected name=voc:");
  expect_contains(error_of([&] { catalog.register_pascal_voc("v", "/x", "val", 2010); }),
                  "year 2010 is not 2007 or 2012");
  expect_contains(error_of([&] { catalog.register_pascal_voc("v", "", "val", 2007); }),
                  "must all be given");
  expect_contains(error_of([&] { catalog.register_pascal_voc("my_voc", "/x", "val", 2007); }),
                  "dataset 'my_voc' is already registered");
}

TEST(PascalVocCatalog, LoadsARegisteredFolder) {
  if (!std::filesystem::exists(kVocCatalogFixtures + "VOC2007"))
    GTEST_SKIP() << "shared fixtures absent: " << kVocCatalogFixtures;
  register_pascal_voc("voc_catalog_fixture", kVocCatalogFixtures + "VOC2007", "test", 2007);
  const CocoDataset all = load_dataset("voc_catalog_fixture");
  EXPECT_EQ(all.num_images(), 80u);
  EXPECT_EQ(all.num_annotations(), 425u);
  CocoLoadOptions training;
  training.filter_empty_annotations = true;
  EXPECT_EQ(load_dataset("voc_catalog_fixture", training).num_images(), 69u);  // 11 have none
  const Metadata& m = global_metadata().get("voc_catalog_fixture");
  EXPECT_EQ(m.evaluator_type, "pascal_voc");
  EXPECT_EQ(m.year, 2007);
  EXPECT_EQ(m.thing_dataset_ids.size(), 20u);
  expect_contains(error_of([] { load_dataset("voc_2007_trainval"); }),
                  "dataset 'voc_2007_trainval': Pascal VOC split file '" +
                      DatasetCatalog::datasets_root() +
                      "/VOC2007/ImageSets/Main/trainval.txt' "
                      "does not exist");
}

}  // namespace
}  // namespace detkit::data
