#include "detkit/data/metadata.h"

#include <set>

#include "detkit/data/builtin_meta.h"
#include "detkit/data/catalog.h"
#include "detkit/utils/error.h"

namespace detkit::data {

namespace {

// Sets a class list and its dataset ids once; setting them again must give the same.
void set_classes(const std::string& dataset, const char* kind, std::vector<std::string>& classes,
                 std::vector<int64_t>& ids, const std::vector<std::string>& new_classes,
                 const std::vector<int64_t>& new_ids) {
  const std::string what = std::string(kind) + " class";
  if (new_classes.size() != new_ids.size())
    throw Error("metadata of '" + dataset + "': " + std::to_string(new_classes.size()) + " " +
                what + "es but " + std::to_string(new_ids.size()) + " dataset ids");
  if (std::set<int64_t>(new_ids.begin(), new_ids.end()).size() != new_ids.size())
    throw Error("metadata of '" + dataset + "': two " + what + "es share a dataset id");
  if (classes.empty()) {
    classes = new_classes;
    ids = new_ids;
    return;
  }
  if (classes.size() != new_classes.size())
    throw Error("metadata of '" + dataset + "' has " + std::to_string(classes.size()) + " " + what +
                "es; cannot set " + std::to_string(new_classes.size()));
  for (size_t i = 0; i < classes.size(); ++i) {
    if (classes[i] != new_classes[i] || ids[i] != new_ids[i])
      throw Error("metadata of '" + dataset + "': " + what + " " + std::to_string(i) + " is '" +
                  classes[i] + "' (id " + std::to_string(ids[i]) + "), cannot set it to '" +
                  new_classes[i] + "' (id " + std::to_string(new_ids[i]) + ")");
  }
}

}  // namespace

void Metadata::set_things(const std::vector<std::string>& classes,
                          const std::vector<int64_t>& ids) {
  set_classes(name, "thing", thing_classes, thing_dataset_ids, classes, ids);
}

void Metadata::set_stuff(const std::vector<std::string>& classes, const std::vector<int64_t>& ids) {
  set_classes(name, "stuff", stuff_classes, stuff_dataset_ids, classes, ids);
}

int Metadata::stuff_contiguous_id(int64_t dataset_id) const {
  for (size_t i = 0; i < stuff_dataset_ids.size(); ++i)
    if (stuff_dataset_ids[i] == dataset_id) return static_cast<int>(i);
  throw Error("metadata of '" + name + "': no stuff class has dataset id " +
              std::to_string(dataset_id));
}

int Metadata::contiguous_id(int64_t dataset_id) const {
  for (size_t i = 0; i < thing_dataset_ids.size(); ++i)
    if (thing_dataset_ids[i] == dataset_id) return static_cast<int>(i);
  throw Error("metadata of '" + name + "': no thing class has dataset id " +
              std::to_string(dataset_id));
}

int64_t Metadata::dataset_id(int contiguous) const {
  if (contiguous < 0 || static_cast<size_t>(contiguous) >= thing_dataset_ids.size())
    throw Error("metadata of '" + name + "': class " + std::to_string(contiguous) +
                " is outside its " + std::to_string(thing_dataset_ids.size()) + " thing classes");
  return thing_dataset_ids[contiguous];
}

int64_t Metadata::keypoint_index(const std::string& keypoint, const char* table) const {
  for (size_t i = 0; i < keypoint_names.size(); ++i)
    if (keypoint_names[i] == keypoint) return static_cast<int64_t>(i);
  throw Error("metadata of '" + name + "': " + table + " names '" + keypoint +
              "', which is not one of its keypoint_names");
}

std::vector<int64_t> Metadata::keypoint_flip_indices() const {
  std::vector<int64_t> flip(keypoint_names.size());
  for (size_t i = 0; i < flip.size(); ++i) flip[i] = static_cast<int64_t>(i);
  for (const auto& [a, b] : keypoint_flip_map) {
    const int64_t i = keypoint_index(a, "keypoint_flip_map");
    const int64_t j = keypoint_index(b, "keypoint_flip_map");
    flip[i] = j;
    flip[j] = i;
  }
  return flip;
}

std::vector<std::pair<std::array<int64_t, 2>, std::array<int, 3>>> Metadata::keypoint_skeleton()
    const {
  std::vector<std::pair<std::array<int64_t, 2>, std::array<int, 3>>> edges;
  for (const auto& rule : keypoint_connection_rules) {
    edges.push_back({{keypoint_index(rule.a, "keypoint_connection_rules"),
                      keypoint_index(rule.b, "keypoint_connection_rules")},
                     rule.rgb});
  }
  return edges;
}

Metadata& MetadataCatalog::get(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(name);
  if (it != entries_.end()) return it->second;
  Metadata m;
  if (auto builtin = builtin_metadata(name)) m = std::move(*builtin);
  m.name = name;
  if (global_catalog().contains(name)) record_files(global_catalog().get(name), m);
  return entries_.emplace(name, std::move(m)).first->second;
}

bool MetadataCatalog::contains(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.count(name) > 0;
}

MetadataCatalog& global_metadata() {
  static MetadataCatalog catalog;
  return catalog;
}

void record_things(const std::string& name, const CocoDataset& dataset) {
  std::vector<int64_t> ids;
  for (size_t k = 0; k < dataset.num_classes(); ++k)
    ids.push_back(dataset.category_id_of(static_cast<int>(k)));
  Metadata& m = global_metadata().get(name);
  m.set_things(dataset.class_names(), ids);
  if (dataset.format() != JsonFormat::kLvis) return;
  // Detectron2 takes these from its LVIS v1 tables; detkit from the file's categories.
  std::vector<int64_t> image_count;
  std::vector<std::string> frequency;
  for (const Category& c : dataset.categories()) {
    if (c.image_count >= 0) image_count.push_back(c.image_count);
    if (!c.frequency.empty()) frequency.push_back(c.frequency);
  }
  auto set_once = [&](auto& field, auto& values, const char* what) {
    if (values.size() != dataset.num_classes()) return;  // not every category has it
    if (!field.empty() && field != values)
      throw Error("metadata of '" + name + "': its " + what + " differs from the categories of " +
                  dataset.json_file());
    field = std::move(values);
  };
  set_once(m.class_image_count, image_count, "class_image_count");
  set_once(m.class_frequency, frequency, "class_frequency");
}

}  // namespace detkit::data
