#include "detkit/data/sem_seg_dataset.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include "detkit/data/image/image_io.h"
#include "detkit/utils/error.h"

namespace detkit::data {
namespace fs = std::filesystem;
namespace {

// Stem -> file name of the regular files directly in `dir` whose names end with `extension`
// (Detectron2 lists the folder without descending into it).
std::map<std::string, std::string> files_by_stem(const std::string& dir,
                                                 const std::string& extension, const char* what) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) {
    throw Error(fmt::format("load_sem_seg: the {} folder '{}' does not exist or is not a folder",
                            what, dir));
  }
  std::map<std::string, std::string> out;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= extension.size() ||
        name.compare(name.size() - extension.size(), extension.size(), extension) != 0)
      continue;
    if (!it->is_regular_file(error)) continue;  // follows symlinks: val2017_100 is links
    out.emplace(name.substr(0, name.size() - extension.size()), name);
  }
  if (error) throw Error(fmt::format("load_sem_seg: cannot list '{}': {}", dir, error.message()));
  return out;
}

// Width and height from the first bytes of a PNG (its IHDR chunk).
void png_header_size(const std::string& path, int& width, int& height) {
  std::ifstream in(path, std::ios::binary);
  std::vector<unsigned char> head(64);
  in.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  int64_t w = 0, h = 0;
  if (!in.good() && head.empty()) throw Error(path + ": cannot read the label map");
  if (!encoded_image_size(head, w, h) || w <= 0 || h <= 0 || w * h > kMaxImagePixels) {
    throw Error(path + ": not a PNG label map with a readable size in its header");
  }
  width = static_cast<int>(w);
  height = static_cast<int>(h);
}

std::string join(const std::string& root, const std::string& name) {
  return root.empty() || root.back() == '/' ? root + name : root + "/" + name;
}

}  // namespace

CocoDataset load_sem_seg(const std::string& gt_root, const std::string& image_root) {
  const auto images = files_by_stem(image_root, ".jpg", "image");
  const auto labels = files_by_stem(gt_root, ".png", "label map");
  if (labels.empty()) throw Error(fmt::format("load_sem_seg: no annotations found in {}", gt_root));
  if (images.size() != labels.size()) {
    spdlog::warn("Directory {} and {} has {} and {} files, respectively.", image_root, gt_root,
                 images.size(), labels.size());
  }
  CocoDataset ds;
  ds.image_root_ = image_root;
  ds.sem_seg_root_ = gt_root;
  ds.image_ann_begin_.push_back(0);
  for (const auto& [stem, image_name] : images) {
    auto label = labels.find(stem);
    if (label == labels.end()) continue;
    int width = 0, height = 0;
    png_header_size(join(gt_root, label->second), width, height);
    ds.image_ids_.push_back(static_cast<int64_t>(ds.image_ids_.size()));
    ds.heights_.push_back(height);
    ds.widths_.push_back(width);
    ds.name_begin_.push_back(ds.names_.size());
    ds.name_size_.push_back(static_cast<uint32_t>(image_name.size()));
    ds.names_ += image_name;
    ds.image_ann_begin_.push_back(0);
  }
  if (ds.num_images() == 0) {
    throw Error(fmt::format(
        "load_sem_seg: no image of '{}' (<stem>.jpg) has a label map of the same stem in '{}' "
        "(<stem>.png)",
        image_root, gt_root));
  }
  if (ds.num_images() != images.size() || ds.num_images() != labels.size())
    spdlog::warn("Will use their intersection of {} files.", ds.num_images());
  spdlog::info("Loaded {} images with semantic segmentation from {}", ds.num_images(), image_root);
  return ds;
}

}  // namespace detkit::data
