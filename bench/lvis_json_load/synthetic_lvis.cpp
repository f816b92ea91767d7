#include "bench/lvis_json_load/synthetic_lvis.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "detkit/utils/error.h"

namespace detkit::bench {
namespace {

constexpr int64_t kV1TrainImages = 100170;
constexpr int64_t kV1TrainAnnotations = 1270141;
constexpr int kLvisCategories = 1203;
constexpr double kLvisPi = 3.14159265358979323846;

// Appends JSON text to a buffer written out every 8 MB.
class LvisOutput {
 public:
  explicit LvisOutput(const std::string& path)
      : path_(path), file_(std::fopen(path.c_str(), "wb")) {
    if (!file_) throw Error("cannot create '" + path + "'");
  }
  ~LvisOutput() {
    if (file_) std::fclose(file_);
  }
  std::string& text() { return buffer_; }
  template <typename... Args>
  void print(fmt::format_string<Args...> format, Args&&... args) {
    fmt::format_to(std::back_inserter(buffer_), format, std::forward<Args>(args)...);
  }
  void hundredths(int64_t cents) {  // cents / 100, as Python writes it (12.5, 12.05, 12.0)
    fmt::format_to(std::back_inserter(buffer_), "{}", cents / 100);
    const int frac = static_cast<int>(cents % 100);
    buffer_ += '.';
    buffer_ += static_cast<char>('0' + frac / 10);
    if (frac % 10) buffer_ += static_cast<char>('0' + frac % 10);
  }
  void maybe_flush() {
    if (buffer_.size() >= (8u << 20)) flush();
  }
  uint64_t finish() {
    flush();
    const bool ok = std::fclose(file_) == 0;
    file_ = nullptr;
    if (!ok) throw Error("cannot write '" + path_ + "'");
    return written_;
  }

