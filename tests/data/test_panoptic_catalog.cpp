// Detectron2's COCO panoptic registrations: the built-in names under the datasets root as
// builtin.py lays them out, their metadata (COCO's stuff classes as builtin_meta.py gives them),
// and a user's datasets registered in code on the shared panoptic fixture.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "detkit/data/catalog.h"
#include "detkit/data/metadata.h"
#include "tests/data/coco_test_files.h"
#include "tests/support/error_of.h"

namespace detkit::data {
namespace {

using testing::error_of;
using testing::expect_contains;

// $DETKIT_DATASETS set for a scope.
class DatasetsRootForTest {
 public:
  explicit DatasetsRootForTest(const std::string& root) {
    if (const char* old = std::getenv("DETKIT_DATASETS")) previous_ = old;
    ::setenv("DETKIT_DATASETS", root.c_str(), 1);
  }
  ~DatasetsRootForTest() {
    if (previous_) {
      ::setenv("DETKIT_DATASETS", previous_->c_str(), 1);
    } else {
      ::unsetenv("DETKIT_DATASETS");
    }
  }

 private:
  std::optional<std::string> previous_;
};

const std::string kPanopticFixture = std::string(DETKIT_SHARED_DIR) + "/fixtures/panoptic_pq/";
const std::string kSemSegFixture =
    std::string(DETKIT_SHARED_DIR) + "/fixtures/detectron2_panoptic/sem_seg";

bool have_panoptic_fixture() {
  return std::filesystem::exists(kPanopticFixture + "panoptic_val2017_synth.json") &&
         std::filesystem::is_directory(kSemSegFixture) && testing::have_coco_tiny();
}

#define DETKIT_SKIP_WITHOUT_PANOPTIC_FIXTURE()                                             \
  if (!have_panoptic_fixture())                                                            \
  GTEST_SKIP() << "the shared panoptic fixtures are absent: expected " << kPanopticFixture \
               << "panoptic_val2017_synth.json, " << kSemSegFixture << " and coco_tiny"

TEST(PanopticCatalog, BuiltinNamesAsDetectron2LaysThemOut) {
  const DatasetCatalog catalog;
  const std::string root = "/data/sets";
  for (const std::string split : {"train2017", "val2017", "val2017_100"}) {
    const std::string prefix = split == "train2017" ? "coco_2017_train"
                               : split == "val2017" ? "coco_2017_val"
                                                    : "coco_2017_val_100";
    const std::string instances = catalog.get(prefix, root).json_file;
    const DatasetFiles separated = catalog.get(prefix + "_panoptic_separated", root);
    EXPECT_EQ(separated.kind, DatasetKind::kCocoPanopticSeparated);
    EXPECT_EQ(separated.json_file, instances);
    EXPECT_EQ(separated.image_root, catalog.get(prefix, root).image_root);
    EXPECT_EQ(separated.sem_seg_root, root + "/coco/panoptic_stuff_" + split);
    EXPECT_EQ(separated.panoptic_root, root + "/coco/panoptic_" + split);
    EXPECT_EQ(separated.panoptic_json, root + "/coco/annotations/panoptic_" + split + ".json");
    const DatasetFiles standard = catalog.get(prefix + "_panoptic", root);
    EXPECT_EQ(standard.kind, DatasetKind::kCocoPanoptic);
    EXPECT_EQ(standard.json_file, instances);
    EXPECT_EQ(standard.sem_seg_root, "");
    EXPECT_EQ(standard.panoptic_root, separated.panoptic_root);
    EXPECT_EQ(standard.panoptic_json, separated.panoptic_json);
  }
  EXPECT_EQ(catalog.get("coco_2017_val_100_panoptic", root).image_root, root + "/coco/val2017");
  EXPECT_EQ(catalog.get("coco_2017_val_100_panoptic", root).json_file,
            root + "/coco/annotations/instances_val2017_100.json");
}

TEST(PanopticCatalog, BuiltinMetadataHasCocosStuff) {
  const Metadata& separated = global_metadata().get("coco_2017_val_panoptic_separated");
  EXPECT_EQ(separated.evaluator_type, "coco_panoptic_seg");
  EXPECT_EQ(separated.ignore_label, 255);
  EXPECT_EQ(separated.thing_classes.size(), 80u);
  ASSERT_EQ(separated.stuff_classes.size(), 54u);  // "things" + 53
  EXPECT_EQ(separated.stuff_classes[0], "things");
  EXPECT_EQ(separated.stuff_dataset_ids[0], 0);
  EXPECT_EQ(separated.stuff_classes[1], "banner");
  EXPECT_EQ(separated.stuff_dataset_ids[1], 92);
  EXPECT_EQ(separated.stuff_classes[40], "sky");  // "sky-other-merged", shortened
  EXPECT_EQ(separated.stuff_dataset_ids[40], 187);
  EXPECT_EQ(separated.stuff_classes[53], "rug");
  EXPECT_EQ(separated.stuff_contiguous_id(200), 53);
  EXPECT_EQ(separated.sem_seg_root,
            DatasetCatalog::datasets_root() + "/coco/panoptic_stuff_val2017");

  const Metadata& standard = global_metadata().get("coco_2017_train_panoptic");
  EXPECT_EQ(standard.evaluator_type, "coco_panoptic_seg");
  EXPECT_EQ(standard.label_divisor, 1000);
  ASSERT_EQ(standard.stuff_classes.size(), 133u);  // things and stuff, one contiguous list
  EXPECT_EQ(standard.stuff_classes[0], "person");
  EXPECT_EQ(standard.stuff_classes[80], "banner");
  EXPECT_EQ(standard.stuff_classes[119], "sky-other-merged");
  EXPECT_EQ(standard.stuff_dataset_ids[132], 200);
  EXPECT_EQ(standard.panoptic_json,
            DatasetCatalog::datasets_root() + "/coco/annotations/panoptic_train2017.json");
}

TEST(PanopticCatalog, StandardNamesLoadThroughTheirOwnLoader) {
  expect_contains(error_of([] { load_dataset("coco_2017_val_panoptic"); }),
                  "dataset 'coco_2017_val_panoptic' is a COCO panoptic dataset");
  expect_contains(error_of([] { load_panoptic_dataset("coco_2017_val"); }),
                  "dataset 'coco_2017_val' is not a COCO panoptic dataset");
  DatasetsRootForTest root("/nonexistent/datasets");
  expect_contains(error_of([] { load_panoptic_dataset("coco_2017_val_panoptic"); }),
                  "panoptic file '/nonexistent/datasets/coco/annotations/panoptic_val2017.json' "
                  "does not exist");
}

TEST(PanopticCatalog, UserPanopticDatasetFromTheFixture) {
  DETKIT_SKIP_WITHOUT_PANOPTIC_FIXTURE();
  register_coco_panoptic("synth_val_panoptic", testing::coco_tiny_images("val2017"),
                         kPanopticFixture + "panoptic_val2017_synth",
                         kPanopticFixture + "panoptic_val2017_synth.json",
                         testing::coco_tiny_json("val2017"));
  const PanopticDataset ds = load_panoptic_dataset("synth_val_panoptic");
  EXPECT_EQ(ds.num_images(), 80u);
  EXPECT_EQ(ds.num_segments(), 1020u);  // the fixture's README
  size_t crowd = 0;
  for (size_t i = 0; i < ds.num_images(); ++i) {
    const PanopticImageView image = ds.image(i);
    EXPECT_TRUE(std::filesystem::exists(image.image_path)) << image.image_path;
    EXPECT_TRUE(std::filesystem::exists(image.pan_seg_path)) << image.pan_seg_path;
    for (const PanopticSegment& s : image.segments) crowd += s.iscrowd;
  }
  EXPECT_EQ(crowd, 11u);
  const Metadata& m = global_metadata().get("synth_val_panoptic");
  EXPECT_EQ(m.evaluator_type, "coco_panoptic_seg");
  EXPECT_EQ(m.panoptic_root, kPanopticFixture + "panoptic_val2017_synth");
  EXPECT_EQ(m.json_file, testing::coco_tiny_json("val2017"));
  EXPECT_EQ(m.thing_classes.size(), 80u);
  ASSERT_EQ(m.stuff_classes.size(), 83u);
  EXPECT_EQ(m.stuff_classes[80], "band-top");
  EXPECT_EQ(m.stuff_contiguous_id(203), 82);
}

TEST(PanopticCatalog, UserSeparatedDatasetFromTheFixture) {
  DETKIT_SKIP_WITHOUT_PANOPTIC_FIXTURE();
  register_coco_panoptic_separated("synth_val", testing::coco_tiny_images("val2017"),
                                   kPanopticFixture + "panoptic_val2017_synth",
                                   kPanopticFixture + "panoptic_val2017_synth.json", kSemSegFixture,
                                   testing::coco_tiny_json("val2017"));
  const CocoDataset ds = load_dataset("synth_val_separated");
  EXPECT_EQ(ds.num_images(), 80u);
  const size_t i = ds.find_image(532481).value();
  EXPECT_EQ(ds.sem_seg_path(i).value(), kSemSegFixture + "/000000532481.png");
  EXPECT_TRUE(std::filesystem::exists(*ds.sem_seg_path(i)));
  const Metadata& m = global_metadata().get("synth_val_separated");
  EXPECT_EQ(m.evaluator_type, "coco_panoptic_seg");
  EXPECT_EQ(m.sem_seg_root, kSemSegFixture);
  EXPECT_EQ(m.panoptic_json, kPanopticFixture + "panoptic_val2017_synth.json");
  EXPECT_EQ(m.ignore_label, 255);
  EXPECT_EQ(m.stuff_classes,
            (std::vector<std::string>{"things", "band-top", "band-middle", "band-bottom"}));
  EXPECT_EQ(m.stuff_dataset_ids, (std::vector<int64_t>{0, 201, 202, 203}));
  expect_contains(
      error_of([] { register_coco_panoptic_separated("synth_val", "i", "p", "p.json", "s", "j"); }),
      "dataset 'synth_val_separated' is already registered");
  expect_contains(
      error_of([] { register_coco_panoptic_separated("x", "i", "p", "p.json", "", "j"); }),
      "the sem_seg root must be given");
}

}  // namespace
}  // namespace detkit::data
