// Once the whole file is read: ids checked across arrays, categories numbered, images sorted by
// id and annotations grouped by image (Detectron2's load_coco_json order).
#include "detkit/data/coco/coco_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace detkit::data {
namespace {

// Positions 0..n-1 sorted (stably) by key(position).
template <typename Key>
std::vector<uint32_t> sorted_positions(size_t n, Key key) {
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
  return order;
}

bool contains(std::vector<int64_t>& sorted_ids, int64_t id) {
  return std::binary_search(sorted_ids.begin(), sorted_ids.end(), id);
}

}  // namespace

void CocoDatasetBuilder::check_category_ids() {
  std::vector<Category>& categories = ds_.categories_;
  auto order = sorted_positions(categories.size(), [&](uint32_t i) { return categories[i].id; });
  for (size_t k = 1; k < order.size(); ++k) {
    if (categories[order[k]].id == categories[order[k - 1]].id) {
      problems_.add(fmt::format("categories[{}] and categories[{}] have the same id {}",
                                category_element_[order[k - 1]], category_element_[order[k]],
                                categories[order[k]].id));
    }
  }
  std::vector<Category> sorted;
  sorted.reserve(order.size());
  for (uint32_t i : order) sorted.push_back(std::move(categories[i]));
  categories = std::move(sorted);
}

void CocoDatasetBuilder::check_lvis_category_ids() {
  const std::vector<Category>& categories = ds_.categories_;  // sorted by id
  for (size_t k = 0; k < categories.size(); ++k) {
    if (categories[k].id == static_cast<int64_t>(k) + 1) continue;
    problems_.add(fmt::format(
        "categories: LVIS category ids must be 1..{} (Detectron2's class index is id - 1), but "
        "the file has id {} where id {} is expected",
        categories.size(), categories[k].id, k + 1));
    return;
  }
}

void CocoDatasetBuilder::check_image_ids() {
  auto order =
      sorted_positions(ds_.image_ids_.size(), [&](uint32_t i) { return ds_.image_ids_[i]; });
  for (size_t k = 1; k < order.size(); ++k) {
    if (ds_.image_ids_[order[k]] == ds_.image_ids_[order[k - 1]]) {
      problems_.add(fmt::format("images[{}] and images[{}] have the same id {}",
                                image_element_[order[k - 1]], image_element_[order[k]],
                                ds_.image_ids_[order[k]]));
    }
  }
  ds_.reorder_images(order);
  gather(image_element_, order);
}

void CocoDatasetBuilder::check_annotation_ids() {
  auto order = sorted_positions(ds_.ann_ids_.size(), [&](uint32_t i) { return ds_.ann_ids_[i]; });
  for (size_t k = 1; k < order.size(); ++k) {
    if (ds_.ann_ids_[order[k]] == ds_.ann_ids_[order[k - 1]]) {
      problems_.add(fmt::format("annotations[{}] and annotations[{}] have the same id {}",
                                ann_element_[order[k - 1]], ann_element_[order[k]],
                                ds_.ann_ids_[order[k]]));
    }
  }
}