 private:
  void flush() {
    if (std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size())
      throw Error("cannot write '" + path_ + "'");
    written_ += buffer_.size();
    buffer_.clear();
  }
  std::string path_;
  std::FILE* file_;
  std::string buffer_;
  uint64_t written_ = 0;
};

struct LvisImage {
  int64_t id;
  int height, width;
};

// A list of `n` distinct category ids.
void write_lvis_ids(LvisOutput& out, int n, std::mt19937_64& rng) {
  std::vector<int> ids;
  while (static_cast<int>(ids.size()) < n) {
    const int id = 1 + static_cast<int>(rng() % kLvisCategories);
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  out.text() += '[';
  for (size_t k = 0; k < ids.size(); ++k) out.print(k ? ", {}" : "{}", ids[k]);
  out.text() += ']';
}

void write_lvis_images(LvisOutput& out, const std::vector<LvisImage>& images, std::mt19937_64& rng,
                       SyntheticLvisSummary& summary) {
  out.text() += "\"images\": [";
  for (size_t i = 0; i < images.size(); ++i) {
    const LvisImage& image = images[i];
    const int negative = static_cast<int>(rng() % 21);  // 10 on average
    const int not_exhaustive = static_cast<int>(rng() % 5);
    summary.negative_ids += negative;
    summary.not_exhaustive_ids += not_exhaustive;
    out.print("{}{{\"date_captured\": \"2013-11-14 16:28:13\", \"neg_category_ids\": ",
              i ? ", " : "");
    write_lvis_ids(out, negative, rng);
    out.print(
        ", \"id\": {}, \"license\": {}, \"height\": {}, \"width\": {}, \"flickr_url\": "
        "\"http://farm{}.staticflickr.com/{}/{}_{:010x}_z.jpg\", \"coco_url\": "
        "\"http://images.cocodataset.org/train2017/{:012d}.jpg\", "
        "\"not_exhaustive_category_ids\": ",
        image.id, 1 + rng() % 8, image.height, image.width, 1 + rng() % 9, rng() % 10000,
        rng() % 10000000000ull, rng() % (1ull << 40), image.id);
    write_lvis_ids(out, not_exhaustive, rng);
    out.text() += '}';
    out.maybe_flush();
  }
  out.text() += "], ";
}

// One star-shaped polygon of 20-70 points inside the image, its box and its area.
void write_lvis_annotation(LvisOutput& out, int64_t id, const LvisImage& image,
                           std::mt19937_64& rng, std::vector<int64_t>& xy) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const int points = 20 + static_cast<int>(rng() % 51);
  const double radius = 4 + unit(rng) * std::min(image.width, image.height) / 4.0;
  const double cx = radius + unit(rng) * (image.width - 2 * radius);
  const double cy = radius + unit(rng) * (image.height - 2 * radius);
  xy.clear();
  for (int p = 0; p < points; ++p) {
    const double angle = 2 * kLvisPi * p / points, r = radius * (0.5 + 0.5 * unit(rng));
    xy.push_back(std::llround((cx + r * std::cos(angle)) * 100));
    xy.push_back(std::llround((cy + r * std::sin(angle)) * 100));
  }
  int64_t x0 = xy[0], y0 = xy[1], x1 = xy[0], y1 = xy[1];
  double twice_area = 0;
  for (int p = 0; p < points; ++p) {
    const int64_t x = xy[2 * p], y = xy[2 * p + 1];
    const int64_t nx = xy[(2 * p + 2) % xy.size()], ny = xy[(2 * p + 3) % xy.size()];
    x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    twice_area += static_cast<double>(x) * ny - static_cast<double>(nx) * y;
  }
  out.print("{{\"area\": {:.1f}, \"id\": {}, \"segmentation\": [[", std::abs(twice_area) / 2e4, id);
  for (size_t k = 0; k < xy.size(); ++k) {
    if (k) out.text() += ", ";
    out.hundredths(xy[k]);
  }
  out.print("]], \"image_id\": {}, \"bbox\": [", image.id);
  out.hundredths(x0);
  out.text() += ", ";
  out.hundredths(y0);
  out.text() += ", ";
  out.hundredths(x1 - x0);
  out.text() += ", ";
  out.hundredths(y1 - y0);
  out.print("], \"category_id\": {}}}", 1 + rng() % kLvisCategories);
}

void write_lvis_categories(LvisOutput& out, std::mt19937_64& rng) {
  out.text() += "\"categories\": [";
  for (int c = 1; c <= kLvisCategories; ++c) {
    const uint64_t r = rng();
    const char* frequency = r % 3 == 0 ? "r" : r % 3 == 1 ? "c" : "f";
    out.print(
        "{}{{\"frequency\": \"{}\", \"synset\": \"thing_{}.n.01\", \"image_count\": {}, "
        "\"instance_count\": {}, \"synonyms\": [\"thing_{}\", \"object_{}\"], \"id\": {}, "
        "\"def\": \"a synthetic category standing for one of LVIS's 1203 kinds of things\", "
        "\"name\": \"thing_{}\"}}",
        c == 1 ? "" : ", ", frequency, c, 1 + r % 1000, 1 + r % 5000, c, c, c, c);
  }
  out.text() += "]}";
}

}  // namespace

SyntheticLvisSummary write_synthetic_lvis(const std::string& path,
                                          const SyntheticLvisOptions& options) {
  std::mt19937_64 rng(options.seed);
  SyntheticLvisSummary summary;
  summary.images = std::max<int64_t>(1, std::llround(kV1TrainImages * options.scale));
  summary.annotations = std::llround(kV1TrainAnnotations * options.scale);
  summary.polygons = summary.annotations;
  const int sizes[][2] = {{480, 640}, {427, 640}, {640, 480}, {375, 500}, {612, 612}};
  std::vector<LvisImage> images(summary.images);
  for (int64_t i = 0; i < summary.images; ++i) {
    const auto& size = sizes[rng() % 5];
    images[i] = {1 + i * 5 + static_cast<int64_t>(rng() % 5), size[0], size[1]};
  }
  LvisOutput out(path);
  out.text() += "{\"info\": {\"description\": \"LVIS-shaped synthetic dataset\"}, ";
  write_lvis_images(out, images, rng, summary);
  out.text() += "\"annotations\": [";
  std::vector<int64_t> xy;
  for (int64_t a = 0; a < summary.annotations; ++a) {
    if (a) out.text() += ", ";
    write_lvis_annotation(out, a + 1, images[rng() % images.size()], rng, xy);
    out.maybe_flush();
  }
  out.text() +=
      "], \"licenses\": [{\"url\": \"http://creativecommons.org/licenses/by/2.0/\", "
      "\"id\": 1, \"name\": \"Attribution License\"}], ";
  write_lvis_categories(out, rng);
  summary.bytes = out.finish();
  return summary;
}

}  // namespace detkit::bench
