#include "bench/coco_json_load/synthetic_coco.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "bench/coco_json_load/coco_categories.h"
#include "detkit/utils/error.h"

namespace detkit::bench {
namespace {

constexpr int64_t kTrain2017Images = 118287;
constexpr int64_t kTrain2017Annotations = 860001;
constexpr double kCrowdFraction = 0.0105;       // train2017: 9,045 of 860,001
constexpr double kShortPolygonRate = 5e-6;      // polygons of 2 points, which loaders must drop
constexpr int64_t kCrowdIdBase = 900100000000;  // COCO numbers crowd regions from here
constexpr std::array<std::array<int, 2>, 8> kImageSizes = {
    {{480, 640},
     {427, 640},
     {640, 480},
     {426, 640},
     {375, 500},
     {640, 427},
     {512, 640},
     {612, 612}}};  // (height, width), the most common COCO sizes

// Buffered writer that flushes to the file every few megabytes.
class JsonWriter {
 public:
  explicit JsonWriter(const std::string& path)
      : path_(path), file_(std::fopen(path.c_str(), "wb")) {
    if (!file_) throw Error("cannot create '" + path + "'");
    buffer_.reserve(kFlushBytes + (1 << 20));
  }
  ~JsonWriter() {
    if (file_) std::fclose(file_);
  }
  void raw(const char* s) { buffer_ += s; }
  void raw(char c) { buffer_ += c; }
  void integer(int64_t v) { fmt::format_to(std::back_inserter(buffer_), "{}", v); }
  /// A value with two decimals given in hundredths, written as Python's repr writes it.
  void hundredths(int64_t cents) {
    if (cents < 0) {
      buffer_ += '-';
      cents = -cents;
    }
    integer(cents / 100);
    buffer_ += '.';
    int64_t frac = cents % 100;
    buffer_ += static_cast<char>('0' + frac / 10);
    if (frac % 10) buffer_ += static_cast<char>('0' + frac % 10);
  }
  /// Shortest round-trip form, with ".0" on integral values as Python writes floats.
  void real(double v) {
    size_t start = buffer_.size();
    fmt::format_to(std::back_inserter(buffer_), "{}", v);
    if (buffer_.find_first_of(".e", start) == std::string::npos) buffer_ += ".0";
  }
  void maybe_flush() {
    if (buffer_.size() >= kFlushBytes) flush();
  }
  uint64_t finish() {
    flush();
    bool ok = std::fclose(file_) == 0;
    file_ = nullptr;
    if (!ok) throw Error("cannot write '" + path_ + "'");
    return written_;
  }

