#include "detkit/data/image/opencv_codecs.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <opencv2/core/version.hpp>

#include "detkit/utils/error.h"

namespace detkit::data {
namespace {

// imgcodecs' functions by their C++ (Itanium ABI) names, as OpenCV's headers declare them.
using Imdecode = cv::Mat (*)(const cv::_InputArray&, int);
using Imread = cv::Mat (*)(const std::string&, int);
using Imencode = bool (*)(const std::string&, const cv::_InputArray&, std::vector<uchar>&,
                          const std::vector<int>&);
constexpr const char* kImdecode = "_ZN2cv8imdecodeERKNS_11_InputArrayEi";
constexpr const char* kImread =
    "_ZN2cv6imreadERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEi";
constexpr const char* kImencode =
    "_ZN2cv8imencodeERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEERKNS_11_InputArrayERSt6"
    "vectorIhSaIhEERKSB_IiSaIiEE";

struct Imgcodecs {
  Imdecode imdecode = nullptr;
  Imread imread = nullptr;
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
    imread = reinterpret_cast<Imread>(dlsym(library, kImread));
    imencode = reinterpret_cast<Imencode>(dlsym(library, kImencode));
    if (!imdecode || !imread || !imencode)
      problem = name + " lacks cv::imdecode, cv::imread or cv::imencode";
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

// The formats whose OpenCV 4.6 decoders read only from a file (Sun raster, PFM, OpenEXR, Radiance
// HDR): for them cv::imdecode writes the bytes to /tmp/__opencv_temp.XXXXXX and leaves that file
// behind when the decoder throws after the header (an image over OpenCV's size limit, an
// allocation that fails). detkit writes such bytes to a file of its own, removed on every path.
bool decoded_from_a_file(const std::vector<unsigned char>& b) {
  auto starts = [&](std::initializer_list<unsigned char> magic) {
    return b.size() >= magic.size() && std::equal(magic.begin(), magic.end(), b.begin());
  };
  auto text = [&](const char* magic) {
    const size_t n = std::strlen(magic);
    return b.size() >= n && std::memcmp(b.data(), magic, n) == 0;
  };
  return starts({0x59, 0xA6, 0x6A, 0x95}) ||    // Sun raster
         text("PF") || text("Pf") ||            // PFM
         starts({0x76, 0x2F, 0x31, 0x01}) ||    // OpenEXR
         text("#?RADIANCE") || text("#?RGBE");  // Radiance HDR
}

// A file in the temporary directory (TMPDIR, else /tmp) holding `bytes`, removed with the object.
class TemporaryCopy {
 public:
  TemporaryCopy(const std::vector<unsigned char>& bytes, const std::string& what) {
    path_ = (std::filesystem::temp_directory_path() / "detkit_image.XXXXXX").string();
    const int fd = mkstemp(path_.data());
    if (fd < 0)
      throw Error(what + ": cannot make a temporary file for OpenCV's decoder in " + path_ + " (" +
                  std::strerror(errno) + ")");
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const std::string why = std::strerror(errno);
        ::close(fd);
        std::remove(path_.c_str());
        throw Error(what + ": cannot write the temporary file " + path_ + " (" + why + ")");
      }
      done += static_cast<size_t>(n);
    }
    ::close(fd);
  }
  ~TemporaryCopy() { std::remove(path_.c_str()); }
  TemporaryCopy(const TemporaryCopy&) = delete;
  TemporaryCopy& operator=(const TemporaryCopy&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

std::string opencv_imgcodecs_library() {
  return "libopencv_imgcodecs.so." + std::to_string(CV_VERSION_MAJOR * 100 + CV_VERSION_MINOR);
}

cv::Mat opencv_imdecode(const std::vector<unsigned char>& bytes, int flags,
                        const std::string& what) {
  const Imgcodecs& codecs = imgcodecs(what);
  if (!decoded_from_a_file(bytes)) return codecs.imdecode(cv::_InputArray(bytes), flags);
  const TemporaryCopy copy(bytes, what);
  return codecs.imread(copy.path(), flags);
}

bool opencv_imencode(const std::string& extension, const cv::Mat& image,
                     std::vector<unsigned char>* bytes, const std::string& what) {
  return imgcodecs(what).imencode(extension, cv::_InputArray(image), *bytes, std::vector<int>());
}

}  // namespace detkit::data
