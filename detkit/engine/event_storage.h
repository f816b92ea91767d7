#pragma once
// EventStorage: the scalars training records each iteration (losses, lr, times), with the
// smoothing Detectron2's writers apply: median over a window for smoothed metrics, the latest
// value otherwise.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace detkit::engine {

class EventStorage {
 public:
  explicit EventStorage(int64_t start_iter = 0) : iter_(start_iter) {}

  void put_scalar(const std::string& name, double value, bool smoothing_hint = true);
  int64_t iter() const { return iter_; }
  void set_iter(int64_t iter) { iter_ = iter; }

  bool has(const std::string& name) const { return history_.count(name) > 0; }
  /// The latest value and the iteration it was recorded at.
  std::pair<double, int64_t> latest(const std::string& name) const;
  /// Median / mean of the last `window` values.
  double median(const std::string& name, size_t window) const;
  double average(const std::string& name, size_t window) const;
  /// Every metric: (median over `window` if it has the smoothing hint, else latest; iteration).
  std::map<std::string, std::pair<double, int64_t>> latest_with_smoothing_hint(size_t window) const;
  std::vector<std::string> names() const;

  /// An image for the writers (Detectron2's put_image), at the current iteration: PNG bytes.
  struct Image {
    std::string name;
    std::string png;
    int64_t height = 0, width = 0;
    int64_t iter = 0;
  };
  void put_image(const std::string& name, std::string png, int64_t height, int64_t width) {
    images_.push_back({name, std::move(png), height, width, iter_});
  }
  /// The images put since the last call (Detectron2's writer clears them once written).
  std::vector<Image> take_images() { return std::exchange(images_, {}); }

 private:
  struct History {
    std::vector<std::pair<double, int64_t>> values;
    bool smoothing_hint = true;
  };
  const History& history(const std::string& name) const;
  std::map<std::string, History> history_;
  std::vector<Image> images_;
  int64_t iter_;
};

}  // namespace detkit::engine
