#include "detkit/data/builtin_meta_panoptic.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "detkit/data/shapes/shapes_stuff.h"
#include "detkit/utils/strings.h"

namespace detkit::data {
namespace {

// COCO's 53 stuff categories of the panoptic task: id and name, in id order (Detectron2's
// COCO_CATEGORIES with isthing 0).
constexpr std::pair<int64_t, const char*> kCocoStuffCategories[] = {
    {92, "banner"},
    {93, "blanket"},
    {95, "bridge"},
    {100, "cardboard"},
    {107, "counter"},
    {109, "curtain"},
    {112, "door-stuff"},
    {118, "floor-wood"},
    {119, "flower"},
    {122, "fruit"},
    {125, "gravel"},
    {128, "house"},
    {130, "light"},
    {133, "mirror-stuff"},
    {138, "net"},
    {141, "pillow"},
    {144, "platform"},
    {145, "playingfield"},
    {147, "railroad"},
    {148, "river"},
    {149, "road"},
    {151, "roof"},
    {154, "sand"},
    {155, "sea"},
    {156, "shelf"},
    {159, "snow"},
    {161, "stairs"},
    {166, "tent"},
    {168, "towel"},
    {171, "wall-brick"},
    {175, "wall-stone"},
    {176, "wall-tile"},
    {177, "wall-wood"},
    {178, "water-other"},
    {180, "window-blind"},
    {181, "window-other"},
    {184, "tree-merged"},
    {185, "fence-merged"},
    {186, "ceiling-merged"},
    {187, "sky-other-merged"},
    {188, "cabinet-merged"},
    {189, "table-merged"},
    {190, "floor-other-merged"},
    {191, "pavement-merged"},
    {192, "mountain-merged"},
    {193, "grass-merged"},
    {194, "dirt-merged"},
    {195, "paper-merged"},
    {196, "food-other-merged"},
    {197, "building-other-merged"},
    {198, "rock-merged"},
    {199, "wall-other-merged"},
    {200, "rug-merged"},
};

const char* const kBuiltinPanopticSplits[] = {"coco_2017_train", "coco_2017_val",
                                              "coco_2017_val_100"};

// Detectron2's separated stuff names drop the "-other" and "-merged" markers ("sky-other-merged"
// -> "sky").
std::string separated_stuff_name(std::string name) {
  for (const std::string marker : {"-other", "-merged"}) {
    for (size_t at = name.find(marker); at != std::string::npos; at = name.find(marker, at))
      name.erase(at, marker.size());
  }
  return name;
}

// Metadata of a built-in panoptic name, its things set: "_stuffonly" has its "_separated" twin's
// metadata (Detectron2 passes both the same dict) but is evaluated as semantic segmentation.
void fill_panoptic(const std::string& name, const std::vector<PanopticCategory>& stuff,
                   Metadata& m) {
  const bool stuffonly = ends_with(name, "_stuffonly");
  const bool separated = stuffonly || ends_with(name, "_separated");
  m.evaluator_type = stuffonly ? "sem_seg" : "coco_panoptic_seg";
  m.ignore_label = 255;
  std::vector<PanopticCategory> categories = stuff;
  for (size_t k = 0; k < m.thing_classes.size(); ++k)
    categories.push_back({m.thing_dataset_ids[k], m.thing_classes[k], true});
  std::sort(categories.begin(), categories.end(),
            [](const PanopticCategory& a, const PanopticCategory& b) { return a.id < b.id; });
  set_stuff_from_categories(m, categories, separated);
  if (!separated) m.label_divisor = 1000;
}

}  // namespace

bool is_builtin_coco_panoptic(const std::string& name) {
  for (const char* split : kBuiltinPanopticSplits) {
    const std::string base = std::string(split) + "_panoptic";
    if (name == base || name == base + "_separated" || name == base + "_stuffonly") return true;
  }
  return false;
}

void fill_builtin_coco_panoptic(const std::string& name, Metadata& m) {
  const bool separated = ends_with(name, "_stuffonly") || ends_with(name, "_separated");
  std::vector<PanopticCategory> stuff;
  for (const auto& [id, n] : kCocoStuffCategories)
    stuff.push_back({id, separated ? separated_stuff_name(n) : n, false});
  fill_panoptic(name, stuff, m);
}

bool is_builtin_shapes_panoptic(const std::string& name) {
  for (const char* split : {"shapes_train", "shapes_val"}) {
    const std::string base = std::string(split) + "_panoptic";
    if (name == base || name == base + "_separated" || name == base + "_stuffonly") return true;
  }
  return false;
}

void fill_builtin_shapes_panoptic(const std::string& name, Metadata& m) {
  std::vector<PanopticCategory> stuff;
  for (int id : kStuffCategories) stuff.push_back({id, stuff_category_name(id), false});
  fill_panoptic(name, stuff, m);
}

void set_stuff_from_categories(Metadata& m, const std::vector<PanopticCategory>& categories,
                               bool separated) {
  std::vector<std::string> classes;
  std::vector<int64_t> ids;
  if (separated) {  // prepare_panoptic_fpn.py labels every thing pixel 0
    classes.push_back("things");
    ids.push_back(0);
  }
  for (const PanopticCategory& c : categories) {
    if (separated && c.isthing) continue;
    classes.push_back(c.name);
    ids.push_back(c.id);
  }
  m.set_stuff(classes, ids);
}

}  // namespace detkit::data
