// detkit._C's image reading for detkit.data.detection_utils.read_image: the data pipeline's own
// reader (detkit/data/image/image_io.h: EXIF orientation applied, truncated or oversized files
// refused naming the file), returning an (H, W, 3) uint8 numpy array in BGR or RGB order.
#include <pybind11/numpy.h>

#include <cstring>
#include <string>

#include "detkit/data/image/image_io.h"
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
}

}  // namespace detkit::python
