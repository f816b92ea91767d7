// load_voc_instances on the fixture's VOC2007 folder (Detectron2: 80 images, 425 objects) and on
// small folders made in a temp dir: boxes [xmin - 1, ymin - 1, xmax, ymax], difficult objects
// kept, and bad folders refused with the file and the element path.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "detkit/data/voc/pascal_voc.h"
#include "tests/support/error_of.h"
#include "tests/support/temp_dir.h"

namespace detkit::data {
namespace {

namespace fs = std::filesystem;
using detkit::testing::error_of;
using detkit::testing::expect_contains;

const std::string kVocFixtures = std::string(DETKIT_SHARED_DIR) + "/fixtures/voc_eval/";

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

std::string object_xml(const std::string& name, const std::string& box, int difficult = 0) {
  return "<object><name>" + name + "</name><pose>Unspecified</pose><truncated>0</truncated>" +
         "<difficult>" + std::to_string(difficult) + "</difficult><bndbox>" + box +
         "</bndbox></object>";
}

const char* kBox = "<xmin>11</xmin><ymin>33</ymin><xmax>70</xmax><ymax>202</ymax>";

// A VOC folder of its own in this process's temp dir: the split "test" (`split_text`) and an
// annotation file per stem.
fs::path make_voc(const std::string& test_name, const std::string& split_text,
                  const std::map<std::string, std::string>& annotations) {
  static const detkit::testing::TempDir root("pascal_voc_test");
  const fs::path dir = root.path(test_name);
  fs::remove_all(dir);
  write(dir / "ImageSets/Main/test.txt", split_text);
  for (const auto& [stem, xml] : annotations) write(dir / "Annotations" / (stem + ".xml"), xml);
  return dir;
}

std::string annotation_xml(const std::string& objects) {
  return "<annotation><size><width>640</width><height>480</height><depth>3</depth></size>" +
         objects + "</annotation>";
}

TEST(PascalVoc, LoadsTheFixtureAsDetectron2) {
  if (!fs::exists(kVocFixtures + "expected_s1.json"))
    GTEST_SKIP() << "shared fixtures absent: " << kVocFixtures;
  const auto expected = nlohmann::json::parse(std::ifstream(kVocFixtures + "expected_s1.json"));
  const std::string dir = kVocFixtures + "VOC2007";
  const CocoDataset ds = load_voc_instances(dir, "test", voc_class_names());
  EXPECT_EQ(ds.num_images(), expected["detectron2_load_voc_instances"]["images"].get<size_t>());
  EXPECT_EQ(ds.num_annotations(),
            expected["detectron2_load_voc_instances"]["objects"].get<size_t>());
  EXPECT_EQ(ds.class_names(), voc_class_names());
  EXPECT_EQ(ds.num_crowd(), 0u);
  const ImageView first = ds.image(0);
  EXPECT_EQ(first.id, 0);
  EXPECT_EQ(first.file_name, "JPEGImages/000000005001.jpg");
  EXPECT_EQ(ds.image_path(0), dir + "/JPEGImages/000000005001.jpg");
  EXPECT_EQ(first.width, 640);
  EXPECT_EQ(first.height, 480);
  // The file's first object: xmin 11, ymin 33, xmax 70, ymax 202 -> [10, 32, 70, 202] (XYWH).
  const auto annotations = ds.annotations_of(0);
  ASSERT_EQ(annotations.size(), 15u);           // the difficult person (the last one) included
  EXPECT_EQ(annotations[0].class_index(), 14);  // person
  EXPECT_EQ(annotations[0].bbox(), (std::array<double, 4>{10, 32, 60, 170}));
  EXPECT_EQ(annotations[12].class_index(), 1);  // bicycle
  EXPECT_EQ(annotations[14].bbox(), (std::array<double, 4>{523, 26, 116, 288}));
}

TEST(PascalVoc, SplitFileSkipsBlankLinesAndRefusesDuplicates) {
  const fs::path dir =
      make_voc("split", "\n a \n\nb\n", {{"a", annotation_xml("")}, {"b", annotation_xml("")}});
  EXPECT_EQ(read_voc_image_set((dir / "ImageSets/Main/test.txt").string()),
            (std::vector<std::string>{"a", "b"}));
  write(dir / "ImageSets/Main/test.txt", "a\nb\na\n");
  expect_contains(error_of([&] { load_voc_instances(dir.string(), "test", voc_class_names()); }),
                  "test.txt:3: image 'a' is listed twice (first on line 1)");
  write(dir / "ImageSets/Main/test.txt", "a b\n");
  expect_contains(error_of([&] { load_voc_instances(dir.string(), "test", voc_class_names()); }),
                  "test.txt:1: expected one image name");
  expect_contains(error_of([&] { load_voc_instances(dir.string(), "val", voc_class_names()); }),
                  "ImageSets/Main/val.txt does not exist");
}

TEST(PascalVoc, BadAnnotationsNameTheFileAndElement) {
  const auto error_for = [](const std::string& name, const std::string& xml) {
    const fs::path dir = make_voc(name, "a\n", {{"a", xml}});
    return error_of([&] { load_voc_instances(dir.string(), "test", voc_class_names()); });
  };
  expect_contains(error_for("missing_file", ""), "Annotations/a.xml");
  {
    const fs::path dir = make_voc("no_xml", "a\n", {});
    expect_contains(
        error_of([&] { load_voc_instances(dir.string(), "test", voc_class_names()); }),
        "Pascal VOC annotation file " + (dir / "Annotations/a.xml").string() + " does not exist");
  }
  expect_contains(error_for("malformed", "<annotation>\n<size>\n</annotation>"),
                  "a.xml:3: malformed XML: </annotation> closes <size>");
  expect_contains(error_for("no_height", "<annotation><size><width>3</width></size></annotation>"),
                  "a.xml: annotation/size/height is missing");
  expect_contains(error_for("no_xmax", annotation_xml(object_xml("dog",
                                                                 "<xmin>1</xmin><ymin>1</ymin>"
                                                                 "<ymax>2</ymax>"))),
                  "a.xml: annotation/object[0]/bndbox/xmax is missing");
  expect_contains(error_for("bad_number",
                            annotation_xml(object_xml("dog",
                                                      "<xmin>1</xmin><ymin>1</ymin><xmax>x2</xmax>"
                                                      "<ymax>2</ymax>"))),
                  "annotation/object[0]/bndbox/xmax must be a finite number, got 'x2'");
  expect_contains(error_for("unknown_class",
                            annotation_xml(object_xml("dog", kBox) + object_xml("unicorn", kBox))),
                  "a.xml: object[1] has class 'unicorn', which is not one of the dataset's 20");
}

TEST(PascalVoc, FloatBoxesAndDifficultObjectsAreKept) {
  const fs::path dir =
      make_voc("float", "a\n",
               {{"a", annotation_xml(object_xml("cat", kBox, 1) +
                                     object_xml("cat",
                                                "<xmin> 1.5 </xmin><ymin>1</ymin><xmax>10.5</xmax>"
                                                "<ymax>4</ymax>"))}});
  const CocoDataset ds = load_voc_instances(dir.string(), "test", voc_class_names());
  ASSERT_EQ(ds.num_annotations(), 2u);
  EXPECT_EQ(ds.annotation(1).bbox(), (std::array<double, 4>{0.5, 0, 10, 4}));
  EXPECT_EQ(ds.annotation(1).class_index(), 7);
}

}  // namespace
}  // namespace detkit::data
