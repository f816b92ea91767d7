#pragma once
// One function per part of detkit._C, each in its own file.
#include <pybind11/pybind11.h>

namespace detkit::python {

void bind_checkpoint(pybind11::module_& m);  // checkpoint_bindings.cpp: Caffe2 names, matching
void bind_cocoeval(pybind11::module_& m);    // cocoeval_bindings.cpp: COCOeval_opt's C++ half
void bind_comm(pybind11::module_& m);       // comm_bindings.cpp: launch environments, comm
void bind_config(pybind11::module_& m);     // config_bindings.cpp: CfgTree, get_cfg
void bind_image(pybind11::module_& m);      // image_bindings.cpp: read_image
void bind_keypoints(pybind11::module_& m);  // keypoints_bindings.cpp: heatmap encode / decode
void bind_masks(pybind11::module_& m);      // masks_bindings.cpp: PolygonMasks, BitMasks
void bind_metadata(pybind11::module_& m);   // metadata_bindings.cpp: metadata_of
void bind_model(pybind11::module_& m);      // model_bindings.cpp: Model, build_model
void bind_model_zoo(pybind11::module_& m);  // model_zoo_bindings.cpp
void bind_predictor(pybind11::module_& m);  // predictor_bindings.cpp: Predictor
void bind_trainer(pybind11::module_& m);    // trainer_bindings.cpp: Trainer, the catalog
void bind_transforms(pybind11::module_& m);  // transforms_bindings.cpp: resize, warp, polygon cut
void bind_visualizer(pybind11::module_& m); // visualizer_bindings.cpp: draw_instance_predictions

}  // namespace detkit::python
