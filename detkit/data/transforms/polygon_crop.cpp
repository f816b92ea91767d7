#include "detkit/data/transforms/polygon_crop.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

namespace detkit::data {
namespace {

using Point = std::pair<double, double>;  // (x, y); compared exactly: every point on a side
                                          // is made with that side's coordinate itself

// One Sutherland-Hodgman pass: the part of `ring` on the kept side of x = c (axis 0) or y = c
// (axis 1), `keep_greater` choosing the side; points on the line are kept.
std::vector<Point> clip_half_plane(const std::vector<Point>& ring, int axis, double c,
                                   bool keep_greater) {
  auto coord = [axis](const Point& p) { return axis == 0 ? p.first : p.second; };
  auto inside = [&](const Point& p) { return keep_greater ? coord(p) >= c : coord(p) <= c; };
  auto crossing = [&](const Point& p, const Point& q) {
    const double t = (c - coord(p)) / (coord(q) - coord(p));
    if (axis == 0) return Point{c, p.second + t * (q.second - p.second)};
    return Point{p.first + t * (q.first - p.first), c};
  };
  std::vector<Point> out;
  for (size_t i = 0; i < ring.size(); ++i) {
    const Point& p = ring[i];
    const Point& q = ring[(i + 1) % ring.size()];
    const bool p_in = inside(p), q_in = inside(q);
    if (p_in) out.push_back(p);
    if (p_in != q_in) out.push_back(crossing(p, q));
  }
  return out;
}

struct Edge {
  Point from, to;
};

// The side of the window an edge lies along (0 left, 1 right, 2 top, 3 bottom), or -1.
struct Window {
  double x_min, y_min, x_max, y_max;
  int side_of(const Edge& e) const {
    if (e.from.first == x_min && e.to.first == x_min) return 0;
    if (e.from.first == x_max && e.to.first == x_max) return 1;
    if (e.from.second == y_min && e.to.second == y_min) return 2;
    if (e.from.second == y_max && e.to.second == y_max) return 3;
    return -1;
  }
};

// The edges along one side with opposite runs cancelled: the side cut at every endpoint, each
// piece kept as often, and in the direction, that the edges' net count along it says.
std::vector<Edge> cancel_along_side(const std::vector<Edge>& edges, int side, const Window& w) {
  const bool vertical = side < 2;  // left and right run along y
  const double fixed = side == 0 ? w.x_min : side == 1 ? w.x_max : side == 2 ? w.y_min : w.y_max;
  auto along = [vertical](const Point& p) { return vertical ? p.second : p.first; };
  auto at = [&](double t) { return vertical ? Point{fixed, t} : Point{t, fixed}; };
  std::vector<double> cuts;
  for (const Edge& e : edges) cuts.push_back(along(e.from)), cuts.push_back(along(e.to));
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::vector<Edge> out;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    int net = 0;
    for (const Edge& e : edges) {
      const double a = along(e.from), b = along(e.to);
      if (std::min(a, b) <= cuts[i] && cuts[i + 1] <= std::max(a, b)) net += a < b ? 1 : -1;
    }
    for (; net > 0; --net) out.push_back({at(cuts[i]), at(cuts[i + 1])});
    for (; net < 0; ++net) out.push_back({at(cuts[i + 1]), at(cuts[i])});
  }
  return out;
}

double ring_area(const std::vector<Point>& ring) {
  double twice = 0;
  for (size_t i = 0; i < ring.size(); ++i) {
    const Point& p = ring[i];
    const Point& q = ring[(i + 1) % ring.size()];
    twice += p.first * q.second - q.first * p.second;
  }
  return 0.5 * twice;
}

// Drops a point lying between its neighbours on one straight side of the window (the cut
// points left along a side), then repeated points.
std::vector<Point> without_side_midpoints(std::vector<Point> ring, const Window& w) {
  bool changed = true;
  while (changed && ring.size() > 3) {
    changed = false;
    for (size_t i = 0; i < ring.size(); ++i) {
      const Point& prev = ring[(i + ring.size() - 1) % ring.size()];
      const Point& next = ring[(i + 1) % ring.size()];
      const int a = w.side_of({prev, ring[i]}), b = w.side_of({ring[i], next});
      if (a >= 0 && a == b) {
        ring.erase(ring.begin() + static_cast<std::ptrdiff_t>(i));
        changed = true;
        break;
      }
    }
  }
  return ring;
}

}  // namespace

std::vector<std::vector<double>> crop_polygon(const std::vector<double>& xy, double x_min,
                                              double y_min, double x_max, double y_max) {
  std::vector<std::vector<double>> pieces;
  if (!(x_min < x_max && y_min < y_max) || xy.size() < 6) return pieces;
  std::vector<Point> ring;
  for (size_t i = 0; i + 1 < xy.size(); i += 2) ring.push_back({xy[i], xy[i + 1]});
  ring = clip_half_plane(ring, 0, x_min, true);
  ring = clip_half_plane(ring, 0, x_max, false);
  ring = clip_half_plane(ring, 1, y_min, true);
  ring = clip_half_plane(ring, 1, y_max, false);
  if (ring.size() < 3) return pieces;

  // The clipped ring's edges, those along the window's sides with their bridges cancelled.
  const Window window{x_min, y_min, x_max, y_max};
  std::vector<Edge> edges, along_side[4];
  for (size_t i = 0; i < ring.size(); ++i) {
    const Edge e{ring[i], ring[(i + 1) % ring.size()]};
    if (e.from == e.to) continue;
    const int side = window.side_of(e);
    (side >= 0 ? along_side[side] : edges).push_back(e);
  }
  for (int side = 0; side < 4; ++side) {
    for (const Edge& e : cancel_along_side(along_side[side], side, window)) edges.push_back(e);
  }

  // Every point has as many edges in as out: follow unused edges until back at the start.
  std::multimap<Point, size_t> leaving;
  for (size_t i = 0; i < edges.size(); ++i) leaving.emplace(edges[i].from, i);
  std::vector<bool> used(edges.size(), false);
  for (size_t first = 0; first < edges.size(); ++first) {
    if (used[first]) continue;
    std::vector<Point> piece;
    size_t e = first;
    while (true) {
      used[e] = true;
      piece.push_back(edges[e].from);
      if (edges[e].to == edges[first].from) break;
      auto [begin, end] = leaving.equal_range(edges[e].to);
      auto next = std::find_if(begin, end, [&](const auto& kv) { return !used[kv.second]; });
      if (next == end) break;  // unbalanced (a ring crossing itself): close it here
      e = next->second;
    }
    piece = without_side_midpoints(std::move(piece), window);
    if (piece.size() < 3 || std::abs(ring_area(piece)) < 1e-9) continue;
    std::vector<double> flat;
    for (const Point& p : piece) flat.push_back(p.first), flat.push_back(p.second);
    pieces.push_back(std::move(flat));
  }
  return pieces;
}

}  // namespace detkit::data
