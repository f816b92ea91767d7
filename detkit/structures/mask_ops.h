#pragma once
// COCO run-length-encoded (RLE) binary masks: the C++ counterpart of pycocotools' maskApi.c and
// mask.py, with results identical to pycocotools (counts strings, areas, boxes, IoUs).
//
// An RLE of an h x w mask lists run lengths over the pixels in column-major order (down each
// column, columns left to right), alternating off/on and starting with an "off" run (possibly of
// length 0). The counts of a valid RLE sum to h * w, and h * w must fit in 32 bits as in COCO.
// Every function that reads an RLE checks this and throws detkit::Error otherwise.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace detkit::mask_ops {

struct RLE {
  int64_t h = 0, w = 0;
  std::vector<uint32_t> counts;  // runs, column-major, first run counts zeros
};

/// Encodes a row-major (h, w) mask; a nonzero byte is "on". An h * w of 0 gives counts {0}.
RLE encode(const uint8_t* mask, int64_t h, int64_t w);

/// Row-major (h, w) mask of 0/1 bytes.
std::vector<uint8_t> decode(const RLE& rle);

/// COCO's compressed "counts" string (LEB128-like, 5 bits per char in ASCII 48..111, counts from
/// the fourth on stored as differences to the count two before).
std::string to_string(const RLE& rle);

/// Parses a compressed counts string; throws detkit::Error on a bad character, a truncated
/// number, a negative or overlong run, or counts that do not sum to h * w.
RLE from_string(const std::string& counts, int64_t h, int64_t w);

/// The uncompressed JSON form {"counts": [...], "size": [h, w]}; counts must sum to h * w.
RLE from_uncompressed(const std::vector<int64_t>& counts, int64_t h, int64_t w);

/// Number of "on" pixels.
uint64_t area(const RLE& rle);

/// Tight box of the "on" pixels as [x, y, width, height] (pycocotools toBbox); zeros when empty.
std::array<double, 4> to_bbox(const RLE& rle);

/// Rasterises one polygon [x0, y0, x1, y1, ...] (at least 3 points) as pycocotools rleFrPoly.
RLE from_polygon(const std::vector<double>& xy, int64_t h, int64_t w);

/// Union of several polygons of one object (pycocotools frPyObjects followed by merge).
RLE from_polygons(const std::vector<std::vector<double>>& polys, int64_t h, int64_t w);

/// Rasterises a box [x, y, width, height] as pycocotools rleFrBbox (a 4-point polygon).
RLE from_bbox(const std::array<double, 4>& xywh, int64_t h, int64_t w);

/// Union (or intersection) of masks of equal size. An empty list gives a 0 x 0 RLE with no
/// counts, as pycocotools does; masks of different sizes are an error.
RLE merge(const std::vector<RLE>& rles, bool intersect = false);

/// IoU of every detection with every ground truth: dt.size() x gt.size(), row-major. For a crowd
/// ground truth the union is the detection's area. All masks must have the same size.
std::vector<double> iou(const std::vector<RLE>& dt, const std::vector<RLE>& gt,
                        const std::vector<bool>& gt_iscrowd);

/// Box IoU as pycocotools bbIou, boxes [x, y, width, height]; same layout and crowd rule as iou.
std::vector<double> box_iou(const std::vector<std::array<double, 4>>& dt_xywh,
                            const std::vector<std::array<double, 4>>& gt_xywh,
                            const std::vector<bool>& gt_iscrowd);

}  // namespace detkit::mask_ops
