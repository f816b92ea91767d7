// detkit._C's image reading for detkit.data.detection_utils.read_image: the data pipeline's own
// reader (detkit/data/image/image_io.h: EXIF orientation applied, truncated or oversized files
// refused naming the file), returning an (H, W, 3) uint8 numpy array in BGR or RGB order; and
// writing one (image_write.h, as `detkit infer` writes its drawings).
#include <pybind11/numpy.h>

#include <cstring>
#include <opencv2/imgproc.hpp>
#include <string>

#include "detkit/data/image/image_io.h"
#include "detkit/data/image/image_write.h"
#include "detkit/utils/error.h"
#include "python/src/bindings.h"

namespace detkit::python {
namespace py = pybind11;

void bind_image(py::module_& m) {
  m.def(
      "read_image",
      [](const std::string& path, const std::string& format) {
        cv::Mat image;
        {
          py::gil_scoped_release released;
          image = data::read_image(path, format);
        }
        py::array_t<uint8_t> out({static_cast<py::ssize_t>(image.rows),
                                  static_cast<py::ssize_t>(image.cols), py::ssize_t{3}});
        const cv::Mat continuous = image.isContinuous() ? image : image.clone();
        std::memcpy(out.mutable_data(), continuous.data, continuous.total() * 3);
        return out;
      },
      py::arg("path"), py::arg("format"),
      "the image file at `path` as (H, W, 3) uint8 in `format` order ('BGR' or 'RGB')");
  m.def(
      "write_image",
      [](const std::string& path, const py::array_t<uint8_t, py::array::c_style>& rgb) {
        if (rgb.ndim() != 3 || rgb.shape(2) != 3)
          throw Error("write_image: " + path + ": expected an RGB (H, W, 3) uint8 image");
        cv::Mat bgr;
        cv::cvtColor(cv::Mat(static_cast<int>(rgb.shape(0)), static_cast<int>(rgb.shape(1)),
                             CV_8UC3, const_cast<uint8_t*>(rgb.data())),
                     bgr, cv::COLOR_RGB2BGR);
        try {
          data::write_image(path, bgr);
        } catch (const Error& e) {
          throw Error(std::string("write_image: ") + e.what());
        }
      },
      py::arg("path"), py::arg("rgb"),
      "an RGB (H, W, 3) uint8 image written in the format the extension names (PNG, JPEG, or "
      "others through OpenCV)");
}

}  // namespace detkit::python
