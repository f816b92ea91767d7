#pragma once
// A polygon cut to an axis-aligned window, as Detectron2's CropTransform.apply_polygons cuts it
// with shapely (the polygon's intersection with the window box): one polygon may become several
// (a U cut across its arms gives two), none (outside, or touching the window along an edge or at
// a point only), or the window itself (a polygon that covers it).
//
// The pieces are separate polygons, as shapely returns them (an instance's polygon list then has
// one entry per piece, as in Detectron2). Sutherland-Hodgman clipping gives the same region as one
// ring joined by zero-width bridges along the window's sides; the bridges' opposite edges along
// each side are cancelled and the remaining edges linked into rings, which bound the same region
// (for a simple polygon each point inside the window keeps its winding number).
#include <vector>

namespace detkit::data {

/// `xy` (x0, y0, x1, y1, ..., at least 3 points) cut to [x_min, x_max] x [y_min, y_max]; the
/// pieces in the polygon's coordinates (not moved), each with at least 3 points and a non-zero
/// area. A polygon that crosses itself is cut as the ring it is (Detectron2 first repairs it with
/// shapely's buffer(0); detkit does not).
std::vector<std::vector<double>> crop_polygon(const std::vector<double>& xy, double x_min,
                                              double y_min, double x_max, double y_max);

}  // namespace detkit::data
