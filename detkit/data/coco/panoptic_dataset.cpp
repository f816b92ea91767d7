#include "detkit/data/coco/panoptic_dataset.h"

#include "detkit/utils/error.h"

namespace detkit::data {
namespace {

std::string join(const std::string& root, std::string_view name) {
  if (root.empty()) return std::string(name);
  std::string path = root;
  if (path.back() != '/') path += '/';
  return path.append(name);
}

std::string_view stem(std::string_view name) {
  const size_t slash = name.rfind('/');
  const size_t dot = name.rfind('.');
  if (dot == std::string_view::npos || (slash != std::string_view::npos && dot < slash))
    return name;
  return name.substr(0, dot);
}

}  // namespace

PanopticImageView PanopticDataset::image(size_t i) const {
  if (i >= num_images()) {
    throw Error("PanopticDataset: image " + std::to_string(i) + " out of range (" +
                std::to_string(num_images()) + " images)");
  }
  const std::string_view png(names_.data() + name_begin_[i], name_begin_[i + 1] - name_begin_[i]);
  const uint64_t first = segment_begin_[i];
  // Detectron2 assumes COCO's layout: the image has the PNG's stem and the extension ".jpg".
  return {ids_[i],
          join(image_root_, std::string(stem(png)) + ".jpg"),
          join(panoptic_root_, png),
          heights_[i],
          widths_[i],
          {segments_.data() + first, segment_begin_[i + 1] - first}};
}

}  // namespace detkit::data
