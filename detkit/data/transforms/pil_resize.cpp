#include "detkit/data/transforms/pil_resize.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "detkit/utils/error.h"

namespace detkit::data {
namespace {

// PIL's PRECISION_BITS for 8-bit images.
constexpr int kPrecisionBits = 32 - 8 - 2;
constexpr int32_t kHalf = 1 << (kPrecisionBits - 1);

// For each output pixel: the first input pixel, the number of input pixels, and their
// fixed-point weights (ksize per output pixel). PIL's precompute_coeffs + normalize_coeffs_8bpc.
struct Coefficients {
  int ksize;
  std::vector<int> first, count;
  std::vector<int32_t> weights;
};

Coefficients precompute(int in_size, int out_size) {
  const double scale = static_cast<double>(in_size) / out_size;
  const double filter_scale = scale < 1.0 ? 1.0 : scale;
  const double support = 1.0 * filter_scale;  // the bilinear filter's support is 1
  Coefficients c;
  c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.first.resize(out_size);
  c.count.resize(out_size);
  c.weights.assign(static_cast<size_t>(out_size) * c.ksize, 0);
  std::vector<double> w(c.ksize);
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = (xx + 0.5) * scale, inverse = 1.0 / filter_scale;
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    double total = 0.0;
    for (int x = 0; x < xmax; ++x) {
      const double t = std::fabs((x + xmin - center + 0.5) * inverse);
      w[x] = t < 1.0 ? 1.0 - t : 0.0;
      total += w[x];
    }
    for (int x = 0; x < xmax; ++x) {
      const double v = total != 0.0 ? w[x] / total : w[x];
      const double fixed = v * (1 << kPrecisionBits);
      c.weights[static_cast<size_t>(xx) * c.ksize + x] =
          static_cast<int32_t>(v < 0 ? -0.5 + fixed : 0.5 + fixed);
    }
    c.first[xx] = xmin;
    c.count[xx] = xmax;
  }
  return c;
}

uint8_t clip8(int32_t in) {
  if (in >= (1 << kPrecisionBits << 8)) return 255;
  if (in <= 0) return 0;
  return static_cast<uint8_t>(in >> kPrecisionBits);
}

// Rows [row0, row0 + out.rows) of `in`, resized along x into `out`; C channels.
template <int C>
void resize_horizontal(const cv::Mat& in, int row0, const Coefficients& c, cv::Mat& out) {
  for (int y = 0; y < out.rows; ++y) {
    const uint8_t* src = in.ptr<uint8_t>(row0 + y);
    uint8_t* dst = out.ptr<uint8_t>(y);
    for (int xx = 0; xx < out.cols; ++xx) {
      const int32_t* k = &c.weights[static_cast<size_t>(xx) * c.ksize];
      const uint8_t* p = src + c.first[xx] * C;
      int32_t sums[C];
      for (int ch = 0; ch < C; ++ch) sums[ch] = kHalf;
      for (int x = 0; x < c.count[xx]; ++x) {
        for (int ch = 0; ch < C; ++ch) sums[ch] += p[x * C + ch] * k[x];
      }
      for (int ch = 0; ch < C; ++ch) dst[xx * C + ch] = clip8(sums[ch]);
    }
  }
}

void resize_horizontal(const cv::Mat& in, int row0, const Coefficients& c, cv::Mat& out) {
  switch (in.channels()) {
    case 1:
      return resize_horizontal<1>(in, row0, c, out);
    case 2:
      return resize_horizontal<2>(in, row0, c, out);
    case 3:
      return resize_horizontal<3>(in, row0, c, out);
    default:
      return resize_horizontal<4>(in, row0, c, out);
  }
}

// `in` resized along y into `out`; c.first is relative to in's first row.
void resize_vertical(const cv::Mat& in, const Coefficients& c, cv::Mat& out) {
  const int row_length = out.cols * out.channels();
  std::vector<int32_t> sums(row_length);
  for (int yy = 0; yy < out.rows; ++yy) {
    const int32_t* k = &c.weights[static_cast<size_t>(yy) * c.ksize];
    std::fill(sums.begin(), sums.end(), kHalf);
    for (int y = 0; y < c.count[yy]; ++y) {
      const uint8_t* src = in.ptr<uint8_t>(c.first[yy] + y);
      const int32_t weight = k[y];
      for (int i = 0; i < row_length; ++i) sums[i] += src[i] * weight;
    }
    uint8_t* dst = out.ptr<uint8_t>(yy);
    for (int i = 0; i < row_length; ++i) dst[i] = clip8(sums[i]);
  }
}

}  // namespace

cv::Mat pil_bilinear_resize(const cv::Mat& image, int new_h, int new_w) {
  if (image.depth() != CV_8U || image.channels() > 4 || image.empty() || new_h <= 0 || new_w <= 0) {
    throw Error(
        "pil_bilinear_resize: needs a non-empty uint8 image of 1-4 channels and a "
        "positive size, got " +
        std::to_string(image.rows) + "x" + std::to_string(image.cols) + " -> " +
        std::to_string(new_h) + "x" + std::to_string(new_w));
  }
  const Coefficients horizontal = precompute(image.cols, new_w);
  Coefficients vertical = precompute(image.rows, new_h);
  cv::Mat source = image;
  if (new_w != image.cols) {
    // Only the rows the vertical pass reads go through the horizontal pass.
    const int first_row = vertical.first[0];
    const int last_row = vertical.first[new_h - 1] + vertical.count[new_h - 1];
    for (int& first : vertical.first) first -= first_row;
    cv::Mat temp(last_row - first_row, new_w, image.type());
    resize_horizontal(image, first_row, horizontal, temp);
    source = temp;
  }
  if (new_h == image.rows) return new_w == image.cols ? image.clone() : source;
  cv::Mat out(new_h, new_w, image.type());
  resize_vertical(source, vertical, out);
  return out;
}

namespace {

// Pillow's ImagingScaleAffine: the source index of each output pixel along one axis.
std::vector<int> pil_nearest_sources(int size, int new_size) {
  const double scale = static_cast<double>(size) / new_size;
  std::vector<int> sources(new_size);
  double position = scale * 0.5;
  for (int i = 0; i < new_size; ++i) {
    sources[i] = std::min(static_cast<int>(position), size - 1);
    position += scale;
  }
  return sources;
}

}  // namespace

cv::Mat pil_nearest_resize(const cv::Mat& image, int new_h, int new_w) {
  const std::vector<int> rows = pil_nearest_sources(image.rows, new_h);
  const std::vector<int> cols = pil_nearest_sources(image.cols, new_w);
  cv::Mat out(new_h, new_w, image.type());
  const size_t pixel = image.elemSize();
  for (int y = 0; y < new_h; ++y) {
    const uchar* in = image.ptr<uchar>(rows[y]);
    uchar* row = out.ptr<uchar>(y);
    for (int x = 0; x < new_w; ++x) std::memcpy(row + x * pixel, in + cols[x] * pixel, pixel);
  }
  return out;
}

}  // namespace detkit::data
