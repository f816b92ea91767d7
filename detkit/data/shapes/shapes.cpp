#include "detkit/data/shapes/shapes.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "detkit/data/image/jpeg_encode.h"
#include "detkit/data/image/png_codec.h"
#include "detkit/data/shapes/shapes_coco.h"
#include "detkit/data/shapes/shapes_panoptic.h"
#include "detkit/data/shapes/shapes_random.h"
#include "detkit/data/shapes/shapes_scene.h"
#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"
#include "detkit/utils/progress.h"

namespace detkit::data {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxObjects = 50;
constexpr int kJpegQuality = 92;

void check_range(const char* name, int64_t value, int64_t lo, int64_t hi) {
  if (value < lo || value > hi) {
    throw Error("make_shapes: option " + std::string(name) + " = " + std::to_string(value) +
                " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
}

void validate(const ShapesOptions& options) {
  if (options.out_dir.empty()) throw Error("make_shapes: option out_dir is empty");
  check_range("num_train", options.num_train, 0, 10'000'000);
  check_range("num_val", options.num_val, 0, 10'000'000);
  check_range("width", options.width, kShapesMinSide, kShapesMaxSide);
  check_range("height", options.height, kShapesMinSide, kShapesMaxSide);
  check_range("min_objects", options.min_objects, 1, kMaxObjects);
  check_range("max_objects", options.max_objects, options.min_objects, kMaxObjects);
  check_range("num_workers", options.num_workers, 0, 1024);
}

void make_directory(const fs::path& dir) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error || !fs::is_directory(dir)) {
    throw Error("make_shapes: cannot create directory '" + dir.string() +
                "' under option out_dir: " + (error ? error.message() : "not a directory"));
  }
}

// Runs task(i) for i in [0, count) on `workers` threads; rethrows the first failure.
void parallel_for(int count, int workers, const std::function<void(int)>& task) {
  std::atomic<int> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&] {
    for (int i = next++; i < count; i = next++) {
      try {
        task(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        next = count;
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < std::min(workers, count); ++t) threads.emplace_back(work);
  work();
  for (std::thread& thread : threads) thread.join();
  if (failure) std::rethrow_exception(failure);
}

void write_png(const fs::path& path, const cv::Mat& image) {
  std::vector<uint8_t> png;
  try {
    png = encode_png(image);
  } catch (const Error& e) {
    throw Error("make_shapes: '" + path.string() + "': " + e.what());
  }
  atomic_write(path.string(), std::string(png.begin(), png.end()));
}

// Writes image `jpeg_name`'s panoptic PNG and semantic label map; returns its JSON entry.
ShapesPanopticImage write_panoptic(const ShapesScene& scene, const std::string& jpeg_name,
                                   const fs::path& panoptic_dir, const fs::path& semantic_dir) {
  const ShapesPanoptic panoptic = panoptic_scene(scene);
  const std::string png_name = fs::path(jpeg_name).stem().string() + ".png";
  write_png(panoptic_dir / png_name, panoptic.ids_bgr);
  write_png(semantic_dir / png_name, panoptic.semantic);
  return {jpeg_name, png_name, scene.image.cols, scene.image.rows, panoptic.segments};
}

void write_split(const ShapesOptions& options, const std::string& split, int count,
                 uint64_t stream) {
  const fs::path image_dir = fs::path(options.out_dir) / split;
  make_directory(image_dir);
  SceneOptions scene_options;
  scene_options.width = options.width;
  scene_options.height = options.height;
  scene_options.min_objects = options.min_objects;
  scene_options.max_objects = options.max_objects;
  scene_options.stuff = options.panoptic;
  const fs::path panoptic_dir = fs::path(options.out_dir) / ("panoptic_" + split);
  const fs::path semantic_dir = fs::path(options.out_dir) / ("panoptic_stuff_" + split);
  if (options.panoptic) {
    make_directory(panoptic_dir);
    make_directory(semantic_dir);
  }
  const int workers = options.num_workers > 0
                          ? options.num_workers
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  std::vector<ShapesImage> images(count);
  std::vector<ShapesPanopticImage> panoptic_images(options.panoptic ? count : 0);
  std::atomic<int> finished{0};
  Progress progress("Generating shapes/" + split, count, "images");
  parallel_for(count, workers, [&](int i) {
    const ShapesScene scene = render_scene(derive_seed(options.seed, stream, i), scene_options);
    char name[32];
    std::snprintf(name, sizeof(name), "%06d.jpg", i + 1);
    std::vector<uint8_t> jpeg;
    try {
      jpeg = encode_jpeg(scene.image, kJpegQuality);
    } catch (const Error& e) {
      throw Error("make_shapes: image " + split + "/" + name + ": " + e.what());
    }
    atomic_write((image_dir / name).string(), std::string(jpeg.begin(), jpeg.end()));
    images[i] = {name, options.width, options.height, annotate_scene(scene)};
    if (options.panoptic)
      panoptic_images[i] = write_panoptic(scene, name, panoptic_dir, semantic_dir);
    progress.update(++finished);
  });
  atomic_write(
      (fs::path(options.out_dir) / "annotations" / ("instances_" + split + ".json")).string(),
      shapes_coco_json(images));
  atomic_write(
      (fs::path(options.out_dir) / "annotations" / ("triangle_keypoints_" + split + ".json"))
          .string(),
      shapes_triangle_keypoints_json(images));
  if (options.panoptic) {
    atomic_write(
        (fs::path(options.out_dir) / "annotations" / ("panoptic_" + split + ".json")).string(),
        shapes_panoptic_json(panoptic_images));
  }
}

}  // namespace

void make_shapes(const ShapesOptions& options) {
  validate(options);
  make_directory(fs::path(options.out_dir) / "annotations");
  write_split(options, "train", options.num_train, 1);
  write_split(options, "val", options.num_val, 2);
}

}  // namespace detkit::data
