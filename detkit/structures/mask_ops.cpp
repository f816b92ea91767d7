#include "detkit/structures/mask_ops.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <utility>

#include "detkit/utils/error.h"

namespace detkit::mask_ops {
namespace {

constexpr uint64_t kMaxPixels = std::numeric_limits<uint32_t>::max();
// Polygon coordinates beyond this are refused: it keeps the upsampled outline's integer
// arithmetic exact (pycocotools uses int) and its length bounded.
constexpr double kMaxPolygonCoordinate = 1e7;
// rleFrPoly traces the outline on a grid this many times finer than the pixel grid.
constexpr int64_t kPolygonScale = 5;

std::string size_str(int64_t h, int64_t w) {
  return std::to_string(h) + "x" + std::to_string(w);
}

// Throws unless h and w are non-negative and h * w fits COCO's 32-bit run lengths.
void check_size(int64_t h, int64_t w, const std::string& where) {
  if (h < 0 || w < 0 || static_cast<uint64_t>(h) > kMaxPixels ||
      static_cast<uint64_t>(w) > kMaxPixels ||
      static_cast<uint64_t>(h) * static_cast<uint64_t>(w) > kMaxPixels) {
    throw Error(where + ": mask size " + size_str(h, w) +
                " is invalid (need h, w >= 0 and h * w < 2^32)");
  }
}

// Throws unless the RLE has a valid size and its counts sum to h * w.
void check_rle(const RLE& rle, const std::string& where) {
  check_size(rle.h, rle.w, where);
  uint64_t sum = 0;
  for (uint32_t c : rle.counts) sum += c;
  const uint64_t pixels = static_cast<uint64_t>(rle.h) * static_cast<uint64_t>(rle.w);
  if (sum != pixels) {
    throw Error(where + ": RLE counts sum to " + std::to_string(sum) + " but the mask is " +
                size_str(rle.h, rle.w) + " = " + std::to_string(pixels) + " pixels");
  }
}

// Walks the runs of one RLE as pycocotools' merge and IoU loops do: `left` pixels remain in the
// current run, whose value is `on`.
struct RunCursor {
  explicit RunCursor(const std::vector<uint32_t>& c)
      : counts(&c), left(c.empty() ? 0 : c[0]) {}

  // Consumes n <= left pixels; an exhausted run gives way to the next one, if any.
  void consume(uint32_t n) {
    left -= n;
    if (left == 0 && next < counts->size()) {
      left = (*counts)[next++];
      on = !on;
    }
  }

  const std::vector<uint32_t>* counts;
  size_t next = 1;  // index of the run after the current one
  uint32_t left;
  bool on = false;
};

// Union or intersection of two valid RLEs of the same size, run by run.
RLE merge_two(const RLE& a, const RLE& b, bool intersect) {
  RLE out{a.h, a.w, {}};
  RunCursor ca(a.counts), cb(b.counts);
  bool value = false;
  uint32_t pending = 0;  // length of the output run being built
  while (true) {
    const uint32_t step = std::min(ca.left, cb.left);
    pending += step;
    ca.consume(step);
    cb.consume(step);
    const bool previous = value;
    value = intersect ? (ca.on && cb.on) : (ca.on || cb.on);
    const bool done = ca.left == 0 && cb.left == 0;
    if (value != previous || done) {
      out.counts.push_back(pending);
      pending = 0;
    }
    if (done) return out;
  }
}

// Intersection and union pixel counts of two valid RLEs of the same size.
std::pair<uint64_t, uint64_t> intersection_union(const RLE& a, const RLE& b) {
  RunCursor ca(a.counts), cb(b.counts);
  uint64_t inter = 0, uni = 0;
  while (true) {
    const uint32_t step = std::min(ca.left, cb.left);
    if (ca.on || cb.on) uni += step;
    if (ca.on && cb.on) inter += step;
    ca.consume(step);
    cb.consume(step);
    if (ca.left == 0 && cb.left == 0) return {inter, uni};
  }
}

// True when two XYWH boxes overlap with positive width and height (the bbIou test).
bool boxes_overlap(const std::array<double, 4>& d, const std::array<double, 4>& g) {
  return std::fmin(d[2] + d[0], g[2] + g[0]) - std::fmax(d[0], g[0]) > 0 &&
         std::fmin(d[3] + d[1], g[3] + g[1]) - std::fmax(d[1], g[1]) > 0;
}

// Collects, while the upsampled polygon outline is traced point by point, the column-major
// pixel positions where the mask toggles: wherever the outline steps across a pixel column's
// centre, the first pixel row below the outline there (rleFrPoly's y-boundary points).
class ToggleCollector {
 public:
  ToggleCollector(int64_t h, int64_t w) : h_(h), w_(w) {}

