// detkit._C's model zoo: the URL of the weights Detectron2 publishes for a config, and the
// configs that have them (detkit.model_zoo wraps these with Detectron2's names).
#include <pybind11/stl.h>

#include "detkit/checkpoint/model_zoo.h"
#include "python/src/bindings.h"

namespace detkit::python {

void bind_model_zoo(pybind11::module_& m) {
  m.def("model_zoo_url", &checkpoint::model_zoo_url, pybind11::arg("config_path"));
  m.def("model_zoo_configs", &checkpoint::model_zoo_configs);
}

}  // namespace detkit::python
