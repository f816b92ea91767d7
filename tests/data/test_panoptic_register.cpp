// DETKIT_DATASETS_REGISTER's panoptic forms: register_coco_panoptic_separated and
// register_coco_panoptic without code, beside the instances form, with errors naming the entry.
#include <gtest/gtest.h>

#include <string>

#include "detkit/data/catalog.h"
#include "tests/support/error_of.h"

namespace detkit::data {
namespace {

using testing::error_of;
using testing::expect_contains;

TEST(PanopticRegister, SeparatedStandardAndInstancesForms) {
  DatasetCatalog catalog;
  catalog.register_from_string(
      "p = panoptic_separated:d/inst.json:d/img:d/pan.json:d/pan:d/stuff ;"
      "q=panoptic::d/img2:d/pan2.json:d/pan2;"
      "r=panoptic:d/inst3.json:d/img3:d/pan3.json:d/pan3;"
      "s=d/ann.json:d/img4;"
      "t=panoptic:d/img5",  // two fields: the instances form, its json named "panoptic"
      "TEST_SOURCE");
  const DatasetFiles separated = catalog.get("p_separated", "/root");
  EXPECT_EQ(separated.kind, DatasetKind::kCocoPanopticSeparated);
  EXPECT_FALSE(separated.under_datasets_root);
  EXPECT_EQ(separated.json_file, "d/inst.json");
  EXPECT_EQ(separated.image_root, "d/img");
  EXPECT_EQ(separated.panoptic_json, "d/pan.json");
  EXPECT_EQ(separated.panoptic_root, "d/pan");
  EXPECT_EQ(separated.sem_seg_root, "d/stuff");
  const DatasetFiles stuffonly = catalog.get("p_stuffonly", "/root");
  EXPECT_EQ(stuffonly.kind, DatasetKind::kSemSeg);
  EXPECT_EQ(stuffonly.image_root, "d/img");
  EXPECT_EQ(stuffonly.sem_seg_root, "d/stuff");
  EXPECT_FALSE(catalog.contains("p"));

  const DatasetFiles standard = catalog.get("q", "/root");
  EXPECT_EQ(standard.kind, DatasetKind::kCocoPanoptic);
  EXPECT_EQ(standard.json_file, "");
  EXPECT_EQ(standard.image_root, "d/img2");
  EXPECT_EQ(standard.panoptic_json, "d/pan2.json");
  EXPECT_EQ(standard.panoptic_root, "d/pan2");
  EXPECT_EQ(catalog.get("r", "/root").json_file, "d/inst3.json");

  EXPECT_EQ(catalog.get("s", "/root").kind, DatasetKind::kCocoInstances);
  EXPECT_EQ(catalog.get("s", "/root").json_file, "d/ann.json");
  EXPECT_EQ(catalog.get("t", "/root").kind, DatasetKind::kCocoInstances);
  EXPECT_EQ(catalog.get("t", "/root").json_file, "panoptic");
  EXPECT_EQ(catalog.get("t", "/root").image_root, "d/img5");
}

TEST(PanopticRegister, MalformedEntriesNamed) {
  DatasetCatalog catalog;
  expect_contains(
      error_of([&] { catalog.register_from_string("p=panoptic_separated:a:b:c", "SRC"); }),
      "SRC: entry 'p=panoptic_separated:a:b:c': 4 ':'-separated fields after 'p=', "
      "expected 6: name=panoptic_separated:<instances json>:<image root>:<panoptic "
      "json>:<panoptic root>:<sem_seg root>");
  expect_contains(error_of([&] { catalog.register_from_string("q=panoptic:a:b:c:d:e", "SRC"); }),
                  "6 ':'-separated fields after 'q=', expected 5: "
                  "name=panoptic:[<instances json>]:<image root>:<panoptic json>:<panoptic root>");
  expect_contains(
      error_of([&] { catalog.register_from_string("p=panoptic_separated:a::c:d:e", "SRC"); }),
      "SRC: entry 'p=panoptic_separated:a::c:d:e': register_coco_panoptic_separated(\"p\", ...): "
      "the image root must be given");
  expect_contains(error_of([&] { catalog.register_from_string("q=panoptic:a:b::d", "SRC"); }),
                  "register_coco_panoptic(\"q\", ...): the panoptic json must be given");
  expect_contains(error_of([&] { catalog.register_from_string("nothing here", "SRC"); }),
                  "SRC: entry 'nothing here' is not name=<annotation json>:<image root> (or "
                  "name=panoptic_separated:");
  catalog.register_from_string("ok=panoptic_separated:a:b:c:d:e", "SRC");
  expect_contains(
      error_of([&] { catalog.register_from_string("ok_stuffonly=x.json:imgs", "SRC"); }),
      "dataset 'ok_stuffonly' is already registered");
}

}  // namespace
}  // namespace detkit::data
