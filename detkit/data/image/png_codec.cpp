#include "detkit/data/image/png_codec.h"

#include <png.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>

#include "detkit/data/image/exif_orientation.h"
#include "detkit/utils/error.h"

namespace detkit::data {
namespace {

// libpng reports errors by longjmp to the setjmp of the function that called it. The functions
// that call setjmp below hold only trivially destructible locals, so the jump skips no destructor;
// matrices and buffers are made by their callers.
struct PngStatus {
  char message[256] = "";
};

void on_error(png_structp png, png_const_charp message) {
  auto* status = static_cast<PngStatus*>(png_get_error_ptr(png));
  std::snprintf(status->message, sizeof(status->message), "%s", message);
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}  // as OpenCV: warnings do not stop a decode

struct PngSource {
  const unsigned char* data;
  size_t size;
  size_t at;
};

void read_source(png_structp png, png_bytep out, size_t count) {
  auto* source = static_cast<PngSource*>(png_get_io_ptr(png));
  if (count > source->size - source->at) png_error(png, "the PNG data ends early");
  std::memcpy(out, source->data + source->at, count);
  source->at += count;
}

struct PngHeader {
  png_uint_32 width = 0, height = 0;
  int bit_depth = 0, color_type = 0;
  bool transparency = false;  // a tRNS chunk on an RGB or palette image
  int orientation = 1;        // from an eXIf chunk before the image data, as OpenCV reads it
};

bool read_header(png_structp png, png_infop info, PngHeader* header) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_info(png, info);
  int interlace = 0;
  png_get_IHDR(png, info, &header->width, &header->height, &header->bit_depth, &header->color_type,
               &interlace, nullptr, nullptr);
  if (header->color_type == PNG_COLOR_TYPE_RGB || header->color_type == PNG_COLOR_TYPE_PALETTE) {
    png_bytep alpha = nullptr;
    int count = 0;
    png_color_16p values = nullptr;
    header->transparency = png_get_tRNS(png, info, &alpha, &count, &values) != 0 && count > 0;
  }
  png_uint_32 exif_size = 0;
  png_bytep exif = nullptr;
  if (png_get_eXIf_1(png, info, &exif_size, &exif) != 0 && exif && exif_size > 0)
    header->orientation = exif_orientation_of_tiff(exif, exif_size);
  return true;
}

// The transformations OpenCV's PngDecoder::readData asks of libpng, for a matrix of `channels`
// channels and `depth`, then every row.
bool read_rows(png_structp png, png_infop info, const PngHeader& header, int channels, int depth,
               png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  if (depth == CV_8U && header.bit_depth == 16)
    png_set_strip_16(png);
  else
    png_set_swap(png);  // 16-bit samples are stored big-endian; x86 and Arm are little-endian
  if (channels < 4)
    png_set_strip_alpha(png);
  else
    png_set_tRNS_to_alpha(png);
  if (header.color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  const bool colour_source = (header.color_type & PNG_COLOR_MASK_COLOR) != 0;
  if (!colour_source && header.bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (colour_source && channels > 1)
    png_set_bgr(png);
  else if (channels > 1)
    png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  png_read_image(png, rows);
  png_read_end(png, nullptr);
  return true;
}

struct ReadStructs {
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~ReadStructs() { png_destroy_read_struct(&png, info ? &info : nullptr, nullptr); }
};

void append_output(png_structp png, png_bytep data, size_t count) {
  auto* out = static_cast<std::vector<unsigned char>*>(png_get_io_ptr(png));
  out->insert(out->end(), data, data + count);
}

void flush_output(png_structp) {}

bool write_rows(png_structp png, png_infop info, const cv::Mat& image, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_SUB);
  png_set_compression_level(png, Z_BEST_SPEED);
  png_set_compression_strategy(png, Z_RLE);
  const int channels = image.channels();
  png_set_IHDR(png, info, static_cast<png_uint_32>(image.cols),
               static_cast<png_uint_32>(image.rows), image.depth() == CV_8U ? 8 : 16,
               channels == 1   ? PNG_COLOR_TYPE_GRAY
               : channels == 3 ? PNG_COLOR_TYPE_RGB
                               : PNG_COLOR_TYPE_RGB_ALPHA,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  png_set_bgr(png);
  png_set_swap(png);
  png_write_image(png, rows);
  png_write_end(png, info);
  return true;
}

struct WriteStructs {
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~WriteStructs() { png_destroy_write_struct(&png, info ? &info : nullptr); }
};

}  // namespace

bool is_png(const std::vector<unsigned char>& bytes) {
  return bytes.size() >= 8 && png_sig_cmp(bytes.data(), 0, 8) == 0;
}

cv::Mat decode_png(const std::vector<unsigned char>& bytes, PngChannels channels,
                   std::string* error, int* orientation) {
  PngStatus status;
  ReadStructs s;
  s.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &status, on_error, on_warning);
  if (s.png) s.info = png_create_info_struct(s.png);
  if (!s.png || !s.info) {
    *error = "libpng could not start (out of memory)";
    return {};
  }
  PngSource source{bytes.data(), bytes.size(), 0};
  png_set_read_fn(s.png, &source, read_source);
  PngHeader header;
  if (!read_header(s.png, s.info, &header)) {
    *error = status.message;
    return {};
  }
  int count = 3, depth = CV_8U;
  if (channels == PngChannels::kUnchanged) {
    const bool alpha = header.color_type == PNG_COLOR_TYPE_GRAY_ALPHA ||
                       header.color_type == PNG_COLOR_TYPE_RGB_ALPHA || header.transparency;
    count = alpha ? 4 : (header.color_type & PNG_COLOR_MASK_COLOR) != 0 ? 3 : 1;
    if (header.bit_depth == 16) depth = CV_16U;
  }
  cv::Mat image(static_cast<int>(header.height), static_cast<int>(header.width),
                CV_MAKETYPE(depth, count));
  std::vector<png_bytep> rows(header.height);
  for (png_uint_32 y = 0; y < header.height; ++y) rows[y] = image.ptr(static_cast<int>(y));
  if (!read_rows(s.png, s.info, header, count, depth, rows.data())) {
    *error = status.message;
    return {};
  }
  if (orientation) *orientation = header.orientation;
  return image;
}

std::vector<unsigned char> encode_png(const cv::Mat& image) {
  if ((image.depth() != CV_8U && image.depth() != CV_16U) ||
      (image.channels() != 1 && image.channels() != 3 && image.channels() != 4) || image.empty())
    throw Error("a PNG holds 1, 3 or 4 channels of 8 or 16 bits; got an image of " +
                std::to_string(image.channels()) + " channel(s) of depth " +
                std::to_string(image.depth()) + " (OpenCV's depth code), " +
                std::to_string(image.cols) + "x" + std::to_string(image.rows));
  PngStatus status;
  WriteStructs s;
  s.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &status, on_error, on_warning);
  if (s.png) s.info = png_create_info_struct(s.png);
  if (!s.png || !s.info) throw Error("libpng could not start (out of memory)");
  std::vector<unsigned char> out;
  png_set_write_fn(s.png, &out, append_output, flush_output);
  std::vector<png_bytep> rows(static_cast<size_t>(image.rows));
  for (int y = 0; y < image.rows; ++y)
    rows[static_cast<size_t>(y)] = const_cast<png_bytep>(image.ptr(y));
  if (!write_rows(s.png, s.info, image, rows.data()))
    throw Error(std::string("cannot encode the image as PNG: ") + status.message);
  return out;
}

}  // namespace detkit::data
