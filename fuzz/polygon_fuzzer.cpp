// Polygon rasterisation (pycocotools' frPoly): coordinates of any value, NaN and infinities
// included, at a size from the first bytes.
#include <cstring>

#include "detkit/structures/mask_ops.h"
#include "fuzz/fuzz_support.h"

namespace mask_ops = detkit::mask_ops;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const int64_t h = data[0] % 96, w = data[1] % 96;
  const size_t num_polygons = 1 + data[2] % 3;
  data += 3;
  size -= 3;
  std::vector<double> values(size / sizeof(float));
  for (size_t i = 0; i < values.size(); ++i) {
    float f;
    std::memcpy(&f, data + i * sizeof(float), sizeof(float));
    values[i] = f;
  }
  std::vector<std::vector<double>> polygons(num_polygons);
  for (size_t i = 0; i < values.size(); ++i) polygons[i % num_polygons].push_back(values[i]);
  detkit::fuzz::refuse_only_with_named_errors([&] {
    const mask_ops::RLE rle = mask_ops::from_polygons(polygons, h, w);
    (void)mask_ops::area(rle);
    (void)mask_ops::decode(rle);
    if (values.size() >= 4)
      (void)mask_ops::from_bbox({values[0], values[1], values[2], values[3]}, h, w);
  });
  return 0;
}
