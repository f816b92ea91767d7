// The dataset catalog: built-in names under a datasets root, user registration in C++ and through
// DETKIT_DATASETS_REGISTER, and errors for unknown names.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <optional>
#include <string>

#include "detkit/data/catalog.h"
#include "detkit/utils/error.h"
#include "tests/data/coco_test_files.h"
#include "tests/support/scoped_env.h"
#include "tests/support/temp_dir.h"

namespace detkit::data {
namespace {

using testing::ScopedEnv;

// The message of the Error `f` throws.
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CatalogTest, BuiltinsFollowDetectron2sLayout) {
  DatasetCatalog catalog;
  struct Case {
    const char* name;
    const char* json_file;
    const char* image_root;
  };
  for (const Case& c : {
           Case{"coco_2017_train", "/r/coco/annotations/instances_train2017.json",
                "/r/coco/train2017"},
           Case{"coco_2017_val", "/r/coco/annotations/instances_val2017.json", "/r/coco/val2017"},
           Case{"coco_2014_train", "/r/coco/annotations/instances_train2014.json",
                "/r/coco/train2014"},
           Case{"coco_2014_val", "/r/coco/annotations/instances_val2014.json", "/r/coco/val2014"},
           Case{"coco_2014_minival", "/r/coco/annotations/instances_minival2014.json",
                "/r/coco/val2014"},
           Case{"shapes_train", "/r/shapes/annotations/instances_train.json", "/r/shapes/train"},
           Case{"shapes_val", "/r/shapes/annotations/instances_val.json", "/r/shapes/val"},
       }) {
    DatasetFiles files = catalog.get(c.name, "/r/");
    EXPECT_EQ(files.name, c.name);
    EXPECT_EQ(files.json_file, c.json_file);
    EXPECT_EQ(files.image_root, c.image_root);
    EXPECT_TRUE(files.under_datasets_root);
  }
}

TEST(CatalogTest, DatasetsRootComesFromTheEnvironment) {
  {
    ScopedEnv root("DETKIT_DATASETS", nullptr);
    EXPECT_EQ(DatasetCatalog::datasets_root(), "./datasets");
    EXPECT_EQ(DatasetCatalog().get("coco_2017_val").image_root, "./datasets/coco/val2017");
  }
  ScopedEnv root("DETKIT_DATASETS", "/data/sets");
  EXPECT_EQ(DatasetCatalog().get("coco_2017_val").image_root, "/data/sets/coco/val2017");
}

TEST(CatalogTest, ASymlinkedCocoTinyLoadsAsCoco) {
  DETKIT_SKIP_WITHOUT_COCO_TINY();
  testing::TempDir dir("catalog_root");
  std::filesystem::create_directory_symlink(std::string(DETKIT_SHARED_DIR) + "/data/coco_tiny",
                                            dir.path("coco"));
  ScopedEnv root("DETKIT_DATASETS", dir.path().c_str());
  CocoDataset val = load_dataset("coco_2017_val");
  EXPECT_EQ(val.num_images(), 80u);
  EXPECT_EQ(val.num_classes(), 80u);
  EXPECT_EQ(val.image_root(), dir.path("coco/val2017"));
  EXPECT_TRUE(std::filesystem::exists(val.image_path(0))) << val.image_path(0);
  CocoLoadOptions options;
  options.filter_empty_annotations = true;
  EXPECT_LE(load_dataset("coco_2017_train", options).num_images(), 80u);
  std::string message = error_of([] { load_dataset("coco_2014_val"); });
  EXPECT_NE(message.find("dataset 'coco_2014_val': annotation file '" +
                         dir.path("coco/annotations/instances_val2014.json") + "' does not exist"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("DETKIT_DATASETS"), std::string::npos) << message;
}

TEST(CatalogTest, RegisterInCode) {
  DETKIT_SKIP_WITHOUT_COCO_TINY();
  register_coco_instances("tiny_val_from_code", testing::coco_tiny_json("val2017"),
                          testing::coco_tiny_images("val2017"));
  CocoDataset ds = load_dataset("tiny_val_from_code");
  EXPECT_EQ(ds.num_images(), 80u);
  EXPECT_EQ(ds.image_root(), testing::coco_tiny_images("val2017"));
  EXPECT_NE(error_of([] {
              register_coco_instances("tiny_val_from_code", "x.json", "x");
            }).find("dataset 'tiny_val_from_code' is already registered"),
            std::string::npos);
  EXPECT_NE(error_of([] { register_coco_instances("", "x.json", "x"); }).find("must all be given"),
            std::string::npos);
}

TEST(CatalogTest, RegisterFromTheEnvironment) {
  ScopedEnv entries(
      "DETKIT_DATASETS_REGISTER",
      "my_train=/data/my/train.json:/data/my/images; my_val = rel/val.json : imgs ;;");
  DatasetCatalog catalog = DatasetCatalog::from_environment();
  DatasetFiles train = catalog.get("my_train", "/ignored");
  EXPECT_EQ(train.json_file, "/data/my/train.json");
  EXPECT_EQ(train.image_root, "/data/my/images");
  EXPECT_FALSE(train.under_datasets_root);
  DatasetFiles val = catalog.get("my_val", "/ignored");
  EXPECT_EQ(val.json_file, "rel/val.json");
  EXPECT_EQ(val.image_root, "imgs");
  EXPECT_TRUE(catalog.contains("coco_2017_train"));  // built-ins stay
}

TEST(CatalogTest, MalformedRegistrations) {
  DatasetCatalog catalog;
  // The message goes on with the panoptic forms (test_panoptic_register.cpp).
  const std::string forms = " (or name=panoptic_separated:";
  EXPECT_EQ(error_of([&] {
              catalog.register_from_string("a=x.json:imgs;oops", "VAR");
            }).find("VAR: entry 'oops' is not name=<annotation json>:<image root>" + forms),
            0u);
  EXPECT_EQ(error_of([&] {
              catalog.register_from_string("b=x.json", "VAR");
            }).find("VAR: entry 'b=x.json' is not name=<annotation json>:<image root>" + forms),
            0u);
  EXPECT_NE(error_of([&] { catalog.register_from_string("coco_2017_val=x.json:i", "VAR"); })
                .find("VAR: entry 'coco_2017_val=x.json:i': dataset 'coco_2017_val' is already "
                      "registered"),
            std::string::npos);
  EXPECT_TRUE(catalog.contains("a"));  // entries before the bad one were registered
}

TEST(CatalogTest, UnknownNamesListTheRegisteredOnes) {
  DatasetCatalog catalog;
  std::string message = error_of([&] { catalog.get("coco_2017_tran", "/r"); });
  EXPECT_EQ(message.rfind("unknown dataset 'coco_2017_tran' (did you mean 'coco_2017_train'?); "
                          "registered datasets: coco_2014_minival, coco_2014_train, ",
                          0),
            0u)
      << message;
  EXPECT_NE(message.find("shapes_train, shapes_train_panoptic, shapes_train_panoptic_separated, "
                         "shapes_train_panoptic_stuffonly, shapes_triangles_train, "
                         "shapes_triangles_val, shapes_val, shapes_val_panoptic, "
                         "shapes_val_panoptic_separated, shapes_val_panoptic_stuffonly"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("DETKIT_DATASETS_REGISTER"), std::string::npos) << message;
  message = error_of([&] { catalog.get("zzzzzzzzzzzzzzzzzzzzzzz", "/r"); });
  EXPECT_EQ(message.find("did you mean"), std::string::npos) << message;
}

}  // namespace
}  // namespace detkit::data