  void add(int64_t u, int64_t v) {
    if (started_ && u != prev_u_) record(u, v);
    started_ = true;
    prev_u_ = u;
    prev_v_ = v;
  }

  std::vector<uint32_t>& positions() { return positions_; }

 private:
  void record(int64_t u, int64_t v) {
    const double scale = static_cast<double>(kPolygonScale);
    double xd = static_cast<double>(u < prev_u_ ? u : u - 1);
    xd = (xd + 0.5) / scale - 0.5;
    if (std::floor(xd) != xd || xd < 0 || xd > static_cast<double>(w_ - 1)) return;
    double yd = static_cast<double>(v < prev_v_ ? v : prev_v_);
    yd = (yd + 0.5) / scale - 0.5;
    if (yd < 0) {
      yd = 0;
    } else if (yd > static_cast<double>(h_)) {
      yd = static_cast<double>(h_);
    }
    yd = std::ceil(yd);
    positions_.push_back(static_cast<uint32_t>(static_cast<int64_t>(xd) * h_ +
                                               static_cast<int64_t>(yd)));
  }

  int64_t h_, w_;
  bool started_ = false;
  int64_t prev_u_ = 0, prev_v_ = 0;
  std::vector<uint32_t> positions_;
};

// Traces the edge (x0, y0) -> (x1, y1) of the upsampled polygon one grid step at a time along
// its longer axis, in the direction of increasing coordinate but reporting points from start to
// end (rleFrPoly's rounding depends on that direction).
void trace_edge(int64_t x0, int64_t y0, int64_t x1, int64_t y1, ToggleCollector* out) {
  const int64_t dx = std::abs(x1 - x0), dy = std::abs(y1 - y0);
  if (dx == 0 && dy == 0) {  // a repeated vertex: one point (pycocotools divides 0 by 0 here)
    out->add(x0, y0);
    return;
  }
  const bool along_x = dx >= dy;
  const bool flip = along_x ? x0 > x1 : y0 > y1;
  if (flip) {
    std::swap(x0, x1);
    std::swap(y0, y1);
  }
  const int64_t steps = along_x ? dx : dy;
  const double slope = along_x ? static_cast<double>(y1 - y0) / static_cast<double>(dx)
                               : static_cast<double>(x1 - x0) / static_cast<double>(dy);
  // The coordinate along the short axis, rounded as (int)(start + slope * t + .5).
  const auto cross = [slope](int64_t start, int64_t t) {
    return static_cast<int64_t>(static_cast<double>(start) + slope * static_cast<double>(t) + 0.5);
  };
  for (int64_t d = 0; d <= steps; ++d) {
    const int64_t t = flip ? steps - d : d;
    if (along_x) {
      out->add(x0 + t, cross(y0, t));
    } else {
      out->add(cross(x0, t), y0 + t);
    }
  }
}

// Turns sorted toggle positions (the last one h * w) into run lengths. Toggles at the same
// position cancel in pairs: a zero-length run joins its neighbours, as in rleFrPoly.
std::vector<uint32_t> toggles_to_counts(const std::vector<uint32_t>& sorted) {
  std::vector<uint32_t> gaps(sorted.size());
  uint32_t previous = 0;
  for (size_t j = 0; j < sorted.size(); ++j) {
    gaps[j] = sorted[j] - previous;
    previous = sorted[j];
  }
  std::vector<uint32_t> counts{gaps[0]};
  for (size_t j = 1; j < gaps.size(); ++j) {
    if (gaps[j] > 0) {
      counts.push_back(gaps[j]);
    } else if (++j < gaps.size()) {
      counts.back() += gaps[j];
    }
  }
  return counts;
}

}  // namespace

RLE encode(const uint8_t* mask, int64_t h, int64_t w) {
  check_size(h, w, "mask_ops::encode");
  RLE rle{h, w, {}};
  if (h * w > 0 && mask == nullptr) throw Error("mask_ops::encode: mask pointer is null");
  bool value = false;
  uint32_t run = 0;
  for (int64_t x = 0; x < w; ++x) {
    for (int64_t y = 0; y < h; ++y) {
      const bool on = mask[y * w + x] != 0;
      if (on != value) {
        rle.counts.push_back(run);
        run = 0;
        value = on;
      }
      ++run;
    }
  }
  rle.counts.push_back(run);
  return rle;
}

std::vector<uint8_t> decode(const RLE& rle) {
  check_rle(rle, "mask_ops::decode");
  std::vector<uint8_t> mask(static_cast<size_t>(rle.h * rle.w), 0);
  uint64_t start = 0;  // column-major index of the current run's first pixel
  for (size_t j = 0; j < rle.counts.size(); ++j) {
    if (j % 2 == 1 && rle.counts[j] > 0) {
      int64_t y = static_cast<int64_t>(start % rle.h), x = static_cast<int64_t>(start / rle.h);
      for (uint32_t k = 0; k < rle.counts[j]; ++k) {
        mask[y * rle.w + x] = 1;
        if (++y == rle.h) {
          y = 0;
          ++x;
        }
      }
    }
    start += rle.counts[j];
  }
  return mask;
}

std::string to_string(const RLE& rle) {
  check_rle(rle, "mask_ops::to_string");
  std::string s;
  s.reserve(rle.counts.size() * 2);
  for (size_t i = 0; i < rle.counts.size(); ++i) {
    int64_t x = rle.counts[i];
    if (i > 2) x -= rle.counts[i - 2];
    // Five bits per char, low bits first; bit 0x20 marks "more follows"; the last char's bit
    // 0x10 is the sign.
    bool more = true;
    while (more) {
      const int64_t low = x & 0x1f;
      x = (x - low) / 32;  // arithmetic shift right by 5
      more = (low & 0x10) ? x != -1 : x != 0;
      s.push_back(static_cast<char>((more ? (low | 0x20) : low) + 48));
    }
  }
  return s;
}

RLE from_string(const std::string& counts, int64_t h, int64_t w) {
  check_size(h, w, "mask_ops::from_string");
  RLE rle{h, w, {}};
  size_t p = 0;
  while (p < counts.size()) {
    const size_t begin = p;
    int64_t x = 0;
    for (int k = 0;; ++k) {
      if (p >= counts.size()) {
        throw Error("mask_ops::from_string: counts string ends inside the number starting at "
                    "position " + std::to_string(begin));
      }
      const int c = static_cast<unsigned char>(counts[p]) - 48;
      if (c < 0 || c > 63) {
        throw Error("mask_ops::from_string: invalid character '" + std::string(1, counts[p]) +
                    "' (code " + std::to_string(c + 48) + ") at position " + std::to_string(p) +
                    ", expected ASCII 48..111");
      }
      if (k == 7) {
        throw Error("mask_ops::from_string: number starting at position " +
                    std::to_string(begin) + " is longer than 7 characters");
      }
      x |= static_cast<int64_t>(c & 0x1f) << (5 * k);
      ++p;
      if (!(c & 0x20)) {
        if (c & 0x10) x -= int64_t{1} << (5 * (k + 1));  // sign-extend
        break;
      }
    }
    const size_t i = rle.counts.size();
    if (i > 2) x += rle.counts[i - 2];
    if (x < 0 || x > static_cast<int64_t>(kMaxPixels)) {
      throw Error("mask_ops::from_string: run " + std::to_string(i) + " (at position " +
                  std::to_string(begin) + ") decodes to " + std::to_string(x) +
                  ", outside [0, 2^32)");
    }
    rle.counts.push_back(static_cast<uint32_t>(x));
  }
  check_rle(rle, "mask_ops::from_string(\"" + counts.substr(0, 40) +
                     (counts.size() > 40 ? "...\")" : "\")"));
  return rle;
}

RLE from_uncompressed(const std::vector<int64_t>& counts, int64_t h, int64_t w) {
  check_size(h, w, "mask_ops::from_uncompressed");
  RLE rle{h, w, {}};
  rle.counts.reserve(counts.size());
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] < 0 || counts[i] > static_cast<int64_t>(kMaxPixels)) {
      throw Error("mask_ops::from_uncompressed: counts[" + std::to_string(i) + "] = " +
                  std::to_string(counts[i]) + " is outside [0, 2^32)");
    }
    rle.counts.push_back(static_cast<uint32_t>(counts[i]));
  }
  check_rle(rle, "mask_ops::from_uncompressed");
  return rle;
}

