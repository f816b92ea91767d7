#include "detkit/data/image/jpeg_encode.h"

#include <turbojpeg.h>

#include <memory>
#include <string>

#include "detkit/utils/error.h"

namespace detkit::data {
namespace {

struct TjDeleter {
  void operator()(void* handle) const { tjDestroy(handle); }
};

struct TjBufferDeleter {
  void operator()(unsigned char* buffer) const { tjFree(buffer); }
};

}  // namespace

std::vector<unsigned char> encode_jpeg(const cv::Mat& image, int quality) {
  if (image.depth() != CV_8U || (image.channels() != 3 && image.channels() != 1) || image.empty())
    throw Error("a JPEG is encoded from 8-bit BGR or grey pixels; got " +
                std::to_string(image.channels()) + " channel(s) of depth " +
                std::to_string(image.depth()) + " (OpenCV's depth code), " +
                std::to_string(image.cols) + "x" + std::to_string(image.rows));
  if (quality < 1 || quality > 100)
    throw Error("JPEG quality must be 1..100, got " + std::to_string(quality));
  thread_local std::unique_ptr<void, TjDeleter> handle(tjInitCompress());
  // TurboJPEG's default forward DCT is the fast one; libjpeg's (OpenCV's) the accurate one.
  if (!handle) throw Error("TurboJPEG could not start a compressor");
  const bool grey = image.channels() == 1;
  unsigned char* raw = nullptr;
  unsigned long size = 0;  // NOLINT(runtime/int): TurboJPEG's type
  const int failed = tjCompress2(handle.get(), image.data, image.cols, static_cast<int>(image.step),
                                 image.rows, grey ? TJPF_GRAY : TJPF_BGR, &raw, &size,
                                 grey ? TJSAMP_GRAY : TJSAMP_420, quality, TJFLAG_ACCURATEDCT);
  const std::unique_ptr<unsigned char, TjBufferDeleter> owned(raw);
  if (failed != 0)
    throw Error(std::string("cannot encode the image as JPEG: ") + tjGetErrorStr2(handle.get()));
  return std::vector<unsigned char>(raw, raw + size);
}

}  // namespace detkit::data
