// detkit._C.Predictor: engine::DefaultPredictor called on a NumPy image as Detectron2's is, the
// GIL released while it runs. It returns the model's outputs: the Instances' fields as torch
// tensors plus "image_size", sem_seg, panoptic_seg; detkit.engine.DefaultPredictor wraps the
// fields in Instances and Boxes.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <memory>
#include <opencv2/core/mat.hpp>

#include "detkit/engine/predictor.h"
#include "detkit/utils/error.h"
#include "python/src/bindings.h"
#include "python/src/model_outputs.h"

namespace detkit::python {
namespace py = pybind11;

namespace {

std::string shape_of(const py::array& a) {
  std::string s = "(";
  for (py::ssize_t d = 0; d < a.ndim(); ++d) s += (d ? ", " : "") + std::to_string(a.shape(d));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

// A (H, W, 3) uint8 array as an OpenCV image over the same bytes (a C-contiguous copy first when
// it is a strided view, such as image[:, :, ::-1]). Anything else is a named detkit::Error.
py::array_t<uint8_t> checked_image(const py::object& object) {
  if (!py::isinstance<py::array>(object))
    throw Error(
        "DefaultPredictor: the image must be a numpy.ndarray (H, W, 3) of uint8 in BGR "
        "order, got Python " +
        py::str(py::type::of(object).attr("__name__")).cast<std::string>());
  const py::array array = py::reinterpret_borrow<py::array>(object);
  if (!array.dtype().is(py::dtype::of<uint8_t>()))
    throw Error("DefaultPredictor: the image must be uint8 (H, W, 3) as cv2.imread gives, got " +
                py::str(array.dtype()).cast<std::string>() + " of shape " + shape_of(array));
  if (array.ndim() != 3 || array.shape(2) != 3 || array.shape(0) == 0 || array.shape(1) == 0)
    throw Error("DefaultPredictor: the image must have shape (H, W, 3) with H, W > 0, got " +
                shape_of(array));
  return py::array_t<uint8_t, py::array::c_style>::ensure(array);
}

}  // namespace

void bind_predictor(py::module_& m) {
  py::class_<engine::DefaultPredictor, std::shared_ptr<engine::DefaultPredictor>>(m, "Predictor")
      .def(py::init([](const config::CfgNode& cfg) {
             py::gil_scoped_release released;
             return std::make_shared<engine::DefaultPredictor>(cfg);
           }),
           py::arg("cfg"))
      .def(
          "__call__",
          [](engine::DefaultPredictor& predictor, const py::object& image) {
            const py::array_t<uint8_t> pixels = checked_image(image);
            const cv::Mat bgr(static_cast<int>(pixels.shape(0)), static_cast<int>(pixels.shape(1)),
                              CV_8UC3, const_cast<uint8_t*>(pixels.data()));
            structures::ModelOutput output;
            {
              py::gil_scoped_release released;
              output = predictor.outputs(bgr);
            }
            return output_dict(output);
          },
          py::arg("original_image"));
}

}  // namespace detkit::python
