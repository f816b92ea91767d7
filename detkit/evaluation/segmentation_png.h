#pragma once
// Segmentation maps stored as PNG files, as Detectron2's evaluators read them with PIL:
// semantic label maps (one 8- or 16-bit channel, a class per pixel) and COCO panoptic id maps
// (RGB, id = R + 256 G + 256² B, 0 = void). Every failure is a detkit::Error naming the file.
#include <cstdint>
#include <string>
#include <vector>

namespace detkit::evaluation {

/// One value per pixel, row-major.
struct PixelMap {
  int64_t height = 0, width = 0;
  std::vector<int64_t> values;
};

/// A label PNG of one 8- or 16-bit channel. A palette PNG is refused: PIL would give its
/// indices, OpenCV gives its colours, so it cannot be read as Detectron2 reads it.
PixelMap read_label_png(const std::string& path);

/// A panoptic PNG (RGB or RGBA, 8 bits) as ids R + 256 G + 256² B (panopticapi's rgb2id).
PixelMap read_panoptic_png(const std::string& path);
/// The same from the bytes of a PNG file; `name` names it in errors.
PixelMap decode_panoptic_png(const std::string& png, const std::string& name);

/// An (h, w) id map as an RGB PNG file's bytes (panopticapi's id2rgb); an id outside
/// [0, 2^24), which the three channels cannot hold, is an error naming `name` and the id.
std::string encode_panoptic_png(const int32_t* ids, int64_t height, int64_t width,
                                const std::string& name);

/// Refuses a map whose size differs from (height, width), naming `name` and both sizes.
void check_pixel_map_size(const PixelMap& map, int64_t height, int64_t width,
                          const std::string& name);

}  // namespace detkit::evaluation