uint64_t area(const RLE& rle) {
  check_rle(rle, "mask_ops::area");
  uint64_t total = 0;
  for (size_t j = 1; j < rle.counts.size(); j += 2) total += rle.counts[j];
  return total;
}

std::array<double, 4> to_bbox(const RLE& rle) {
  check_rle(rle, "mask_ops::to_bbox");
  const uint64_t h = static_cast<uint64_t>(rle.h), w = static_cast<uint64_t>(rle.w);
  uint64_t xs = w, ys = h, xe = 0, ye = 0;
  bool any = false;
  uint64_t start = 0;  // column-major index of the current run's first pixel
  for (size_t j = 0; j < rle.counts.size(); ++j) {
    const uint64_t len = rle.counts[j];
    if (j % 2 == 1 && len > 0) {
      const uint64_t first = start, last = start + len - 1;
      const uint64_t x_first = first / h, x_last = last / h;
      xs = std::min(xs, x_first);
      xe = std::max(xe, x_last);
      if (x_first < x_last) {  // a run over several columns counts as all rows (pycocotools)
        ys = 0;
        ye = h - 1;
      } else {
        ys = std::min(ys, first % h);
        ye = std::max(ye, last % h);
      }
      any = true;
    }
    start += len;
  }
  if (!any) return {0, 0, 0, 0};
  return {static_cast<double>(xs), static_cast<double>(ys), static_cast<double>(xe - xs + 1),
          static_cast<double>(ye - ys + 1)};
}

