#include "detkit/data/detection_dataset.h"

#include <algorithm>

#include "detkit/data/catalog.h"
#include "detkit/utils/error.h"

namespace detkit::data {
namespace {

std::string describe(const std::vector<Category>& categories, size_t k) {
  if (k >= categories.size()) return "nothing";
  return "id " + std::to_string(categories[k].id) + " '" + categories[k].name + "'";
}

}  // namespace

DetectionDataset::DetectionDataset(std::vector<std::shared_ptr<const CocoDataset>> parts,
                                   std::vector<std::string> names)
    : parts_(std::move(parts)), names_(std::move(names)) {
  if (parts_.empty()) throw Error("DetectionDataset: no dataset given");
  if (names_.size() != parts_.size()) {
    throw Error("DetectionDataset: " + std::to_string(parts_.size()) + " datasets but " +
                std::to_string(names_.size()) + " names");
  }
  const auto& first = parts_.front()->categories();
  for (size_t p = 0; p < parts_.size(); ++p) {
    const auto& categories = parts_[p]->categories();
    const size_t n = std::max(first.size(), categories.size());
    for (size_t k = 0; k < n; ++k) {
      const bool same = k < first.size() && k < categories.size() &&
                        first[k].id == categories[k].id && first[k].name == categories[k].name;
      if (!same) {
        throw Error("datasets '" + names_.front() + "' and '" + names_[p] +
                    "' have different categories: class index " + std::to_string(k) + " is " +
                    describe(first, k) + " in the first and " + describe(categories, k) +
                    " in the second");
      }
    }
    for (size_t i = 0; i < parts_[p]->num_images(); ++i) locations_.push_back({parts_[p].get(), i});
  }
  if (locations_.empty()) {
    std::string all;
    for (const auto& name : names_) all += (all.empty() ? "'" : ", '") + name + "'";
    throw Error("no images to use in " + all);
  }
}

DetectionDataset::Location DetectionDataset::at(size_t i) const {
  if (i >= locations_.size()) {
    throw Error("DetectionDataset: image " + std::to_string(i) + " out of range (size " +
                std::to_string(locations_.size()) + ")");
  }
  return locations_[i];
}

std::vector<std::vector<int>> DetectionDataset::image_categories() const {
  std::vector<std::vector<int>> out;
  out.reserve(locations_.size());
  for (const Location& loc : locations_) {
    std::vector<int> classes;
    for (AnnotationView a : loc.dataset->annotations_of(loc.image_index)) {
      classes.push_back(a.class_index());
    }
    out.push_back(std::move(classes));
  }
  return out;
}

DetectionDataset get_detection_dataset(const std::vector<std::string>& names,
                                       const CocoLoadOptions& options) {
  if (names.empty()) throw Error("no dataset named (DATASETS.TRAIN / DATASETS.TEST is empty)");
  std::vector<std::shared_ptr<const CocoDataset>> parts;
  for (const auto& name : names) {
    parts.push_back(std::make_shared<const CocoDataset>(load_dataset(name, options)));
  }
  return DetectionDataset(std::move(parts), names);
}

CocoLoadOptions train_load_options_from_config(const config::CfgNode& cfg) {
  CocoLoadOptions options;
  options.filter_empty_annotations = cfg.get_bool("DATALOADER.FILTER_EMPTY_ANNOTATIONS");
  if (cfg.get_bool("MODEL.KEYPOINT_ON")) {
    options.min_keypoints_per_image =
        static_cast<int>(cfg.get_int("MODEL.ROI_KEYPOINT_HEAD.MIN_KEYPOINTS_PER_IMAGE"));
  }
  return options;
}

}  // namespace detkit::data
