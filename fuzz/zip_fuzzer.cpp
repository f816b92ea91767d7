// The zip reader under torch .pth files: central directory, local headers, sizes and CRCs.
#include "detkit/checkpoint/zip_archive.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  detkit::fuzz::refuse_only_with_named_errors([&] {
    const detkit::checkpoint::ZipArchive zip(std::string(reinterpret_cast<const char*>(data), size),
                                             "model.pth");
    for (const std::string& name : zip.names()) {
      detkit::fuzz::refuse_only_with_named_errors([&] { (void)zip.read(name); });
    }
  });
  return 0;
}
