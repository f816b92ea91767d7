#pragma once
// A model's outputs as the Python dicts detkit.engine and detkit.modeling wrap (Detectron2's
// output dicts): shared by the Predictor and the Model bindings.
#include <pybind11/pybind11.h>

#include "detkit/structures/model_io.h"

namespace detkit::python {

/// The Instances' fields as torch tensors (boxes fields as their (N, 4) tensor) plus
/// "image_size" (h, w).
pybind11::dict instances_dict(const structures::Instances& found);

/// "instances" (instances_dict), "sem_seg" (C, H, W) logits, "panoptic_seg" as (id map,
/// segments_info) with Detectron2's keys.
pybind11::dict output_dict(const structures::ModelOutput& output);

}  // namespace detkit::python
