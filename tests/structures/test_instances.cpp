#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "tests/support/bools.h"

#include "detkit/structures/instances.h"
#include "detkit/utils/error.h"

namespace detkit::structures {
using testing::bools;

namespace {
Instances make_three() {
  Instances inst(480, 640);
  inst.set("gt_boxes", Boxes(at::arange(12, at::kFloat).reshape({3, 4})));
  inst.set("gt_classes", at::tensor({4, 1, 7}, at::kLong));
  inst.set("gt_masks", PolygonMasks({{{0, 0, 1, 0, 1, 1}}, {}, {{2, 2, 4, 2, 4, 4, 2, 4}}}));
  return inst;
}
}  // namespace

TEST(Instances, FieldsOfEqualLength) {
  Instances inst = make_three();
  EXPECT_EQ(inst.size(), 3);
  EXPECT_EQ(inst.image_height(), 480);
  EXPECT_EQ(inst.field_names(), (std::vector<std::string>{"gt_boxes", "gt_classes", "gt_masks"}));
  EXPECT_EQ(inst.tensor("gt_classes")[2].item<int64_t>(), 7);
  EXPECT_EQ(inst.boxes("gt_boxes").size(), 3);
}

TEST(Instances, RefusesAFieldOfAnotherLength) {
  Instances inst = make_three();
  try {
    inst.set("scores", at::zeros({2}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("'scores' has length 2"), std::string::npos) << message;
    EXPECT_NE(message.find("length 3"), std::string::npos) << message;
  }
  EXPECT_FALSE(inst.has("scores"));
  inst.set("gt_classes", at::tensor({1, 2, 3}, at::kLong));  // replacing with the same length
}

TEST(Instances, ErrorsNameTheField) {
  Instances inst = make_three();
  try {
    inst.tensor("scores");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no field 'scores' (fields: gt_boxes, gt_classes, gt_masks)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(inst.boxes("gt_classes"), Error);
  EXPECT_THROW(inst.remove("nothing"), Error);
}

TEST(Instances, IndexAndCat) {
  Instances inst = make_three();
  Instances picked = inst.index(bools({0, 1, 1}));
  EXPECT_EQ(picked.size(), 2);
  EXPECT_EQ(picked.tensor("gt_classes")[0].item<int64_t>(), 1);
  EXPECT_EQ(picked.polygon_masks("gt_masks").polygons()[1][0].size(), 8u);
  Instances reordered = inst.index(at::tensor({2, 0}, at::kLong));
  EXPECT_EQ(reordered.boxes("gt_boxes").tensor()[0][0].item<float>(), 8.f);
  Instances both = Instances::cat({inst, picked});
  EXPECT_EQ(both.size(), 5);
  EXPECT_EQ(both.polygon_masks("gt_masks").size(), 5);
  Instances other(10, 10);
  EXPECT_THROW(Instances::cat({inst, other}), Error);
}

TEST(Instances, RemoveLastFieldEmpties) {
  Instances inst(5, 5);
  EXPECT_EQ(inst.size(), 0);
  inst.set("scores", at::zeros({4}));
  inst.remove("scores");
  EXPECT_EQ(inst.size(), 0);
  inst.set("scores", at::zeros({2}));
  EXPECT_EQ(inst.size(), 2);
}

}  // namespace detkit::structures
