// detkit._C's image transforms for detkit.data.transforms (Detectron2's numpy-facing transforms):
// the data pipeline's own resamplers (PIL's bilinear and nearest, bit for bit), its polygon cut
// to a crop window (shapely's intersection, as Detectron2 cuts polygons) and OpenCV's affine warp
// (Detectron2's RotationTransform calls cv2.warpAffine). Images cross as C-contiguous numpy arrays
// (H, W) or (H, W, C) (uint8; float32 / float64 too for the warp) and come back as new arrays.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "detkit/data/transforms/pil_resize.h"
#include "detkit/data/transforms/polygon_crop.h"
#include "detkit/utils/error.h"
#include "python/src/bindings.h"

namespace detkit::python {
namespace py = pybind11;

namespace {

using Image = py::array_t<uint8_t, py::array::c_style>;

// A view of the array's pixels (no copy): 1 to 4 channels.
cv::Mat as_mat(const Image& image, const char* what) {
  if (image.ndim() != 2 && image.ndim() != 3) {
    throw Error(std::string(what) + ": an image is (H, W) or (H, W, C), got " +
                std::to_string(image.ndim()) + " dimensions");
  }
  const int channels = image.ndim() == 3 ? static_cast<int>(image.shape(2)) : 1;
  if (channels < 1 || channels > 4) {
    throw Error(std::string(what) + ": an image has 1 to 4 channels, got " +
                std::to_string(channels));
  }
  return cv::Mat(static_cast<int>(image.shape(0)), static_cast<int>(image.shape(1)),
                 CV_8UC(channels), const_cast<uint8_t*>(image.data()));
}

// A new array with the pixels of `mat`, shaped as the input was (2 or 3 dimensions).
Image to_array(const cv::Mat& mat, py::ssize_t ndim) {
  std::vector<py::ssize_t> shape{mat.rows, mat.cols};
  if (ndim == 3) shape.push_back(mat.channels());
  Image out(shape);
  const cv::Mat continuous = mat.isContinuous() ? mat : mat.clone();
  std::memcpy(out.mutable_data(), continuous.data, continuous.total() * continuous.elemSize());
  return out;
}

void check_size(int64_t h, int64_t w, const char* what) {
  if (h <= 0 || w <= 0) {
    throw Error(std::string(what) + ": the output size must be positive, got (" +
                std::to_string(h) + ", " + std::to_string(w) + ")");
  }
}

}  // namespace

void bind_transforms(py::module_& m) {
  m.def(
      "pil_resize",
      [](const Image& image, int64_t new_h, int64_t new_w, bool nearest) {
        check_size(new_h, new_w, "ResizeTransform");
        const cv::Mat in = as_mat(image, "ResizeTransform");
        cv::Mat out;
        {
          py::gil_scoped_release released;
          out =
              nearest
                  ? data::pil_nearest_resize(in, static_cast<int>(new_h), static_cast<int>(new_w))
                  : data::pil_bilinear_resize(in, static_cast<int>(new_h), static_cast<int>(new_w));
        }
        return to_array(out, image.ndim());
      },
      py::arg("image"), py::arg("new_h"), py::arg("new_w"), py::arg("nearest"),
      "uint8 image resized as PIL's Image.resize with BILINEAR (or NEAREST)");
  m.def(
      "warp_affine",
      [](const py::array& image, const std::vector<double>& matrix, int64_t out_h, int64_t out_w,
         bool nearest) {
        check_size(out_h, out_w, "RotationTransform");
        if (matrix.size() != 6) {
          throw Error("RotationTransform: the affine matrix has 6 values, got " +
                      std::to_string(matrix.size()));
        }
        if (image.ndim() != 2 && image.ndim() != 3) {
          throw Error("RotationTransform: an image is (H, W) or (H, W, C), got " +
                      std::to_string(image.ndim()) + " dimensions");
        }
        // uint8, float32 or float64 pixels, as cv2.warpAffine takes them; C-contiguous.
        int depth = -1;
        if (py::isinstance<py::array_t<uint8_t>>(image)) depth = CV_8U;
        if (py::isinstance<py::array_t<float>>(image)) depth = CV_32F;
        if (py::isinstance<py::array_t<double>>(image)) depth = CV_64F;
        const py::ssize_t channels = image.ndim() == 3 ? image.shape(2) : 1;
        if (depth < 0 || channels < 1 || channels > 4 || !(image.flags() & py::array::c_style)) {
          throw Error(
              "RotationTransform: a C-contiguous uint8, float32 or float64 image of 1 to "
              "4 channels, got dtype " +
              py::str(image.dtype()).cast<std::string>() + " with " + std::to_string(channels) +
              " channels");
        }
        const cv::Mat in(static_cast<int>(image.shape(0)), static_cast<int>(image.shape(1)),
                         CV_MAKETYPE(depth, static_cast<int>(channels)),
                         const_cast<void*>(image.data()));
        const cv::Mat affine(2, 3, CV_64F, const_cast<double*>(matrix.data()));
        cv::Mat out;
        {
          py::gil_scoped_release released;
          cv::warpAffine(in, out, affine,
                         cv::Size(static_cast<int>(out_w), static_cast<int>(out_h)),
                         nearest ? cv::INTER_NEAREST : cv::INTER_LINEAR);
        }
        std::vector<py::ssize_t> shape{out.rows, out.cols};
        if (image.ndim() == 3) shape.push_back(channels);
        py::array result(image.dtype(), shape);
        std::memcpy(result.mutable_data(), out.data, out.total() * out.elemSize());
        return result;
      },
      py::arg("image"), py::arg("matrix"), py::arg("out_h"), py::arg("out_w"), py::arg("nearest"),
      "uint8 / float image warped as cv2.warpAffine(image, matrix, (out_w, out_h), flags=...)");
  m.def(
      "crop_polygon",
      [](const std::vector<double>& xy, double x_min, double y_min, double x_max, double y_max) {
        if (xy.size() % 2 != 0 || xy.size() < 6) {
          throw Error("CropTransform.apply_polygons: a polygon has at least 3 (x, y) points, got " +
                      std::to_string(xy.size()) + " coordinates");
        }
        return data::crop_polygon(xy, x_min, y_min, x_max, y_max);
      },
      py::arg("xy"), py::arg("x_min"), py::arg("y_min"), py::arg("x_max"), py::arg("y_max"),
      "the pieces of polygon `xy` inside the box (shapely's intersection), not moved");
}

}  // namespace detkit::python
