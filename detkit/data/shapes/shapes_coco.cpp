#include "detkit/data/shapes/shapes_coco.h"

#include <nlohmann/json.hpp>

#include "detkit/data/shapes/shapes_geometry.h"
#include "detkit/structures/mask_ops.h"

namespace detkit::data {

std::vector<ShapesAnnotation> annotate_scene(const ShapesScene& scene) {
  std::vector<ShapesAnnotation> annotations;
  annotations.reserve(scene.objects.size());
  for (const SceneObject& object : scene.objects) {
    ShapesAnnotation annotation;
    annotation.category_id = object.category_id;
    annotation.segmentation = trace_mask_outline(object.visible).polygons;
    const mask_ops::RLE rle =
        mask_ops::from_polygons(annotation.segmentation, scene.image.rows, scene.image.cols);
    annotation.area = static_cast<double>(mask_ops::area(rle));
    annotation.bbox = polygons_bbox(annotation.segmentation);
    annotations.push_back(std::move(annotation));
  }
  return annotations;
}

std::string shapes_coco_json(const std::vector<ShapesImage>& images) {
  using Json = nlohmann::ordered_json;
  Json coco;
  coco["info"] = {{"description", "detkit synthetic shapes: circles, triangles, rectangles"},
                  {"version", "1.0"}};
  coco["images"] = Json::array();
  coco["annotations"] = Json::array();
  int annotation_id = 0;
  for (size_t i = 0; i < images.size(); ++i) {
    const ShapesImage& image = images[i];
    const int image_id = static_cast<int>(i) + 1;
    coco["images"].push_back({{"id", image_id},
                              {"file_name", image.file_name},
                              {"width", image.width},
                              {"height", image.height}});
    for (const ShapesAnnotation& annotation : image.annotations) {
      coco["annotations"].push_back({{"id", ++annotation_id},
                                     {"image_id", image_id},
                                     {"category_id", annotation.category_id},
                                     {"segmentation", annotation.segmentation},
                                     {"area", annotation.area},
                                     {"bbox", annotation.bbox},
                                     {"iscrowd", 0}});
    }
  }
  coco["categories"] = Json::array();
  for (int id : {kCircle, kTriangle, kRectangle}) {
    coco["categories"].push_back(
        {{"id", id}, {"name", shape_category_name(id)}, {"supercategory", "shape"}});
  }
  return coco.dump();
}

}  // namespace detkit::data
