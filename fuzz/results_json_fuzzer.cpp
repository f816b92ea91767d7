// COCO results JSON (what `detkit evaluate --results` reads): bbox, segm and keypoint results,
// the first byte choosing which.
#include "detkit/evaluation/coco_results.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using detkit::evaluation::IouType;
  if (size == 0) return 0;
  const IouType types[] = {IouType::Bbox, IouType::Segm, IouType::Keypoints};
  const IouType type = types[data[0] % 3];
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  detkit::evaluation::GroundTruthIds gt;
  gt.image_ids = {1, 2, 3, 42};
  gt.category_ids = {1, 2, 18};
  detkit::fuzz::refuse_only_with_named_errors(
      [&] { (void)detkit::evaluation::parse_coco_results(text, "results.json", type, gt, 3); });
  return 0;
}
