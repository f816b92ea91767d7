// Image files as the data loader reads them: JPEG through TurboJPEG (and its OpenCV fallback),
// PNG through libpng, anything else through OpenCV's imgcodecs (loaded at run time), truncation
// checks and declared sizes (every header encoded_image_size reads) first.
#include "detkit/data/image/image_io.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = detkit::fuzz::write_scratch("image", data, size);
  detkit::fuzz::refuse_only_with_named_errors(
      [&] { (void)detkit::data::read_image(path, size % 2 ? "RGB" : "BGR"); });
  return 0;
}
