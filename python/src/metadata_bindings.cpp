// metadata_of(name): detkit's metadata of a dataset name (built-in tables, or what a
// registration or a loaded file put there) as the attributes Detectron2's MetadataCatalog gives
// it; fields detkit holds nothing for are left out.
#include <pybind11/stl.h>

#include <algorithm>

#include "detkit/data/catalog.h"
#include "detkit/data/metadata.h"
#include "python/src/bindings.h"

namespace py = pybind11;

namespace detkit::python {
namespace {

py::dict metadata_of(const std::string& name) {
  py::dict out;
  // Only names the catalog knows: get() would make an empty entry for any other.
  const auto names = data::global_catalog().names();
  if (!data::global_metadata().contains(name) &&
      std::find(names.begin(), names.end(), name) == names.end()) {
    return out;
  }
  const data::Metadata& m = data::global_metadata().get(name);
  auto put = [&out](const char* key, const std::string& value) {
    if (!value.empty()) out[key] = value;
  };
  put("evaluator_type", m.evaluator_type);
  put("json_file", m.json_file);
  put("image_root", m.image_root);
  put("dirname", m.dirname);
  put("split", m.split);
  if (m.year != 0) out["year"] = m.year;
  if (!m.thing_classes.empty()) {
    out["thing_classes"] = m.thing_classes;
    py::dict to_contiguous;
    for (size_t i = 0; i < m.thing_dataset_ids.size(); ++i)
      to_contiguous[py::int_(m.thing_dataset_ids[i])] = py::int_(i);
    out["thing_dataset_id_to_contiguous_id"] = to_contiguous;
  }
  if (!m.class_image_count.empty()) out["class_image_count"] = m.class_image_count;
  if (!m.class_frequency.empty()) out["class_frequency"] = m.class_frequency;
  if (!m.stuff_classes.empty()) {
    out["stuff_classes"] = m.stuff_classes;
    py::dict to_contiguous;
    for (size_t i = 0; i < m.stuff_dataset_ids.size(); ++i)
      to_contiguous[py::int_(m.stuff_dataset_ids[i])] = py::int_(i);
    out["stuff_dataset_id_to_contiguous_id"] = to_contiguous;
  }
  put("panoptic_json", m.panoptic_json);
  put("panoptic_root", m.panoptic_root);
  put("sem_seg_root", m.sem_seg_root);
  if (m.ignore_label >= 0) out["ignore_label"] = m.ignore_label;
  if (m.label_divisor >= 0) out["label_divisor"] = m.label_divisor;
  if (!m.keypoint_names.empty()) {
    out["keypoint_names"] = m.keypoint_names;
    out["keypoint_flip_map"] = m.keypoint_flip_map;
    py::list rules;
    for (const auto& rule : m.keypoint_connection_rules)
      rules.append(
          py::make_tuple(rule.a, rule.b, py::make_tuple(rule.rgb[0], rule.rgb[1], rule.rgb[2])));
    out["keypoint_connection_rules"] = rules;
  }
  return out;
}

}  // namespace

void bind_metadata(py::module_& m) {
  m.def("metadata_of", &metadata_of, py::arg("name"),
        "detkit's metadata of a dataset name as Detectron2's Metadata attributes (a dict; empty "
        "for a name detkit does not know)");
}

}  // namespace detkit::python
