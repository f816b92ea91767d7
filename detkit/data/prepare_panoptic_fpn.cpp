#include "detkit/data/prepare_panoptic_fpn.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "detkit/data/image/image_write.h"
#include "detkit/data/image/panoptic_png_io.h"
#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"

namespace detkit::data {
namespace fs = std::filesystem;
namespace {

constexpr uint8_t kThingLabel = 0;
constexpr uint8_t kVoidLabel = 255;

// Runs task(i) for i in [0, count) on `workers` threads. Of the failures, the one of the lowest
// index is rethrown, so the error named does not depend on the thread count; after a failure no
// new item starts.
void for_each_image(size_t count, int workers, const std::function<void(size_t)>& task) {
  std::atomic<size_t> next{0};
  std::mutex mutex;
  size_t failed_at = count;
  std::exception_ptr failure;
  auto work = [&] {
    for (size_t i = next++; i < count; i = next++) {
      try {
        task(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (i < failed_at) {
          failed_at = i;
          failure = std::current_exception();
        }
        next = count;
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < std::min<size_t>(static_cast<size_t>(workers), count); ++t)
    threads.emplace_back(work);
  work();
  for (std::thread& thread : threads) thread.join();
  if (failure) std::rethrow_exception(failure);
}

void make_directories(const fs::path& dir) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error || !fs::is_directory(dir)) {
    throw Error(fmt::format("prepare-panoptic-fpn: cannot create the folder '{}': {}", dir.string(),
                            error ? error.message() : "not a directory"));
  }
}

}  // namespace

std::map<int64_t, uint8_t> separated_semantic_labels(
    const std::vector<PanopticCategory>& categories) {
  std::map<int64_t, uint8_t> labels;
  int next_stuff = 1;
  for (const PanopticCategory& c : categories) {
    if (c.isthing) {
      labels[c.id] = kThingLabel;
      continue;
    }
    if (next_stuff >= kVoidLabel) {
      throw Error(fmt::format(
          "the panoptic categories hold more than 254 stuff categories (category {} '{}'): "
          "8-bit label maps number them 1..254, 255 being void",
          c.id, c.name));
    }
    labels[c.id] = static_cast<uint8_t>(next_stuff++);
  }
  return labels;
}

cv::Mat panoptic_to_semantic(const cv::Mat& ids, SegmentSpan segments,
                             const std::map<int64_t, uint8_t>& labels, const std::string& path) {
  if (ids.type() != CV_32SC1) throw Error(path + ": panoptic ids must be an int32 matrix");
  std::unordered_map<int32_t, uint8_t> label_of_id{{0, kVoidLabel}};
  for (const PanopticSegment& s : segments) {
    auto label = labels.find(s.category_id);
    if (label == labels.end()) {
      throw Error(fmt::format("{}: segment {} has category_id {}, not one of the categories", path,
                              s.id, s.category_id));
    }
    label_of_id[static_cast<int32_t>(s.id)] = label->second;
  }
  cv::Mat out(ids.rows, ids.cols, CV_8UC1);
  // Segments cover large runs: remember the last id instead of hashing every pixel.
  int32_t last_id = 0;
  uint8_t last_label = kVoidLabel;
  for (int y = 0; y < ids.rows; ++y) {
    const int32_t* in = ids.ptr<int32_t>(y);
    uint8_t* row = out.ptr<uint8_t>(y);
    for (int x = 0; x < ids.cols; ++x) {
      if (in[x] != last_id) {
        auto it = label_of_id.find(in[x]);
        if (it == label_of_id.end()) {
          throw Error(fmt::format(
              "{}: pixel (x {}, y {}) has segment id {} (R {}, G {}, B {}), which is not in the "
              "annotation's segments_info",
              path, x, y, in[x], in[x] & 255, (in[x] >> 8) & 255, (in[x] >> 16) & 255));
        }
        last_id = in[x];
        last_label = it->second;
      }
      row[x] = last_label;
    }
  }
  return out;
}

size_t prepare_panoptic_fpn(const std::string& panoptic_json, const std::string& panoptic_root,
                            const std::string& output_dir, const PreparePanopticOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  // With an empty image root, a record's image_path is "<PNG stem>.jpg": the stem (with any
  // sub-folders) is what names its label map.
  const PanopticDataset dataset = load_coco_panoptic_json(panoptic_json, "", panoptic_root);
  const std::map<int64_t, uint8_t> labels = separated_semantic_labels(dataset.categories());
  make_directories(output_dir);
  const int workers = options.num_workers > 0
                          ? options.num_workers
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  spdlog::info("Writing {} semantic label maps to {} ...", dataset.num_images(), output_dir);
  for_each_image(dataset.num_images(), workers, [&](size_t i) {
    const PanopticImageView image = dataset.image(i);
    const cv::Mat ids = read_panoptic_ids(image.pan_seg_path);
    if (ids.rows != image.height || ids.cols != image.width) {
      throw Error(fmt::format("{}: the PNG is {}x{} (width x height) but {} says image {} is {}x{}",
                              image.pan_seg_path, ids.cols, ids.rows, panoptic_json, image.id,
                              image.width, image.height));
    }
    const cv::Mat semantic = panoptic_to_semantic(ids, image.segments, labels, image.pan_seg_path);
    const std::string stem = image.image_path.substr(0, image.image_path.size() - 4);  // ".jpg"
    const fs::path output = fs::path(output_dir) / (stem + ".png");
    if (output.has_parent_path() && !fs::is_directory(output.parent_path()))
      make_directories(output.parent_path());
    const std::vector<unsigned char> png = encode_image(".png", semantic, output.string());
    atomic_write(output.string(), std::string(png.begin(), png.end()));
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  spdlog::info("Finished. time: {:.2f}s", seconds);
  return dataset.num_images();
}

}  // namespace detkit::data
