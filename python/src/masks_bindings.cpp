// detkit._C's masks: structures::PolygonMasks and BitMasks (the rasteriser the data pipeline and
// COCO evaluation use, equal to pycocotools'), under detkit.structures.masks' Detectron2 names.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "detkit/structures/mask_ops.h"
#include "detkit/structures/masks.h"
#include "detkit/utils/error.h"
#include "python/src/bindings.h"

namespace detkit::python {
namespace py = pybind11;

namespace {

using Instance = std::vector<structures::Polygon>;

// The C++ checks (TORCH_CHECK) as detkit.Error, with the function named.
template <class F>
auto named(const char* what, F&& f) {
  try {
    return f();
  } catch (const c10::Error& e) {
    throw Error(std::string(what) + ": " + e.msg());
  }
}

// An RLE from COCO's counts: a compressed string (str or bytes) or the list of runs; checked
// (mask_ops throws detkit::Error naming what is wrong).
mask_ops::RLE rle_of(const py::object& counts, int64_t h, int64_t w) {
  if (py::isinstance<py::str>(counts) || py::isinstance<py::bytes>(counts)) {
    return mask_ops::from_string(counts.cast<std::string>(), h, w);
  }
  return mask_ops::from_uncompressed(counts.cast<std::vector<int64_t>>(), h, w);
}

}  // namespace

void bind_masks(py::module_& m) {
  // A COCO RLE ({"counts": str / bytes or [runs], "size": [h, w]}) as an (h, w) uint8 0/1 mask
  // (pycocotools' mask.decode).
  m.def(
      "rle_decode",
      [](const py::object& counts, int64_t h, int64_t w) {
        const std::vector<uint8_t> pixels = mask_ops::decode(rle_of(counts, h, w));
        py::array_t<uint8_t> out({static_cast<py::ssize_t>(h), static_cast<py::ssize_t>(w)});
        std::copy(pixels.begin(), pixels.end(), out.mutable_data());
        return out;
      },
      py::arg("counts"), py::arg("height"), py::arg("width"));
  // An RLE's compressed counts (bytes, as pycocotools' encode gives) and its area.
  m.def(
      "rle_compress",
      [](const py::object& counts, int64_t h, int64_t w) {
        return py::bytes(mask_ops::to_string(rle_of(counts, h, w)));
      },
      py::arg("counts"), py::arg("height"), py::arg("width"));
  m.def(
      "rle_area",
      [](const py::object& counts, int64_t h, int64_t w) {
        return mask_ops::area(rle_of(counts, h, w));
      },
      py::arg("counts"), py::arg("height"), py::arg("width"));
  m.def(
      "polygons_to_bitmask",
      [](const Instance& polygons, int64_t height, int64_t width) {
        return named("polygons_to_bitmask", [&] {
          structures::PolygonMasks({polygons});  // checks every polygon
          return structures::polygons_to_bitmask(polygons, height, width);
        });
      },
      py::arg("polygons"), py::arg("height"), py::arg("width"),
      py::call_guard<py::gil_scoped_release>());
  m.def(
      "polygon_masks_area",
      [](const std::vector<Instance>& masks) {
        return named("PolygonMasks.area", [&] { return structures::PolygonMasks(masks).area(); });
      },
      py::arg("polygons"));
  m.def(
      "polygon_masks_bounding_boxes",
      [](const std::vector<Instance>& masks) {
        return named("PolygonMasks.get_bounding_boxes",
                     [&] { return structures::PolygonMasks(masks).get_bounding_boxes().tensor(); });
      },
      py::arg("polygons"));
  m.def(
      "polygon_masks_crop_and_resize",
      [](const std::vector<Instance>& masks, const at::Tensor& boxes, int64_t mask_size) {
        return named("PolygonMasks.crop_and_resize", [&] {
          return structures::PolygonMasks(masks).crop_and_resize(boxes, mask_size);
        });
      },
      py::arg("polygons"), py::arg("boxes"), py::arg("mask_size"),
      py::call_guard<py::gil_scoped_release>());
  m.def(
      "bitmasks_from_polygons",
      [](const std::vector<Instance>& masks, int64_t height, int64_t width) {
        return named("BitMasks.from_polygon_masks", [&] {
          return structures::PolygonMasks(masks).to_bitmasks(height, width).tensor();
        });
      },
      py::arg("polygons"), py::arg("height"), py::arg("width"),
      py::call_guard<py::gil_scoped_release>());
  m.def(
      "bitmasks_bounding_boxes",
      [](const at::Tensor& masks) {
        return named("BitMasks.get_bounding_boxes",
                     [&] { return structures::BitMasks(masks).get_bounding_boxes().tensor(); });
      },
      py::arg("masks"));
}

}  // namespace detkit::python
