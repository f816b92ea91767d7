#pragma once
// Ground truth of a coco_tiny image as Detectron2's train mapper builds it at a given size; the
// fixture's training losses were computed on exactly these targets.
#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "detkit/modeling/meta_arch/generalized_rcnn.h"
#include "detkit/structures/instances.h"
#include "tests/support/detectron2_fixture.h"

namespace detkit::testing {

// Ground truth of one image as Detectron2's train mapper builds it at the fixture's size:
// crowd and polygon-less annotations dropped, polygons and boxes resized, boxes clipped.
inline structures::Instances fixture_targets(const nlohmann::json& coco, int64_t image_id,
                                             int64_t height, int64_t width, int64_t new_h,
                                             int64_t new_w) {
  std::vector<int64_t> category_ids;
  for (const auto& c : coco["categories"]) category_ids.push_back(c["id"]);
  std::sort(category_ids.begin(), category_ids.end());
  const double sx = double(new_w) / width, sy = double(new_h) / height;
  std::vector<float> boxes;
  std::vector<int64_t> classes;
  std::vector<std::vector<structures::Polygon>> polygons;
  for (const auto& a : coco["annotations"]) {
    if (a["image_id"] != image_id || a.value("iscrowd", 0) != 0) continue;
    std::vector<structures::Polygon> polys;
    for (const auto& p : a["segmentation"])
      if (p.size() % 2 == 0 && p.size() >= 6) polys.push_back(p.get<structures::Polygon>());
    if (polys.empty()) continue;
    for (auto& p : polys)
      for (size_t k = 0; k < p.size(); k += 2) p[k] *= sx, p[k + 1] *= sy;
    // Detectron2's BoxMode.convert goes through a float32 tensor; the resize is in float64.
    float x = a["bbox"][0], y = a["bbox"][1], w = a["bbox"][2], h = a["bbox"][3];
    double box[4] = {x * sx, y * sy, double(x + w) * sx, double(y + h) * sy};
    boxes.insert(boxes.end(), {float(std::clamp(box[0], 0.0, double(new_w))),
                               float(std::clamp(box[1], 0.0, double(new_h))),
                               float(std::clamp(box[2], 0.0, double(new_w))),
                               float(std::clamp(box[3], 0.0, double(new_h)))});
    auto it =
        std::lower_bound(category_ids.begin(), category_ids.end(), a["category_id"].get<int64_t>());
    classes.push_back(it - category_ids.begin());
    polygons.push_back(std::move(polys));
  }
  structures::Instances inst(new_h, new_w);
  inst.set("gt_boxes", structures::Boxes(at::tensor(boxes).reshape({-1, 4})));
  inst.set("gt_classes", at::tensor(classes, at::kLong));
  inst.set("gt_masks", structures::PolygonMasks(polygons));
  return inst.index(inst.boxes("gt_boxes").nonempty(1e-5));
}

/// The fixture's two training images with their ground truth, as Detectron2 trained on them.
inline std::vector<modeling::ModelInput> fixture_training_batch(Detectron2Fixture& fx) {
  nlohmann::json meta = nlohmann::json::parse(std::ifstream(fx.dir + "outputs.json"));
  nlohmann::json coco = nlohmann::json::parse(std::ifstream(
      std::string(DETKIT_SHARED_DIR) + "/data/coco_tiny/annotations/instances_val2017.json"));
  std::vector<modeling::ModelInput> batch(2);
  for (int i = 0; i < 2; ++i) {
    const auto& m = meta["images"][i];
    at::Tensor image = fx.outputs().at("train_input_tensor_" + std::to_string(i));
    batch[i].image = image;
    batch[i].instances =
        fixture_targets(coco, m["image_id"], m["height"], m["width"], image.size(1), image.size(2));
  }
  return batch;
}

}  // namespace detkit::testing
