#include "detkit/data/bad_images.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>

#include "detkit/utils/file_io.h"

namespace detkit::data {

BadImageOptions bad_image_options_from_config(const config::CfgNode& cfg, int rank) {
  BadImageOptions o;
  const std::string policy = cfg.get_string("DATALOADER.ON_BAD_IMAGE");
  if (policy == "error") {
    o.on_bad_image = OnBadImage::kError;
  } else if (policy == "skip") {
    o.on_bad_image = OnBadImage::kSkip;
  } else {
    throw Error("DATALOADER.ON_BAD_IMAGE must be 'error' or 'skip', got '" + policy + "'");
  }
  o.max_fraction = cfg.get_float("DATALOADER.MAX_BAD_IMAGE_FRACTION");
  if (!(o.max_fraction >= 0 && o.max_fraction <= 1))
    throw Error(
        fmt::format("DATALOADER.MAX_BAD_IMAGE_FRACTION must be in 0..1, got {}", o.max_fraction));
  const std::string out = cfg.get_string("OUTPUT_DIR");
  if (!out.empty())
    o.list_file = (std::filesystem::path(out) / "bad_images.txt").string() +
                  (rank > 0 ? ".rank" + std::to_string(rank) : "");
  return o;
}

void BadImageTracker::count_read() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++reads_;
}

void BadImageTracker::record(size_t index, const BadImage& bad) {
  if (options_.on_bad_image == OnBadImage::kError) throw bad;
  std::lock_guard<std::mutex> lock(mutex_);
  ++replaced_;
  if (bad_.insert(index).second) {
    spdlog::warn("bad image, skipped (DATALOADER.ON_BAD_IMAGE skip): {}", bad.what());
    if (!options_.list_file.empty())
      append_whole(options_.list_file, std::string(bad.what()) + "\n");
  }
  if (reads_ >= options_.min_reads_for_fraction &&
      static_cast<double>(replaced_) > options_.max_fraction * static_cast<double>(reads_))
    throw Error(
        fmt::format("{} of the {} images read are bad ({} distinct files{}), more than "
                    "DATALOADER.MAX_BAD_IMAGE_FRACTION {}; the last: {}",
                    replaced_, reads_, bad_.size(),
                    options_.list_file.empty() ? "" : ", listed in " + options_.list_file,
                    options_.max_fraction, bad.what()));
}

bool BadImageTracker::known_bad(size_t index) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bad_.count(index) > 0;
}

uint64_t BadImageTracker::replaced() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return replaced_;
}

}  // namespace detkit::data
