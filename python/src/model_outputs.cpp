// Detectron2's output dicts from detkit's model outputs (model_outputs.h).
#include "python/src/model_outputs.h"

#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

namespace detkit::python {
namespace py = pybind11;

py::dict instances_dict(const structures::Instances& found) {
  py::dict out;
  out["image_size"] = py::make_tuple(found.image_height(), found.image_width());
  for (const std::string& name : found.field_names()) {
    if (name == "pred_boxes" || name == "proposal_boxes")
      out[name.c_str()] = found.boxes(name).tensor();
    else
      out[name.c_str()] = found.tensor(name);
  }
  return out;
}

// Detectron2's output dict: "instances" (the fields above), "sem_seg" (C, H, W) logits,
// "panoptic_seg" as (id map, segments_info) with its keys (things: id, isthing, score,
// category_id, instance_id; stuff: id, isthing, category_id, area).
py::dict output_dict(const structures::ModelOutput& output) {
  py::dict out;
  if (output.instances) out["instances"] = instances_dict(*output.instances);
  if (output.sem_seg) out["sem_seg"] = *output.sem_seg;
  if (output.panoptic_seg) {
    py::list segments;
    for (const auto& s : output.panoptic_seg->segments) {
      py::dict d;
      d["id"] = s.id;
      d["isthing"] = s.isthing;
      if (s.isthing) {
        d["score"] = s.score;
        d["category_id"] = s.category_id;
        d["instance_id"] = s.instance_id;
      } else {
        d["category_id"] = s.category_id;
        d["area"] = s.area;
      }
      segments.append(d);
    }
    out["panoptic_seg"] = py::make_tuple(output.panoptic_seg->ids, segments);
  }
  return out;
}

}  // namespace detkit::python
