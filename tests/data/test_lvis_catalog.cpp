// LVIS in the dataset catalog: Detectron2's built-in LVIS names under the datasets root, the
// DETKIT_DATASETS_REGISTER form name=lvis:<json>:<image root>, register_lvis_instances, and the
// metadata loading fills (evaluator "lvis", thing classes, class_image_count, class_frequency).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "detkit/data/catalog.h"
#include "detkit/data/metadata.h"
#include "tests/data/lvis_test_files.h"
#include "tests/support/error_of.h"
#include "tests/support/temp_dir.h"

namespace detkit::data {
namespace {

using testing::error_of;
using testing::expect_contains;

TEST(LvisCatalog, BuiltinsFollowDetectron2sLayout) {
  const DatasetCatalog catalog;
  struct Case {
    const char* name;
    const char* json_file;
  };
  for (const Case& c : {
           Case{"lvis_v1_train", "/r/lvis/lvis_v1_train.json"},
           Case{"lvis_v1_val", "/r/lvis/lvis_v1_val.json"},
           Case{"lvis_v1_test_dev", "/r/lvis/lvis_v1_image_info_test_dev.json"},
           Case{"lvis_v1_test_challenge", "/r/lvis/lvis_v1_image_info_test_challenge.json"},
           Case{"lvis_v0.5_train", "/r/lvis/lvis_v0.5_train.json"},
           Case{"lvis_v0.5_val", "/r/lvis/lvis_v0.5_val.json"},
           Case{"lvis_v0.5_val_rand_100", "/r/lvis/lvis_v0.5_val_rand_100.json"},
           Case{"lvis_v0.5_test", "/r/lvis/lvis_v0.5_image_info_test.json"},
           Case{"lvis_v0.5_train_cocofied", "/r/lvis/lvis_v0.5_train_cocofied.json"},
           Case{"lvis_v0.5_val_cocofied", "/r/lvis/lvis_v0.5_val_cocofied.json"},
       }) {
    const DatasetFiles files = catalog.get(c.name, "/r/");
    EXPECT_EQ(files.json_file, c.json_file);
    EXPECT_EQ(files.image_root, "/r/coco/");  // file names are split folder / file of coco_url
    EXPECT_TRUE(files.under_datasets_root);
    const bool cocofied = std::string(c.name).find("cocofied") != std::string::npos;
    EXPECT_EQ(files.kind, cocofied ? DatasetKind::kLvisCocofied : DatasetKind::kLvisInstances)
        << c.name;
  }
}

TEST(LvisCatalog, ASymlinkedLvisFolderLoads) {
  DETKIT_SKIP_WITHOUT_LVIS_TINY();
  // datasets/coco -> coco_tiny, datasets/lvis/lvis_v1_val.json -> the tiny LVIS file.
  testing::TempDir dir("lvis_root");
  std::filesystem::create_directory_symlink(testing::lvis_tiny_image_root(), dir.path("coco"));
  std::filesystem::create_directories(dir.path("lvis"));
  std::filesystem::create_symlink(testing::lvis_tiny_json(), dir.path("lvis/lvis_v1_val.json"));
  struct Root {  // DETKIT_DATASETS for the load only
    explicit Root(const std::string& path) { ::setenv("DETKIT_DATASETS", path.c_str(), 1); }
    ~Root() { ::unsetenv("DETKIT_DATASETS"); }
  };
  const CocoDataset ds = [&] {
    Root root(dir.path());
    return load_dataset("lvis_v1_val");
  }();
  EXPECT_EQ(ds.num_images(), 80u);
  EXPECT_EQ(ds.format(), JsonFormat::kLvis);
  EXPECT_TRUE(std::filesystem::exists(ds.image_path(0))) << ds.image_path(0);
  const Metadata& m = global_metadata().get("lvis_v1_val");
  EXPECT_EQ(m.evaluator_type, "lvis");
  EXPECT_EQ(m.thing_classes.size(), 80u);
  EXPECT_EQ(m.class_image_count.size(), 80u);
  EXPECT_EQ(m.class_frequency.size(), 80u);
}

// A COCOfied LVIS file (Detectron2's datasets/prepare_cocofied_lvis.py: COCO's category ids, only
// those with instances) gets COCO's 80 classes, numbered as COCO's, as Detectron2's metadata.
TEST(LvisCatalog, CocofiedNamesNumberClassesAsCoco) {
  testing::TempDir dir("lvis_cocofied_root");
  const std::string categories = testing::lvis_category(3, "car_(automobile)", "f", 1) + ", " +
                                 testing::lvis_category(90, "toothbrush", "c", 1);
  const std::string images = testing::lvis_image(7, "http://x/val2017/7.jpg");
  dir.write(
      "lvis/lvis_v0.5_val_cocofied.json",
      testing::lvis_json(
          images, testing::lvis_annotation(1, 7, 90) + ", " + testing::lvis_annotation(2, 7, 3),
          categories));
  dir.write("lvis/lvis_v0.5_train_cocofied.json",
            testing::lvis_json(images, testing::lvis_annotation(1, 7, 12),
                               categories + ", " + testing::lvis_category(12, "x", "r", 1)));
  struct Root {  // DETKIT_DATASETS for the loads only
    explicit Root(const std::string& path) { ::setenv("DETKIT_DATASETS", path.c_str(), 1); }
    ~Root() { ::unsetenv("DETKIT_DATASETS"); }
  } root(dir.path());
  const CocoDataset ds = load_dataset("lvis_v0.5_val_cocofied");
  ASSERT_EQ(ds.num_classes(), 80u);
  ASSERT_EQ(ds.num_annotations(), 2u);
  EXPECT_EQ(ds.annotation(0).class_index(), 79);  // toothbrush, COCO's last
  EXPECT_EQ(ds.annotation(1).class_index(), 2);   // car
  EXPECT_EQ(ds.annotation(1).category_id(), 3);
  const Metadata& m = global_metadata().get("lvis_v0.5_val_cocofied");
  EXPECT_EQ(m.evaluator_type, "lvis");
  ASSERT_EQ(m.thing_classes.size(), 80u);
  EXPECT_EQ(m.thing_classes[2], "car");  // COCO's names, as Detectron2's COCO metadata
  EXPECT_EQ(m.thing_dataset_ids[79], 90);
  // The file lists category 12, which COCO has not: an error naming the annotation.
  expect_contains(error_of([] { load_dataset("lvis_v0.5_train_cocofied"); }),
                  "lvis_v0.5_train_cocofied.json: annotation id 1 has category id 12, which is not "
                  "one of the 80 categories its classes are taken from");
}

TEST(LvisCatalog, RegisterFormAndMetadata) {
  DETKIT_SKIP_WITHOUT_LVIS_TINY();
  DatasetCatalog catalog;
  catalog.register_from_string(
      "tiny_lvis = lvis:" + testing::lvis_tiny_json() + ":" + testing::lvis_tiny_image_root(),
      "VAR");
  const DatasetFiles files = catalog.get("tiny_lvis", "/ignored");
  EXPECT_EQ(files.kind, DatasetKind::kLvisInstances);
  EXPECT_EQ(files.json_file, testing::lvis_tiny_json());
  EXPECT_EQ(files.image_root, testing::lvis_tiny_image_root());
  EXPECT_FALSE(files.under_datasets_root);

  // In the global catalog: the metadata from the file's categories.
  register_lvis_instances("tiny_lvis_from_code", testing::lvis_tiny_json(),
                          testing::lvis_tiny_image_root());
  EXPECT_EQ(global_metadata().get("tiny_lvis_from_code").evaluator_type, "lvis");
  const CocoDataset ds = load_dataset("tiny_lvis_from_code");
  const Metadata& m = global_metadata().get("tiny_lvis_from_code");
  ASSERT_EQ(m.thing_classes.size(), 80u);
  EXPECT_EQ(m.thing_classes[0], "person");
  EXPECT_EQ(m.thing_classes[9], "traffic_light");  // the first synonym
  ASSERT_EQ(m.class_image_count.size(), 80u);
  ASSERT_EQ(m.class_frequency.size(), 80u);
  for (size_t k = 0; k < 80; ++k) {
    EXPECT_EQ(m.thing_dataset_ids[k], static_cast<int64_t>(k) + 1);
    EXPECT_EQ(m.class_image_count[k], ds.categories()[k].image_count);
    EXPECT_EQ(m.class_frequency[k], ds.categories()[k].frequency);
  }
  EXPECT_EQ(m.class_image_count[0], 49);  // person: the README's example category
  EXPECT_EQ(m.class_frequency[0], "f");
  // Loading again sets the same values.
  EXPECT_NO_THROW(load_dataset("tiny_lvis_from_code"));
}

TEST(LvisCatalog, MalformedRegistrations) {
  DatasetCatalog catalog;
  expect_contains(error_of([&] { catalog.register_from_string("a=lvis:x.json:imgs:more", "VAR"); }),
                  "VAR: entry 'a=lvis:x.json:imgs:more': 4 ':'-separated fields after 'a=', "
                  "expected 3: name=lvis:<annotation json>:<image root>");
  expect_contains(error_of([&] { catalog.register_from_string("b=lvis::imgs", "VAR"); }),
                  "register_lvis_instances(\"b\", \"\", \"imgs\"): the name, the json file and the "
                  "image root must all be given");
  expect_contains(error_of([&] { catalog.register_from_string("c=x.json", "VAR"); }),
                  "or name=lvis:<annotation json>:<image root>");
  expect_contains(error_of([&] { catalog.register_from_string("lvis_v1_val=lvis:x:y", "VAR"); }),
                  "dataset 'lvis_v1_val' is already registered");
}

}  // namespace
}  // namespace detkit::data
