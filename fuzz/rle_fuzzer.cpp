// COCO RLE: compressed counts strings (pycocotools' rleFrString) and uncompressed counts, at a
// size from the first bytes; what decodes is decoded, measured, re-encoded and merged.
#include <cstring>

#include "detkit/structures/mask_ops.h"
#include "fuzz/fuzz_support.h"

namespace mask_ops = detkit::mask_ops;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const int64_t h = data[0] % 64, w = data[1] % 64;  // 0..63: empty masks included
  const bool compressed = data[2] % 2 == 0, intersect = data[2] & 2;
  data += 3;
  size -= 3;
  detkit::fuzz::refuse_only_with_named_errors([&] {
    mask_ops::RLE rle;
    if (compressed) {
      rle = mask_ops::from_string(std::string(reinterpret_cast<const char*>(data), size), h, w);
    } else {
      std::vector<int64_t> counts(size / 2);
      for (size_t i = 0; i < counts.size(); ++i)
        counts[i] = static_cast<int16_t>(data[2 * i] | (data[2 * i + 1] << 8));
      rle = mask_ops::from_uncompressed(counts, h, w);
    }
    const std::vector<uint8_t> mask = mask_ops::decode(rle);
    const mask_ops::RLE again = mask_ops::encode(mask.data(), h, w);
    if (mask_ops::to_string(again) != mask_ops::to_string(rle) && mask_ops::decode(again) != mask)
      __builtin_trap();  // decode and encode must agree
    (void)mask_ops::area(rle);
    (void)mask_ops::to_bbox(rle);
    (void)mask_ops::merge({rle, again}, intersect);
    (void)mask_ops::iou({rle}, {again}, {false});
  });
  return 0;
}
