#include "detkit/data/builtin_meta.h"

#include <cstdint>
#include <utility>

#include "detkit/data/builtin_meta_panoptic.h"
#include "detkit/data/shapes/shapes_coco.h"
#include "detkit/data/shapes/shapes_geometry.h"
#include "detkit/utils/strings.h"

namespace detkit::data {
namespace {

// The 80 COCO categories: dataset id and name, in id order (the categories of COCO 2017's
// instances files, as Detectron2's COCO_CATEGORIES lists the things).
constexpr std::pair<int64_t, const char*> kCocoCategories[] = {
    {1, "person"},         {2, "bicycle"},       {3, "car"},
    {4, "motorcycle"},     {5, "airplane"},      {6, "bus"},
    {7, "train"},          {8, "truck"},         {9, "boat"},
    {10, "traffic light"}, {11, "fire hydrant"}, {13, "stop sign"},
    {14, "parking meter"}, {15, "bench"},        {16, "bird"},
    {17, "cat"},           {18, "dog"},          {19, "horse"},
    {20, "sheep"},         {21, "cow"},          {22, "elephant"},
    {23, "bear"},          {24, "zebra"},        {25, "giraffe"},
    {27, "backpack"},      {28, "umbrella"},     {31, "handbag"},
    {32, "tie"},           {33, "suitcase"},     {34, "frisbee"},
    {35, "skis"},          {36, "snowboard"},    {37, "sports ball"},
    {38, "kite"},          {39, "baseball bat"}, {40, "baseball glove"},
    {41, "skateboard"},    {42, "surfboard"},    {43, "tennis racket"},
    {44, "bottle"},        {46, "wine glass"},   {47, "cup"},
    {48, "fork"},          {49, "knife"},        {50, "spoon"},
    {51, "bowl"},          {52, "banana"},       {53, "apple"},
    {54, "sandwich"},      {55, "orange"},       {56, "broccoli"},
    {57, "carrot"},        {58, "hot dog"},      {59, "pizza"},
    {60, "donut"},         {61, "cake"},         {62, "chair"},
    {63, "couch"},         {64, "potted plant"}, {65, "bed"},
    {67, "dining table"},  {70, "toilet"},       {72, "tv"},
    {73, "laptop"},        {74, "mouse"},        {75, "remote"},
    {76, "keyboard"},      {77, "cell phone"},   {78, "microwave"},
    {79, "oven"},          {80, "toaster"},      {81, "sink"},
    {82, "refrigerator"},  {84, "book"},         {85, "clock"},
    {86, "vase"},          {87, "scissors"},     {88, "teddy bear"},
    {89, "hair drier"},    {90, "toothbrush"},
};

// Detectron2's COCO_PERSON_KEYPOINT_NAMES and COCO_PERSON_KEYPOINT_FLIP_MAP.
const char* const kPersonKeypoints[] = {
    "nose",           "left_eye",   "right_eye",   "left_ear",   "right_ear",   "left_shoulder",
    "right_shoulder", "left_elbow", "right_elbow", "left_wrist", "right_wrist", "left_hip",
    "right_hip",      "left_knee",  "right_knee",  "left_ankle", "right_ankle"};
const std::pair<const char*, const char*> kPersonKeypointFlipMap[] = {
    {"left_eye", "right_eye"},           {"left_ear", "right_ear"},
    {"left_shoulder", "right_shoulder"}, {"left_elbow", "right_elbow"},
    {"left_wrist", "right_wrist"},       {"left_hip", "right_hip"},
    {"left_knee", "right_knee"},         {"left_ankle", "right_ankle"}};

// Detectron2's KEYPOINT_CONNECTION_RULES for COCO persons: the skeleton the visualizer draws,
// each edge in its own colour (RGB).
const KeypointConnection kPersonKeypointConnections[] = {
    {"left_ear", "left_eye", {102, 204, 255}},
    {"right_ear", "right_eye", {51, 153, 255}},
    {"left_eye", "nose", {102, 0, 204}},
    {"nose", "right_eye", {51, 102, 255}},
    {"left_shoulder", "right_shoulder", {255, 128, 0}},
    {"left_shoulder", "left_elbow", {153, 255, 204}},
    {"right_shoulder", "right_elbow", {128, 229, 255}},
    {"left_elbow", "left_wrist", {153, 255, 153}},
    {"right_elbow", "right_wrist", {102, 255, 224}},
    {"left_hip", "right_hip", {255, 102, 0}},
    {"left_hip", "left_knee", {255, 255, 77}},
    {"right_hip", "right_knee", {153, 255, 204}},
    {"left_knee", "left_ankle", {191, 255, 128}},
    {"right_knee", "right_ankle", {255, 195, 77}}};

}  // namespace

std::optional<Metadata> builtin_metadata(const std::string& name) {
  Metadata m;
  m.name = name;
  m.evaluator_type = "coco";
  if (starts_with(name, "keypoints_coco_")) {
    m.set_things({"person"}, {1});
    for (const char* k : kPersonKeypoints) m.keypoint_names.emplace_back(k);
    for (const auto& [a, b] : kPersonKeypointFlipMap) m.keypoint_flip_map.emplace_back(a, b);
    for (const auto& rule : kPersonKeypointConnections) m.keypoint_connection_rules.push_back(rule);
    return m;
  }
  // COCO's things also for the COCOfied LVIS names, as Detectron2's get_lvis_instances_meta.
  if (starts_with(name, "coco_") || name == "lvis_v0.5_train_cocofied" ||
      name == "lvis_v0.5_val_cocofied") {
    std::vector<std::string> names;
    std::vector<int64_t> ids;
    for (const auto& [id, n] : kCocoCategories) {
      ids.push_back(id);
      names.emplace_back(n);
    }
    m.set_things(names, ids);
    if (is_builtin_coco_panoptic(name)) fill_builtin_coco_panoptic(name, m);
    return m;
  }
  if (name == "shapes_triangles_train" || name == "shapes_triangles_val") {
    m.set_things({shape_category_name(kTriangle)}, {kTriangle});
    for (const char* k : kTriangleKeypoints) m.keypoint_names.emplace_back(k);
    m.keypoint_flip_map = {{"left", "right"}};
    m.keypoint_connection_rules = {{"top", "left", {255, 128, 0}},
                                   {"left", "right", {51, 153, 255}},
                                   {"right", "top", {102, 0, 204}}};
    return m;
  }
  if (name == "shapes_train" || name == "shapes_val" || is_builtin_shapes_panoptic(name)) {
    std::vector<std::string> names;
    std::vector<int64_t> ids;
    for (int id : {kCircle, kTriangle, kRectangle}) {
      ids.push_back(id);
      names.emplace_back(shape_category_name(id));
    }
    m.set_things(names, ids);
    if (is_builtin_shapes_panoptic(name)) fill_builtin_shapes_panoptic(name, m);
    return m;
  }
  return std::nullopt;
}

}  // namespace detkit::data
