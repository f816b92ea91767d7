#pragma once
// OpenCV's imgcodecs, loaded at run time on first use, for what detkit's own PNG (libpng) and
// JPEG (TurboJPEG) code leaves to it: WebP, BMP, TIFF, JPEG 2000, Netpbm, Sun raster, Radiance
// HDR, OpenEXR; CMYK JPEGs, JPEGs TurboJPEG refuses or finds corrupt, JPEGs whose EXIF cannot be
// read. detkit does not link it: on Debian it brings GDAL, OpenEXR, libtiff, libheif and their
// own libraries (about 150 MB, 130 of the 160 libraries detkit would load) into every process.
// Without it installed, detkit reads and writes JPEG and PNG, and names the library for the rest.
#include <opencv2/core.hpp>
#include <string>
#include <vector>

namespace detkit::data {

/// The file name of the imgcodecs library of the OpenCV detkit was built with
/// ("libopencv_imgcodecs.so.406" for OpenCV 4.6).
std::string opencv_imgcodecs_library();

/// cv::imdecode(bytes, flags) (flags as cv::ImreadModes): an empty matrix when OpenCV cannot
/// decode the data, OpenCV's cv::Exception as it throws them. A detkit::Error naming `what` and
/// the library when imgcodecs cannot be loaded. Formats OpenCV decodes only from a file (Sun
/// raster, PFM, OpenEXR, Radiance HDR) go through cv::imread of a temporary file of detkit's in
/// TMPDIR, removed whatever happens (imdecode's own file stayed in /tmp when the decoder threw).
cv::Mat opencv_imdecode(const std::vector<unsigned char>& bytes, int flags,
                        const std::string& what);

/// cv::imencode(extension, image) with OpenCV's default parameters: false when OpenCV has no
/// encoder for the extension or fails; errors as opencv_imdecode.
bool opencv_imencode(const std::string& extension, const cv::Mat& image,
                     std::vector<unsigned char>* bytes, const std::string& what);

}  // namespace detkit::data