 private:
  static constexpr size_t kFlushBytes = 8 << 20;
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

struct Image {
  int64_t id;
  int height, width;
};

void write_header(JsonWriter& out) {
  out.raw(
      "{\"info\": {\"description\": \"COCO-shaped synthetic dataset\",\"url\": "
      "\"http://cocodataset.org\",\"version\": \"1.0\",\"year\": 2017,\"contributor\": "
      "\"detkit bench\",\"date_created\": \"2017/09/01\"},\"licenses\": [");
  for (int i = 1; i <= 8; ++i) {
    if (i > 1) out.raw(',');
    out.raw("{\"url\": \"http://creativecommons.org/licenses/by/2.0/\",\"id\": ");
    out.integer(i);
    out.raw(",\"name\": \"Attribution License\"}");
  }
  out.raw("],");
}

void write_images(JsonWriter& out, const std::vector<Image>& images, std::mt19937_64& rng) {
  out.raw("\"images\": [");
  for (size_t i = 0; i < images.size(); ++i) {
    const Image& image = images[i];
    std::string name = fmt::format("{:012d}.jpg", image.id);
    if (i) out.raw(',');
    out.raw("{\"license\": ");
    out.integer(1 + static_cast<int64_t>(rng() % 8));
    out.raw(",\"file_name\": \"");
    out.raw(name.c_str());
    out.raw("\",\"coco_url\": \"http://images.cocodataset.org/train2017/");
    out.raw(name.c_str());
    out.raw("\",\"height\": ");
    out.integer(image.height);
    out.raw(",\"width\": ");
    out.integer(image.width);
    out.raw(fmt::format(",\"date_captured\": \"2013-11-{:02d} {:02d}:{:02d}:{:02d}\"",
                        1 + rng() % 28, rng() % 24, rng() % 60, rng() % 60)
                .c_str());
    out.raw(fmt::format(",\"flickr_url\": \"http://farm{}.staticflickr.com/{}/{}_{:x}_z.jpg\"",
                        1 + rng() % 9, 1000 + rng() % 9000, 1000000000 + rng() % 9000000000ULL,
                        rng() % 0xffffffffffULL)
                .c_str());
    out.raw(",\"id\": ");
    out.integer(image.id);
    out.raw('}');
    out.maybe_flush();
  }
  out.raw("],");
}

// One object outline: a star-shaped polygon around (cx, cy), in hundredths of a pixel.
std::vector<int64_t> random_polygon(double cx, double cy, double radius, int points,
                                    const Image& image, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> jitter(0.0, 1.0);
  std::vector<int64_t> xy;
  xy.reserve(2 * points);
  for (int k = 0; k < points; ++k) {
    double angle = (k + 0.8 * jitter(rng)) * 2.0 * M_PI / points;
    double r = radius * (0.55 + 0.45 * jitter(rng));
    double x = std::clamp(cx + r * std::cos(angle), 0.0, static_cast<double>(image.width));
    double y = std::clamp(cy + r * std::sin(angle), 0.0, static_cast<double>(image.height));
    xy.push_back(std::llround(x * 100));
    xy.push_back(std::llround(y * 100));
  }
  return xy;
}

// Writes "segmentation", "area" and "bbox" of a non-crowd object made of polygons.
void write_polygon_object(JsonWriter& out, const Image& image, std::mt19937_64& rng,
                          SyntheticCocoSummary& summary) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  double u = unit(rng);
  int num_polygons = u < 0.85 ? 1 : (u < 0.95 ? 2 : 3 + static_cast<int>(rng() % 3));
  double radius = std::exp(std::log(3.0) + unit(rng) * (std::log(220.0) - std::log(3.0)));
  double cx = unit(rng) * image.width, cy = unit(rng) * image.height;
  double area = 0;
  int64_t x0 = INT64_MAX, y0 = INT64_MAX, x1 = INT64_MIN, y1 = INT64_MIN;
  out.raw("{\"segmentation\": [");
  for (int p = 0; p < num_polygons; ++p) {
    int points = unit(rng) < kShortPolygonRate ? 2 : 4 + static_cast<int>(rng() % 33);
    double part_radius = p == 0 ? radius : radius * (0.2 + 0.3 * unit(rng));
    double px = p == 0 ? cx : cx + radius * (unit(rng) - 0.5);
    double py = p == 0 ? cy : cy + radius * (unit(rng) - 0.5);
    std::vector<int64_t> xy = random_polygon(px, py, part_radius, points, image, rng);
    if (p) out.raw(',');
    out.raw('[');
    double twice_area = 0;
    for (int k = 0; k < points; ++k) {
      int64_t x = xy[2 * k], y = xy[2 * k + 1];
      int next = (k + 1) % points;
      twice_area += 1e-4 * (static_cast<double>(x) * xy[2 * next + 1] -
                            static_cast<double>(xy[2 * next]) * y);
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
      if (k) out.raw(',');
      out.hundredths(x);
      out.raw(',');
      out.hundredths(y);
    }
    out.raw(']');
    area += std::abs(twice_area) / 2;
    ++summary.polygons;
  }
  out.raw("],\"area\": ");
  out.real(area);
  out.raw(",\"iscrowd\": 0");
  out.raw(",\"image_id\": ");
  out.integer(image.id);
  out.raw(",\"bbox\": [");
  out.hundredths(x0);
  out.raw(',');
  out.hundredths(y0);
  out.raw(',');
  out.hundredths(x1 - x0);
  out.raw(',');
  out.hundredths(y1 - y0);
  out.raw(']');
}

// Writes "segmentation" (uncompressed RLE of an elliptic blob), "area" and "bbox" of a crowd.
void write_crowd_object(JsonWriter& out, const Image& image, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const int64_t h = image.height, w = image.width;
  double rx = 10 + unit(rng) * w / 3, ry = 10 + unit(rng) * h / 3;
  double cx = unit(rng) * w, cy = unit(rng) * h;
  std::vector<int64_t> counts;
  int64_t covered = 0, area = 0;  // pixels accounted for by counts so far; "on" pixels
  int64_t bx0 = w, by0 = h, bx1 = -1, by1 = -1;
  int64_t first_column = std::max<int64_t>(0, std::lround(cx - rx));
  int64_t end_column = std::min<int64_t>(w, std::lround(cx + rx));
  for (int64_t x = first_column; x < end_column; ++x) {
    double t = (x + 0.5 - cx) / rx;
    if (std::abs(t) >= 1) continue;
    double half = ry * std::sqrt(1 - t * t);
    int64_t ya = std::max<int64_t>(0, std::lround(cy - half));
    int64_t yb = std::min<int64_t>(h, std::lround(cy + half));
    if (yb <= ya) continue;
    int64_t zeros = x * h + ya - covered;
    if (!counts.empty() && zeros == 0) {
      counts.back() += yb - ya;
    } else {
      counts.push_back(zeros);
      counts.push_back(yb - ya);
    }
    covered = x * h + yb;
    area += yb - ya;
    bx0 = std::min(bx0, x), bx1 = std::max(bx1, x);
    by0 = std::min(by0, ya), by1 = std::max(by1, yb - 1);
  }
  if (covered < h * w) counts.push_back(h * w - covered);
  out.raw("{\"segmentation\": {\"counts\": [");
  for (size_t k = 0; k < counts.size(); ++k) {
    if (k) out.raw(',');
    out.integer(counts[k]);
  }
  out.raw("],\"size\": [");
  out.integer(h);
  out.raw(',');
  out.integer(w);
  out.raw("]},\"area\": ");
  out.integer(area);
  out.raw(",\"iscrowd\": 1,\"image_id\": ");
  out.integer(image.id);
  out.raw(",\"bbox\": [");
  if (area == 0) bx0 = by0 = 0, bx1 = by1 = -1;  // an empty blob has the box [0, 0, 0, 0]
  out.real(static_cast<double>(bx0));
  out.raw(',');
  out.real(static_cast<double>(by0));
  out.raw(',');
  out.real(static_cast<double>(bx1 - bx0 + 1));
  out.raw(',');
  out.real(static_cast<double>(by1 - by0 + 1));
  out.raw(']');
}

void write_categories(JsonWriter& out) {
  out.raw("\"categories\": [");
  bool first = true;
  for (const CocoCategory& c : kCocoCategories) {
    if (!first) out.raw(',');
    first = false;
    out.raw(fmt::format("{{\"supercategory\": \"{}\",\"id\": {},\"name\": \"{}\"}}",
                        c.supercategory, c.id, c.name)
                .c_str());
  }
  out.raw("]}");
}

}  // namespace

SyntheticCocoSummary write_synthetic_coco(const std::string& path,
                                          const SyntheticCocoOptions& options) {
  if (!(options.scale > 0))
    throw Error(fmt::format("scale must be positive, got {}", options.scale));
  std::mt19937_64 rng(options.seed);
  SyntheticCocoSummary summary;
  summary.images = std::max<int64_t>(1, std::llround(kTrain2017Images * options.scale));
  summary.annotations = std::max<int64_t>(1, std::llround(kTrain2017Annotations * options.scale));

  // Distinct image ids spread like COCO's (up to ~580k), listed in shuffled order.
  std::vector<Image> images(summary.images);
  for (int64_t i = 0; i < summary.images; ++i) {
    const auto& size = kImageSizes[rng() % kImageSizes.size()];
    images[i] = {i * 4 + 1 + static_cast<int64_t>(rng() % 4), size[0], size[1]};
  }
  std::shuffle(images.begin(), images.end(), rng);

  JsonWriter out(path);
  write_header(out);
  write_images(out, images, rng);
  out.raw("\"annotations\": [");
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int64_t next_id = 1;
  for (int64_t a = 0; a < summary.annotations; ++a) {
    const Image& image = images[rng() % images.size()];
    bool crowd = unit(rng) < kCrowdFraction;
    if (a) out.raw(',');
    if (crowd) {
      write_crowd_object(out, image, rng);
    } else {
      write_polygon_object(out, image, rng, summary);
    }
    const CocoCategory& category = kCocoCategories[rng() % std::size(kCocoCategories)];
    out.raw(",\"category_id\": ");
    out.integer(category.id);
    out.raw(",\"id\": ");
    if (crowd) {
      out.integer(kCrowdIdBase + summary.crowd++);
    } else {
      next_id += 1 + static_cast<int64_t>(rng() % 3);
      out.integer(next_id);
    }
    out.raw('}');
    out.maybe_flush();
  }
  out.raw("],");
  write_categories(out);
  summary.bytes = out.finish();
  return summary;
}

}  // namespace detkit::bench