RLE from_polygon(const std::vector<double>& xy, int64_t h, int64_t w) {
  check_size(h, w, "mask_ops::from_polygon");
  if (xy.size() % 2 != 0 || xy.size() < 6) {
    throw Error("mask_ops::from_polygon: a polygon needs an even number of coordinates and at "
                "least 3 points (6 values), got " + std::to_string(xy.size()) + " values");
  }
  for (size_t i = 0; i < xy.size(); ++i) {
    if (!std::isfinite(xy[i]) || std::fabs(xy[i]) > kMaxPolygonCoordinate) {
      std::ostringstream msg;
      msg << "mask_ops::from_polygon: coordinate " << i << " = " << xy[i]
          << " is not finite or beyond +-" << kMaxPolygonCoordinate;
      throw Error(msg.str());
    }
  }
  if (h * w == 0) return RLE{h, w, {0}};
  // Vertices on the upsampled grid, rounded as (int)(scale * v + .5) does.
  const size_t k = xy.size() / 2;
  std::vector<int64_t> gx(k), gy(k);
  for (size_t j = 0; j < k; ++j) {
    gx[j] = static_cast<int64_t>(static_cast<double>(kPolygonScale) * xy[2 * j] + 0.5);
    gy[j] = static_cast<int64_t>(static_cast<double>(kPolygonScale) * xy[2 * j + 1] + 0.5);
  }
  ToggleCollector toggles(h, w);
  for (size_t j = 0; j < k; ++j) {
    const size_t n = (j + 1) % k;
    trace_edge(gx[j], gy[j], gx[n], gy[n], &toggles);
  }
  std::vector<uint32_t>& positions = toggles.positions();
  positions.push_back(static_cast<uint32_t>(h * w));
  std::sort(positions.begin(), positions.end());
  return RLE{h, w, toggles_to_counts(positions)};
}

RLE from_polygons(const std::vector<std::vector<double>>& polys, int64_t h, int64_t w) {
  if (polys.empty()) {
    throw Error("mask_ops::from_polygons: no polygons (pycocotools cannot convert an empty "
                "segmentation either)");
  }
  std::vector<RLE> parts;
  parts.reserve(polys.size());
  for (size_t i = 0; i < polys.size(); ++i) {
    try {
      parts.push_back(from_polygon(polys[i], h, w));
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + " (polygon " + std::to_string(i) + ")");
    }
  }
  return merge(parts);
}

RLE from_bbox(const std::array<double, 4>& xywh, int64_t h, int64_t w) {
  const double xs = xywh[0], xe = xs + xywh[2], ys = xywh[1], ye = ys + xywh[3];
  return from_polygon({xs, ys, xs, ye, xe, ye, xe, ys}, h, w);
}

RLE merge(const std::vector<RLE>& rles, bool intersect) {
  if (rles.empty()) return RLE{};
  for (size_t i = 0; i < rles.size(); ++i) {
    check_rle(rles[i], "mask_ops::merge: rles[" + std::to_string(i) + "]");
    if (rles[i].h != rles[0].h || rles[i].w != rles[0].w) {
      throw Error("mask_ops::merge: rles[" + std::to_string(i) + "] is " +
                  size_str(rles[i].h, rles[i].w) + " but rles[0] is " +
                  size_str(rles[0].h, rles[0].w));
    }
  }
  RLE result = rles[0];
  for (size_t i = 1; i < rles.size(); ++i) result = merge_two(result, rles[i], intersect);
  return result;
}

