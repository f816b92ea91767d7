#include "detkit/data/image/opencv_codecs.h"

#include <dlfcn.h>

#include <opencv2/core/version.hpp>

#include "detkit/utils/error.h"

namespace detkit::data {
namespace {

// imgcodecs' functions by their C++ (Itanium ABI) names, as OpenCV's headers declare them.
using Imdecode = cv::Mat (*)(const cv::_InputArray&, int);
using Imencode = bool (*)(const std::string&, const cv::_InputArray&, std::vector<uchar>&,
                          const std::vector<int>&);
constexpr const char* kImdecode = "_ZN2cv8imdecodeERKNS_11_InputArrayEi";
constexpr const char* kImencode =
    "_ZN2cv8imencodeERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEERKNS_11_InputArrayERSt6"
    "vectorIhSaIhEERKSB_IiSaIiEE";

struct Imgcodecs {
  Imdecode imdecode = nullptr;
  Imencode imencode = nullptr;
  std::string problem;  // why they could not be loaded

  Imgcodecs() {
    const std::string name = opencv_imgcodecs_library();
    void* library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept loaded for the process
    if (!library) {
      const char* why = dlerror();
      problem = why ? why : name + ": cannot be loaded";
      return;
    }
    imdecode = reinterpret_cast<Imdecode>(dlsym(library, kImdecode));
    imencode = reinterpret_cast<Imencode>(dlsym(library, kImencode));
    if (!imdecode || !imencode) problem = name + " lacks cv::imdecode or cv::imencode";
  }
};

const Imgcodecs& imgcodecs(const std::string& what) {
  static const Imgcodecs loaded;
  if (!loaded.problem.empty())
    throw Error(what +
                ": detkit reads and writes JPEG and PNG itself and leaves other formats "
                "(and CMYK or damaged JPEGs) to OpenCV's imgcodecs, which is not available (" +
                loaded.problem + "); install it (Debian: libopencv-imgcodecs" +
                std::to_string(CV_VERSION_MAJOR) + (CV_VERSION_MINOR < 10 ? "0" : "") +
                std::to_string(CV_VERSION_MINOR) + ") or convert the file to PNG or JPEG");
  return loaded;
}

}  // namespace

std::string opencv_imgcodecs_library() {
  return "libopencv_imgcodecs.so." + std::to_string(CV_VERSION_MAJOR * 100 + CV_VERSION_MINOR);
}

cv::Mat opencv_imdecode(const std::vector<unsigned char>& bytes, int flags,
                        const std::string& what) {
  return imgcodecs(what).imdecode(cv::_InputArray(bytes), flags);
}

bool opencv_imencode(const std::string& extension, const cv::Mat& image,
                     std::vector<unsigned char>* bytes, const std::string& what) {
  return imgcodecs(what).imencode(extension, cv::_InputArray(image), *bytes, std::vector<int>());
}

}  // namespace detkit::data
