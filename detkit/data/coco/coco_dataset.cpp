#include "detkit/data/coco/coco_dataset.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "detkit/utils/error.h"

namespace detkit::data {

// ---- AnnotationView ---------------------------------------------------------------------------

size_t AnnotationView::image_index() const {
  const auto& begins = ds_->image_ann_begin_;
  return static_cast<size_t>(std::upper_bound(begins.begin(), begins.end(), i_) - begins.begin()) -
         1;
}

int64_t AnnotationView::id() const { return ds_->ann_ids_[i_]; }
int64_t AnnotationView::category_id() const { return ds_->categories_[ds_->ann_class_[i_]].id; }
int AnnotationView::class_index() const { return ds_->ann_class_[i_]; }
bool AnnotationView::iscrowd() const { return ds_->ann_iscrowd_[i_] != 0; }
std::array<double, 4> AnnotationView::bbox() const { return ds_->ann_bbox_[i_]; }
double AnnotationView::area() const { return ds_->ann_area_[i_]; }

SegmentationKind AnnotationView::segmentation_kind() const {
  if (ds_->ann_rle_[i_] >= 0) return SegmentationKind::kRle;
  return ds_->ann_poly_count_[i_] > 0 ? SegmentationKind::kPolygons : SegmentationKind::kNone;
}

size_t AnnotationView::num_polygons() const { return ds_->ann_poly_count_[i_]; }

CoordSpan AnnotationView::polygon(size_t k) const {
  if (k >= num_polygons()) {
    throw std::out_of_range(
        fmt::format("polygon {} of annotation id {}, which has {}", k, id(), num_polygons()));
  }
  size_t p = ds_->ann_poly_begin_[i_] + k;
  uint64_t begin = ds_->poly_coord_begin_[p], end = ds_->poly_coord_begin_[p + 1];
  return {ds_->coords_.data() + begin, static_cast<size_t>(end - begin)};
}

std::vector<std::vector<double>> AnnotationView::polygons() const {
  std::vector<std::vector<double>> out;
  out.reserve(num_polygons());
  for (size_t k = 0; k < num_polygons(); ++k) {
    CoordSpan xy = polygon(k);
    out.emplace_back(xy.begin(), xy.end());
  }
  return out;
}

mask_ops::RLE AnnotationView::rle() const {
  int32_t r = ds_->ann_rle_[i_];
  if (r < 0) throw Error(fmt::format("annotation id {} has no RLE segmentation", id()));
  const CocoDataset::Rle& stored = ds_->rles_[r];
  if (stored.compressed) {
    return mask_ops::from_string(ds_->rle_chars_.substr(stored.begin, stored.size), stored.h,
                                 stored.w);
  }
  mask_ops::RLE out;
  out.h = stored.h;
  out.w = stored.w;
  const uint32_t* counts = ds_->rle_counts_.data() + stored.begin;
  out.counts.assign(counts, counts + stored.size);
  return out;
}

mask_ops::RLE AnnotationView::mask_rle() const {
  switch (segmentation_kind()) {
    case SegmentationKind::kRle:
      return rle();
    case SegmentationKind::kPolygons: {
      ImageView image = ds_->image(image_index());
      return mask_ops::from_polygons(polygons(), image.height, image.width);
    }
    case SegmentationKind::kNone:
      break;
  }
  throw Error(fmt::format("annotation id {} has no segmentation", id()));
}

CoordSpan AnnotationView::keypoints() const {
  return {ds_->kpt_values_.data() + ds_->ann_kpt_begin_[i_], ds_->ann_kpt_count_[i_]};
}

int AnnotationView::num_keypoints() const { return ds_->ann_num_keypoints_[i_]; }

// ---- CocoDataset ------------------------------------------------------------------------------

ImageView CocoDataset::image(size_t i) const {
  if (i >= num_images()) {
    throw std::out_of_range(fmt::format("image {} of a dataset of {}", i, num_images()));
  }
  return {i, image_ids_[i], std::string_view(names_).substr(name_begin_[i], name_size_[i]),
          heights_[i], widths_[i]};
}

IdSpan CocoDataset::neg_category_ids(size_t i) const {
  if (i >= num_images()) {
    throw std::out_of_range(fmt::format("image {} of a dataset of {}", i, num_images()));
  }
  if (neg_begin_.empty()) return {nullptr, 0};
  return {image_cat_ids_.data() + neg_begin_[i], neg_size_[i]};
}

IdSpan CocoDataset::not_exhaustive_category_ids(size_t i) const {
  if (i >= num_images()) {
    throw std::out_of_range(fmt::format("image {} of a dataset of {}", i, num_images()));
  }
  if (not_exhaustive_begin_.empty()) return {nullptr, 0};
  return {image_cat_ids_.data() + not_exhaustive_begin_[i], not_exhaustive_size_[i]};
}

void CocoDataset::use_categories(std::vector<Category> categories) {
  for (size_t k = 1; k < categories.size(); ++k) {
    if (categories[k].id <= categories[k - 1].id)
      throw Error(fmt::format("use_categories: ids must be sorted and distinct, got {} after {}",
                              categories[k].id, categories[k - 1].id));
  }
  PodArray<int32_t> classes;
  classes.reserve(ann_class_.size());
  for (size_t a = 0; a < ann_class_.size(); ++a) {
    const int64_t id = categories_[ann_class_[a]].id;
    auto it = std::lower_bound(categories.begin(), categories.end(), id,
                               [](const Category& c, int64_t v) { return c.id < v; });
    if (it == categories.end() || it->id != id) {
      throw Error(
          fmt::format("{}: annotation id {} has category id {}, which is not one of the {} "
                      "categories its classes are taken from",
                      json_file_, ann_ids_[a], id, categories.size()));
    }
    classes.push_back(static_cast<int32_t>(it - categories.begin()));
  }
  ann_class_.swap(classes);
  categories_ = std::move(categories);
}

void CocoDataset::reorder_images(const std::vector<uint32_t>& order) {
  gather(image_ids_, order);
  gather(heights_, order);
  gather(widths_, order);
  gather(name_begin_, order);
  gather(name_size_, order);
  if (neg_begin_.empty()) return;  // a COCO file: no LVIS lists
  gather(neg_begin_, order);
  gather(neg_size_, order);
  gather(not_exhaustive_begin_, order);
  gather(not_exhaustive_size_, order);
}

std::string CocoDataset::image_path(size_t i) const {
  std::string_view name = image(i).file_name;
  if (image_root_.empty()) return std::string(name);
  std::string path = image_root_;
  if (path.back() != '/') path += '/';
  return path.append(name);
}

std::optional<std::string> CocoDataset::sem_seg_path(size_t i) const {
  if (sem_seg_root_.empty()) return std::nullopt;
  std::string_view name = image(i).file_name;
  // The extension is what follows the last '.' of the last path component.
  const size_t slash = name.rfind('/');
  const size_t dot = name.rfind('.');
  if (dot != std::string_view::npos && (slash == std::string_view::npos || dot > slash)) {
    name = name.substr(0, dot);
  }
  std::string path = sem_seg_root_;
  if (path.back() != '/') path += '/';
  return path.append(name).append(".png");
}

std::optional<size_t> CocoDataset::find_image(int64_t image_id) const {
  const int64_t* it = std::lower_bound(image_ids_.begin(), image_ids_.end(), image_id);
  if (it == image_ids_.end() || *it != image_id) return std::nullopt;
  return static_cast<size_t>(it - image_ids_.begin());
}

size_t CocoDataset::num_crowd() const {
  return static_cast<size_t>(std::count(ann_iscrowd_.begin(), ann_iscrowd_.end(), 1));
}

std::vector<std::string> CocoDataset::class_names() const {
  std::vector<std::string> names;
  names.reserve(categories_.size());
  for (const Category& c : categories_) {
    const bool synonym = format_ == JsonFormat::kLvis && !c.synonyms.empty();
    names.push_back(synonym ? c.synonyms.front() : c.name);
  }
  return names;
}

int64_t CocoDataset::category_id_of(int class_index) const {
  if (class_index < 0 || static_cast<size_t>(class_index) >= categories_.size()) {
    throw Error(fmt::format("class index {} is out of range: {} has {} categories", class_index,
                            json_file_, categories_.size()));
  }
  return categories_[class_index].id;
}

int CocoDataset::index_of(int64_t category_id) const {
  auto it = std::lower_bound(categories_.begin(), categories_.end(), category_id,
                             [](const Category& c, int64_t id) { return c.id < id; });
  if (it == categories_.end() || it->id != category_id) {
    throw Error(
        fmt::format("category id {} is not in the categories of {}", category_id, json_file_));
  }
  return static_cast<int>(it - categories_.begin());
}

void CocoDataset::reorder_annotations(const std::vector<uint32_t>& order) {
  gather(ann_ids_, order);
  gather(ann_class_, order);
  gather(ann_iscrowd_, order);
  gather(ann_bbox_, order);
  gather(ann_area_, order);
  gather(ann_poly_begin_, order);
  gather(ann_poly_count_, order);
  gather(ann_rle_, order);
  gather(ann_kpt_begin_, order);
  gather(ann_kpt_count_, order);
  gather(ann_num_keypoints_, order);
}

size_t CocoDataset::memory_bytes() const {
  size_t bytes = json_file_.capacity() + image_root_.capacity() + sem_seg_root_.capacity() +
                 names_.capacity() + rle_chars_.capacity() + rles_.capacity() * sizeof(Rle);
  for (const Category& c : categories_) {
    bytes += sizeof(Category) + c.name.capacity() + c.skeleton.capacity() * sizeof(c.skeleton[0]) +
             c.frequency.capacity();
    for (const std::string& k : c.keypoints) bytes += sizeof(k) + k.capacity();
    for (const std::string& k : c.synonyms) bytes += sizeof(k) + k.capacity();
  }
  bytes += image_ids_.capacity_bytes() + heights_.capacity_bytes() + widths_.capacity_bytes() +
           name_begin_.capacity_bytes() + name_size_.capacity_bytes() +
           image_ann_begin_.capacity_bytes();
  bytes += neg_begin_.capacity_bytes() + neg_size_.capacity_bytes() +
           not_exhaustive_begin_.capacity_bytes() + not_exhaustive_size_.capacity_bytes() +
           image_cat_ids_.capacity_bytes();
  bytes += ann_ids_.capacity_bytes() + ann_class_.capacity_bytes() + ann_iscrowd_.capacity_bytes() +
           ann_bbox_.capacity_bytes() + ann_area_.capacity_bytes() +
           ann_poly_begin_.capacity_bytes() + ann_poly_count_.capacity_bytes() +
           ann_rle_.capacity_bytes() + ann_kpt_begin_.capacity_bytes() +
           ann_kpt_count_.capacity_bytes() + ann_num_keypoints_.capacity_bytes();
  bytes += poly_coord_begin_.capacity_bytes() + coords_.capacity_bytes() +
           rle_counts_.capacity_bytes() + kpt_values_.capacity_bytes();
  return bytes;
}

}  // namespace detkit::data
