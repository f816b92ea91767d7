#include "detkit/data/coco/lvis.h"

namespace detkit::data {

CocoDataset load_lvis_json(const std::string& json_file, const std::string& image_root,
                           CocoLoadOptions options) {
  options.format = JsonFormat::kLvis;
  return load_coco_json(json_file, image_root, options);
}

std::vector<std::string> check_lvis_json(const std::string& json_file,
                                         const std::string& image_root, CocoLoadOptions options) {
  options.format = JsonFormat::kLvis;
  return check_coco_json(json_file, image_root, options);
}

}  // namespace detkit::data
