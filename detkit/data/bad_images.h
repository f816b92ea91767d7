#pragma once
// Bad images met while training (DATALOADER.ON_BAD_IMAGE): a file that is missing, truncated,
// corrupt or not the size its annotation file says. "error" stops, naming the file, the image id
// and its annotation ids (Detectron2's behaviour). "skip" (detkit's default) warns once per file,
// lists it in OUTPUT_DIR/bad_images.txt, and the loader uses another image in its place, so the
// batch size holds; more than DATALOADER.MAX_BAD_IMAGE_FRACTION of the images read being bad,
// once at least 200 were read, stops training with an error.
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_set>

#include "detkit/config/cfg_node.h"
#include "detkit/utils/error.h"

namespace detkit::data {

/// An image the mapper cannot use; the message names the file, the image id and its annotation
/// ids, and says what is wrong.
class BadImage : public Error {
 public:
  using Error::Error;
};

enum class OnBadImage { kError, kSkip };

struct BadImageOptions {
  OnBadImage on_bad_image = OnBadImage::kSkip;
  double max_fraction = 0.05;             // of the images read
  uint64_t min_reads_for_fraction = 200;  // the fraction is judged from this many reads on
  std::string list_file;                  // each bad file once, with why ("" for none)
};

/// DATALOADER.ON_BAD_IMAGE ('error' or 'skip') and DATALOADER.MAX_BAD_IMAGE_FRACTION (0..1);
/// list_file is OUTPUT_DIR/bad_images.txt (bad_images.txt.rank<N> on rank N > 0). Errors name
/// the key.
BadImageOptions bad_image_options_from_config(const config::CfgNode& cfg, int rank);

/// What a loader's workers found, shared between them (thread-safe).
class BadImageTracker {
 public:
  explicit BadImageTracker(BadImageOptions options) : options_(std::move(options)) {}
  const BadImageOptions& options() const { return options_; }
  /// One image read, good or bad.
  void count_read();
  /// A bad read of dataset image `index`. With kError rethrows `bad`; with kSkip records it:
  /// the first time for this image a warning and a line in the list file; then, when the bad
  /// share of the reads is over the limit, a detkit::Error saying so.
  void record(size_t index, const BadImage& bad);
  /// Whether image `index` was found bad before (its next sample can skip it without reading).
  bool known_bad(size_t index) const;
  /// Samples replaced so far (a file bad twice counts twice).
  uint64_t replaced() const;

 private:
  BadImageOptions options_;
  mutable std::mutex mutex_;
  std::unordered_set<size_t> bad_;
  uint64_t reads_ = 0, replaced_ = 0;
};

}  // namespace detkit::data
