// detkit._C.CfgTree: the C++ config tree itself, so that Python reads, sets, merges and dumps with
// exactly the CLI's types, defaults and errors (an unknown key, a value of the wrong type, a set
// on a frozen config). detkit.config.CfgNode gives it Detectron2's attribute access.
#include <pybind11/stl.h>

#include "detkit/config/defaults.h"
#include "detkit/config/versions.h"
#include "detkit/utils/error.h"
#include "python/src/bindings.h"

namespace detkit::python {
namespace py = pybind11;
using config::CfgNode;
using config::CfgValue;

namespace {

py::object to_python(const CfgValue& v) {
  switch (v.kind()) {
    case CfgValue::Kind::Null:
      return py::none();
    case CfgValue::Kind::Bool:
      return py::bool_(v.as_bool());
    case CfgValue::Kind::Int:
      return py::int_(v.as_int());
    case CfgValue::Kind::Float:
      return py::float_(v.as_float());
    case CfgValue::Kind::String:
      return py::str(v.as_string());
    case CfgValue::Kind::List: {
      // Detectron2's defaults hold tuples where detkit's tree holds lists: yacs treats the two
      // alike, and so does every reader here.
      py::list out;
      for (const CfgValue& item : v.as_list()) out.append(to_python(item));
      return std::move(out);
    }
  }
  return py::none();
}

CfgValue from_python(const std::string& key, const py::handle& v) {
  if (v.is_none()) return {};
  if (py::isinstance<py::bool_>(v)) return CfgValue(v.cast<bool>());
  if (py::isinstance<py::int_>(v)) return CfgValue(v.cast<int64_t>());
  if (py::isinstance<py::float_>(v)) return CfgValue(v.cast<double>());
  if (py::isinstance<py::str>(v)) return CfgValue(v.cast<std::string>());
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    std::vector<CfgValue> items;
    for (const py::handle& item : v) items.push_back(from_python(key, item));
    return CfgValue::list(std::move(items));
  }
  throw Error("config key '" + key + "': a value must be None, bool, int, float, str or a list/" +
              "tuple of these, got Python " +
              py::str(py::type::of(v).attr("__name__")).cast<std::string>());
}

}  // namespace

void bind_config(py::module_& m) {
  // dynamic_attr: detkit.config keeps the sections added empty from Python on the tree object
  py::class_<CfgNode>(m, "CfgTree", py::dynamic_attr())
      .def("kind",
           [](const CfgNode& c, const std::string& key) -> py::object {
             if (!c.has(key)) return py::none();
             try {
               c.section(key);
               return py::str("section");
             } catch (const Error&) {
               return py::str("leaf");
             }
           })
      .def("get", [](const CfgNode& c, const std::string& key) { return to_python(c.get(key)); })
      .def("set", [](CfgNode& c, const std::string& key,
                     const py::handle& value) { c.set(key, from_python(key, value), "Python"); })
      // A new key set from Python on an unfrozen config (yacs adds it; Detectron2's projects
      // extend the config so): declared with the value as its default and type.
      .def("define",
           [](CfgNode& c, const std::string& key, const py::handle& value) {
             if (c.is_frozen())
               throw Error("config key '" + key + "': the config is frozen (defrost() first)");
             if (c.has(key)) throw Error("config key '" + key + "' exists already");
             CfgValue v = from_python(key, value);
             if (v.kind() == CfgValue::Kind::Null)
               c.define(key, v, CfgValue::Kind::String);
             else
               c.define(key, v);
           })
      .def("merge_from_file", &CfgNode::merge_from_file, py::arg("path"))
      .def("merge_from_list", &CfgNode::merge_from_list, py::arg("key_values"))
      .def("freeze", &CfgNode::freeze)
      .def("defrost", &CfgNode::defrost)
      .def("is_frozen", &CfgNode::is_frozen)
      .def("dump", &CfgNode::dump)
      .def("leaf_keys", &CfgNode::leaf_keys)
      .def("clone", [](const CfgNode& c) { return CfgNode(c); })
      .def("__eq__", [](const CfgNode& a, const CfgNode& b) { return a == b; });
  m.def("get_cfg", &config::get_cfg,
        "A fresh, unfrozen copy of Detectron2's defaults (and detkit's keys)");
  m.def(
      "config_key_renames",
      [] {
        py::dict out;
        for (const config::KeyRename& r : config::config_key_renames()) {
          py::int_ version(r.version);
          if (!out.contains(version)) out[version] = py::list();
          out[version].cast<py::list>().append(py::make_tuple(r.old_name, r.new_name));
        }
        return out;
      },
      "{version: [(name before that version, name from it), ...]}: the config tree's renames");
}

}  // namespace detkit::python