void CocoDatasetBuilder::resolve_annotations(PodArray<uint32_t>& image_of) {
  std::sort(rejected_image_ids_.begin(), rejected_image_ids_.end());
  std::sort(rejected_category_ids_.begin(), rejected_category_ids_.end());
  const int64_t* ids_begin = ds_.image_ids_.begin();
  const int64_t* ids_end = ds_.image_ids_.end();
  const auto& categories = ds_.categories_;
  image_of.resize(ds_.ann_ids_.size());
  ds_.ann_class_.resize(ds_.ann_ids_.size());
  for (size_t a = 0; a < ds_.ann_ids_.size(); ++a) {
    // Messages are built only when something is wrong.
    auto describe = [&] { return fmt::format("annotations[{}]", ann_element_[a]); };
    auto note = [&] { return fmt::format(" (annotation id {})", ds_.ann_ids_[a]); };

    const int64_t image_id = ann_image_ids_[a];
    const int64_t* image = std::lower_bound(ids_begin, ids_end, image_id);
    if (image == ids_end || *image != image_id) {
      if (!contains(rejected_image_ids_, image_id)) {
        problems_.add(
            fmt::format("{}: image_id {} is not in images{}", describe(), image_id, note()));
      }
    } else {
      image_of[a] = static_cast<uint32_t>(image - ids_begin);
    }

    const int64_t category_id = ann_category_ids_[a];
    auto category = std::lower_bound(categories.begin(), categories.end(), category_id,
                                     [](const Category& c, int64_t id) { return c.id < id; });
    if (category == categories.end() || category->id != category_id) {
      if (!contains(rejected_category_ids_, category_id)) {
        problems_.add(fmt::format("{}: category_id {} is not in categories{}", describe(),
                                  category_id, note()));
      }
    } else {
      ds_.ann_class_[a] = static_cast<int32_t>(category - categories.begin());
    }

    if (category != categories.end() && category->id == category_id &&
        !category->keypoints.empty() && ds_.ann_kpt_count_[a] > 0 &&
        ds_.ann_kpt_count_[a] != 3 * category->keypoints.size()) {
      problems_.add(fmt::format(
          "{}.keypoints: {} values, but category '{}' (id {}) names {} keypoints, so {} are "
          "expected (x, y, v per keypoint){}",
          describe(), ds_.ann_kpt_count_[a], category->name, category_id,
          category->keypoints.size(), 3 * category->keypoints.size(), note()));
    }

    if (ds_.ann_rle_[a] >= 0 && image != ids_end && *image == image_id) {
      const CocoDataset::Rle& rle = ds_.rles_[ds_.ann_rle_[a]];
      const size_t i = image_of[a];
      if (rle.h != ds_.heights_[i] || rle.w != ds_.widths_[i]) {
        problems_.add(fmt::format(
            "{}.segmentation.size: [{}, {}] differs from the height and width [{}, {}] of image "
            "id {}{}",
            describe(), rle.h, rle.w, ds_.heights_[i], ds_.widths_[i], image_id, note()));
      }
    }
  }
}

void CocoDatasetBuilder::group_annotations_by_image(const PodArray<uint32_t>& image_of) {
  // Counting sort: stable, so each image keeps its annotations in file order.
  const size_t num_images = ds_.image_ids_.size();
  ds_.image_ann_begin_.resize(0);
  ds_.image_ann_begin_.resize(num_images + 1);
  for (uint32_t i : image_of) ++ds_.image_ann_begin_[i + 1];
  for (size_t i = 0; i < num_images; ++i) ds_.image_ann_begin_[i + 1] += ds_.image_ann_begin_[i];
  std::vector<uint32_t> order(image_of.size());
  std::vector<uint64_t> next(ds_.image_ann_begin_.begin(), ds_.image_ann_begin_.end() - 1);
  for (uint32_t a = 0; a < image_of.size(); ++a) order[next[image_of[a]]++] = a;
  ds_.reorder_annotations(order);
}

CocoDataset CocoDatasetBuilder::finish() {
  check_category_ids();
  if (options_.format == JsonFormat::kLvis && !options_.lvis_any_category_ids)
    check_lvis_category_ids();
  check_image_ids();
  check_annotation_ids();
  PodArray<uint32_t> image_of;
  resolve_annotations(image_of);
  if (!problems_.empty()) return {};
  group_annotations_by_image(image_of);

  CocoDataset& ds = ds_;
  for (auto* array : {&ds.image_ids_, &ds.ann_ids_}) array->shrink_to_fit();
  for (auto* array :
       {&ds.heights_, &ds.widths_, &ds.ann_class_, &ds.ann_rle_, &ds.ann_num_keypoints_}) {
    array->shrink_to_fit();
  }
  for (auto* array : {&ds.name_begin_, &ds.image_ann_begin_, &ds.poly_coord_begin_}) {
    array->shrink_to_fit();
  }
  for (auto* array : {&ds.name_size_, &ds.ann_poly_begin_, &ds.ann_poly_count_, &ds.rle_counts_,
                      &ds.ann_kpt_begin_, &ds.ann_kpt_count_}) {
    array->shrink_to_fit();
  }
  for (auto* array : {&ds.neg_begin_, &ds.not_exhaustive_begin_}) array->shrink_to_fit();
  for (auto* array : {&ds.neg_size_, &ds.not_exhaustive_size_}) array->shrink_to_fit();
  ds.image_cat_ids_.shrink_to_fit();
  ds.ann_iscrowd_.shrink_to_fit();
  ds.ann_bbox_.shrink_to_fit();
  ds.ann_area_.shrink_to_fit();
  ds.coords_.shrink_to_fit();
  ds.kpt_values_.shrink_to_fit();
  ds.names_.shrink_to_fit();
  ds.rle_chars_.shrink_to_fit();
  ds.rles_.shrink_to_fit();
  return std::move(ds_);
}

}  // namespace detkit::data
