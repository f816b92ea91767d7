// detkit._C's model zoo: the URL of the weights Detectron2 publishes for a config, and the
// configs that have them (detkit.model_zoo wraps these with Detectron2's names), and the local
// copy of a URL (detkit.utils.file_io.PathManager's handler of detectron2:// and http(s)://).
#include <pybind11/stl.h>

#include "detkit/checkpoint/model_zoo.h"
#include "python/src/bindings.h"

namespace detkit::python {

void bind_model_zoo(pybind11::module_& m) {
  m.def("model_zoo_url", &checkpoint::model_zoo_url, pybind11::arg("config_path"));
  m.def("model_zoo_configs", &checkpoint::model_zoo_configs);
  m.def("local_weights_path", &checkpoint::local_weights_path, pybind11::arg("path"),
        pybind11::call_guard<pybind11::gil_scoped_release>(),
        "A local file for a path or URL (detectron2://, http(s)://): the cached copy, downloaded "
        "first when absent, as MODEL.WEIGHTS is");
}

}  // namespace detkit::python