std::vector<double> iou(const std::vector<RLE>& dt, const std::vector<RLE>& gt,
                        const std::vector<bool>& gt_iscrowd) {
  if (gt_iscrowd.size() != gt.size()) {
    throw Error("mask_ops::iou: gt_iscrowd has " + std::to_string(gt_iscrowd.size()) +
                " entries but there are " + std::to_string(gt.size()) + " ground truths");
  }
  std::vector<std::array<double, 4>> dt_boxes, gt_boxes;
  std::vector<uint64_t> dt_areas;
  for (size_t d = 0; d < dt.size(); ++d) {
    check_rle(dt[d], "mask_ops::iou: dt[" + std::to_string(d) + "]");
    dt_boxes.push_back(to_bbox(dt[d]));
    dt_areas.push_back(area(dt[d]));
  }
  for (size_t g = 0; g < gt.size(); ++g) {
    check_rle(gt[g], "mask_ops::iou: gt[" + std::to_string(g) + "]");
    gt_boxes.push_back(to_bbox(gt[g]));
  }
  std::vector<double> out(dt.size() * gt.size(), 0.0);
  for (size_t d = 0; d < dt.size(); ++d) {
    for (size_t g = 0; g < gt.size(); ++g) {
      if (dt[d].h != gt[g].h || dt[d].w != gt[g].w) {
        throw Error("mask_ops::iou: dt[" + std::to_string(d) + "] is " +
                    size_str(dt[d].h, dt[d].w) + " but gt[" + std::to_string(g) + "] is " +
                    size_str(gt[g].h, gt[g].w));
      }
      // Masks whose boxes do not overlap cannot intersect (pycocotools skips them too).
      if (!boxes_overlap(dt_boxes[d], gt_boxes[g])) continue;
      auto [inter, uni] = intersection_union(dt[d], gt[g]);
      if (inter == 0) continue;
      if (gt_iscrowd[g]) uni = dt_areas[d];
      out[d * gt.size() + g] = static_cast<double>(inter) / static_cast<double>(uni);
    }
  }
  return out;
}

std::vector<double> box_iou(const std::vector<std::array<double, 4>>& dt_xywh,
                            const std::vector<std::array<double, 4>>& gt_xywh,
                            const std::vector<bool>& gt_iscrowd) {
  if (gt_iscrowd.size() != gt_xywh.size()) {
    throw Error("mask_ops::box_iou: gt_iscrowd has " + std::to_string(gt_iscrowd.size()) +
                " entries but there are " + std::to_string(gt_xywh.size()) + " ground truths");
  }
  auto check_box = [](const std::array<double, 4>& b, const std::string& name) {
    const bool finite = std::isfinite(b[0]) && std::isfinite(b[1]) && std::isfinite(b[2]) &&
                        std::isfinite(b[3]);
    if (!finite || b[2] < 0 || b[3] < 0) {
      std::ostringstream msg;
      msg << "mask_ops::box_iou: " << name << " = [" << b[0] << ", " << b[1] << ", " << b[2]
          << ", " << b[3] << "] needs finite values and width, height >= 0";
      throw Error(msg.str());
    }
  };
  for (size_t d = 0; d < dt_xywh.size(); ++d) {
    check_box(dt_xywh[d], "dt[" + std::to_string(d) + "]");
  }
  for (size_t g = 0; g < gt_xywh.size(); ++g) {
    check_box(gt_xywh[g], "gt[" + std::to_string(g) + "]");
  }
  std::vector<double> out(dt_xywh.size() * gt_xywh.size(), 0.0);
  for (size_t g = 0; g < gt_xywh.size(); ++g) {
    const auto& gb = gt_xywh[g];
    const double g_area = gb[2] * gb[3];
    for (size_t d = 0; d < dt_xywh.size(); ++d) {
      const auto& db = dt_xywh[d];
      const double d_area = db[2] * db[3];
      const double iw = std::fmin(db[2] + db[0], gb[2] + gb[0]) - std::fmax(db[0], gb[0]);
      if (iw <= 0) continue;
      const double ih = std::fmin(db[3] + db[1], gb[3] + gb[1]) - std::fmax(db[1], gb[1]);
      if (ih <= 0) continue;
      const double inter = iw * ih;
      const double uni = gt_iscrowd[g] ? d_area : d_area + g_area - inter;
      out[d * gt_xywh.size() + g] = inter / uni;
    }
  }
  return out;
}

}  // namespace detkit::mask_ops
