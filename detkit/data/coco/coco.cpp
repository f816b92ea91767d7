#include "detkit/data/coco/coco.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <functional>

#include "detkit/data/coco/coco_builder.h"
#include "detkit/data/coco/json_stream.h"
#include "detkit/utils/strings.h"

namespace detkit::data {
namespace {

const std::vector<std::string> kArrayKeys = {"images", "annotations", "categories"};

// The three top-level arrays must each appear once.
void check_top_level(const std::vector<TopLevelValue>& values, ProblemList& problems) {
  for (const std::string& key : kArrayKeys) {
    size_t count = 0;
    for (const TopLevelValue& value : values) {
      if (value.key != key) continue;
      if (++count == 2) problems.add(fmt::format("top-level key \"{}\" appears twice", key));
      if (value.kind != JsonKind::kArray) {
        problems.add(fmt::format("{}: expected an array, got {} (at byte offset {})", key,
                                 json_kind_name(value.kind), value.offset));
      }
    }
    if (count == 0) problems.add(fmt::format("missing top-level key \"{}\"", key));
  }
}

CocoDataset read_coco(const std::string& json_file, const std::string& image_root,
                      const CocoLoadOptions& options, ProblemList& problems, bool collect) {
  CocoDatasetBuilder builder(json_file, image_root, options, problems);
  std::vector<TopLevelValue> values;
  try {
    values = stream_top_level_arrays(json_file, kArrayKeys, [&](size_t key, ElementBatch& batch) {
      if (key == 0) builder.add_images(batch);
      if (key == 1) builder.add_annotations(batch);
      if (key == 2) builder.add_categories(batch);
    });
  } catch (const Error& e) {
    if (!collect) throw;
    problems.add_full(e.what());  // unreadable or malformed: nothing after it can be checked
    return {};
  }
  check_top_level(values, problems);
  return builder.finish();
}

}  // namespace

CocoDataset load_coco_json(const std::string& json_file, const std::string& image_root,
                           const CocoLoadOptions& options) {
  auto start = std::chrono::steady_clock::now();
  ProblemList problems(json_file, /*collect=*/false);
  CocoDataset dataset = read_coco(json_file, image_root, options, problems, /*collect=*/false);
  const CocoLoadStats& stats = dataset.stats();
  if (stats.dropped_polygons > 0) {
    spdlog::warn("{}: dropped {} polygons with fewer than 3 points or an odd number of coordinates",
                 json_file, stats.dropped_polygons);
  }
  if (stats.dropped_annotations > 0) {
    spdlog::warn("{}: filtered out {} instances without valid segmentation", json_file,
                 stats.dropped_annotations);
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  spdlog::info("Loaded {} images, {} annotations ({} crowd), {} categories from {} in {:.2f} s",
               dataset.num_images(), dataset.num_annotations(), dataset.num_crowd(),
               dataset.num_classes(), json_file, seconds);
  if (options.filter_empty_annotations) filter_empty_annotations(dataset);
  if (options.min_keypoints_per_image > 0)
    filter_images_with_few_keypoints(dataset, options.min_keypoints_per_image);
  return dataset;
}

std::vector<std::string> check_coco_json(const std::string& json_file,
                                         const std::string& image_root,
                                         const CocoLoadOptions& options) {
  ProblemList problems(json_file, /*collect=*/true);
  read_coco(json_file, image_root, options, problems, /*collect=*/true);
  return problems.take();
}

size_t CocoDataset::keep_images_where(const std::function<bool(size_t)>& keep) {
  std::vector<uint32_t> keep_images, keep_annotations;
  for (size_t i = 0; i < num_images(); ++i) {
    if (!keep(i)) continue;
    keep_images.push_back(static_cast<uint32_t>(i));
    for (uint64_t a = image_ann_begin_[i]; a < image_ann_begin_[i + 1]; ++a)
      keep_annotations.push_back(static_cast<uint32_t>(a));
  }
  const size_t removed = num_images() - keep_images.size();
  if (removed == 0) return 0;
  PodArray<uint64_t> begins;
  begins.push_back(0);
  for (uint32_t i : keep_images) {
    begins.push_back(begins.back() + image_ann_begin_[i + 1] - image_ann_begin_[i]);
  }
  image_ann_begin_.swap(begins);
  reorder_images(keep_images);
  reorder_annotations(keep_annotations);
  stats_.filtered_images += removed;
  return removed;
}

size_t filter_empty_annotations(CocoDataset& ds) {
  const size_t removed = ds.keep_images_where([&](size_t i) {
    for (AnnotationView a : ds.annotations_of(i))
      if (!a.iscrowd()) return true;
    return false;
  });
  spdlog::info("Removed {} images with no usable annotations. {} images left.", removed,
               ds.num_images());
  return removed;
}

size_t filter_images_with_few_keypoints(CocoDataset& ds, int min_keypoints_per_image) {
  const size_t removed = ds.keep_images_where([&](size_t i) {
    int64_t visible = 0;  // crowd annotations count too, as in Detectron2
    for (AnnotationView a : ds.annotations_of(i)) {
      CoordSpan k = a.keypoints();
      for (size_t v = 2; v < k.size; v += 3) visible += k[v] > 0;
    }
    return visible >= min_keypoints_per_image;
  });
  spdlog::info("Removed {} images with fewer than {} keypoints. {} images left.", removed,
               min_keypoints_per_image, ds.num_images());
  return removed;
}

bool file_name_stays_inside_root(const std::string& file_name) {
  if (file_name.empty() || file_name[0] == '/' || file_name.find('\0') != std::string::npos) {
    return false;
  }
  int depth = 0;  // folders below the root
  for (const std::string& part : split(file_name, '/')) {
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (--depth < 0) return false;
    } else {
      ++depth;
    }
  }
  return depth > 0;  // "." or "a/.." name the root itself, not a file in it
}

}  // namespace detkit::data
