#include "detkit/evaluation/voc_eval.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "detkit/data/voc/pascal_voc.h"
#include "detkit/data/voc/voc_xml.h"
#include "detkit/evaluation/numpy_sum.h"
#include "detkit/utils/error.h"

namespace detkit::evaluation {

namespace {

constexpr int kVocThresholds = 10;  // IoU 0.50, 0.55, ..., 0.95

// A finite number as Python's float() reads a whole token; nullopt otherwise.
std::optional<double> voc_parse_number(const std::string& token) {
  if (token.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(token.c_str(), &end);
  if (end != token.c_str() + token.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

double voc_mean(const std::vector<double>& values) {
  return numpy_sum(values) / static_cast<double>(values.size());
}

}  // namespace

void VocGroundTruth::add_image(const std::string& image_id, std::vector<VocGtObject> image_objects,
                               const std::string& source) {
  if (!index.emplace(image_id, image_ids.size()).second)
    throw Error(source + ": image '" + image_id + "' is listed twice");
  image_ids.push_back(image_id);
  objects.push_back(std::move(image_objects));
}

std::optional<size_t> VocGroundTruth::find(const std::string& image_id) const {
  auto it = index.find(image_id);
  if (it == index.end()) return std::nullopt;
  return it->second;
}

std::vector<VocGtObject> read_voc_gt_objects(const std::string& xml_file) {
  if (!std::filesystem::exists(xml_file))
    throw Error("Pascal VOC annotation file " + xml_file + " does not exist");
  const data::XmlElement root = data::read_xml_file(xml_file);
  std::vector<VocGtObject> out;
  const auto objects = root.children_named("object");
  for (size_t k = 0; k < objects.size(); ++k) {
    const data::XmlElement& o = *objects[k];
    const std::string where = root.name + "/object[" + std::to_string(k) + "]";
    VocGtObject object;
    object.name = data::voc_child(o, "name", xml_file, where).text;
    data::voc_child(o, "pose", xml_file, where);
    data::voc_int(data::voc_child(o, "truncated", xml_file, where), xml_file, where + "/truncated");
    object.difficult = data::voc_int(data::voc_child(o, "difficult", xml_file, where), xml_file,
                                     where + "/difficult") != 0;
    const data::XmlElement& box = data::voc_child(o, "bndbox", xml_file, where);
    const char* fields[4] = {"xmin", "ymin", "xmax", "ymax"};
    for (int j = 0; j < 4; ++j)
      object.bbox[j] = static_cast<double>(
          data::voc_int(data::voc_child(box, fields[j], xml_file, where + "/bndbox"), xml_file,
                        where + "/bndbox/" + fields[j]));
    out.push_back(std::move(object));
  }
  return out;
}

VocGroundTruth load_voc_ground_truth(const std::string& dirname, const std::string& split) {
  namespace fs = std::filesystem;
  const std::string image_set =
      (fs::path(dirname) / "ImageSets" / "Main" / (split + ".txt")).string();
  if (!fs::exists(image_set)) throw Error("Pascal VOC split file " + image_set + " does not exist");
  VocGroundTruth gt;
  for (const std::string& stem : data::read_voc_image_set(image_set))
    gt.add_image(
        stem, read_voc_gt_objects((fs::path(dirname) / "Annotations" / (stem + ".xml")).string()),
        image_set);
  return gt;
}

std::vector<VocDetection> parse_voc_detections(const std::string& text, const std::string& source,
                                               const VocGroundTruth& gt) {
  std::vector<VocDetection> out;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::istringstream words(line);
    std::vector<std::string> fields;
    for (std::string w; words >> w;) fields.push_back(w);
    const std::string where = source + ":" + std::to_string(number) + ": ";
    if (fields.size() != 6)
      throw Error(where + "expected '<image id> <score> <xmin> <ymin> <xmax> <ymax>', got '" +
                  line + "'");
    const auto image = gt.find(fields[0]);
    if (!image) throw Error(where + "image '" + fields[0] + "' is not in the ground truth's split");
    VocDetection d{*image, 0.0, {}};
    for (int j = 1; j < 6; ++j) {
      const auto value = voc_parse_number(fields[j]);
      if (!value) throw Error(where + "'" + fields[j] + "' is not a finite number");
      (j == 1 ? d.score : d.box[j - 2]) = *value;
    }
    out.push_back(d);
  }
  return out;
}

std::string voc_detection_line(const std::string& image_id, float score,
                               const std::array<float, 4>& box) {
  const float x0 = box[0] + 1.0f, y0 = box[1] + 1.0f;
  return fmt::format("{} {:.3f} {:.1f} {:.1f} {:.1f} {:.1f}", image_id, static_cast<double>(score),
                     static_cast<double>(x0), static_cast<double>(y0), static_cast<double>(box[2]),
                     static_cast<double>(box[3]));
}

double voc_ap(const std::vector<double>& recall, const std::vector<double>& precision,
              bool use_07_metric) {
  if (recall.size() != precision.size())
    throw Error("voc_ap: " + std::to_string(recall.size()) + " recalls but " +
                std::to_string(precision.size()) + " precisions");
  if (use_07_metric) {
    double ap = 0.0;
    for (int k = 0; k <= 10; ++k) {
      const double t = k * 0.1;  // np.arange(0.0, 1.1, 0.1)
      bool any = false;
      double p = 0.0;
      for (size_t i = 0; i < recall.size(); ++i)
        if (recall[i] >= t) {
          p = any ? std::max(p, precision[i]) : precision[i];
          any = true;
        }
      ap = ap + p / 11.0;
    }
    return ap;
  }
  std::vector<double> mrec = {0.0}, mpre = {0.0};
  mrec.insert(mrec.end(), recall.begin(), recall.end());
  mpre.insert(mpre.end(), precision.begin(), precision.end());
  mrec.push_back(1.0);
  mpre.push_back(0.0);
  for (size_t i = mpre.size() - 1; i > 0; --i) mpre[i - 1] = std::max(mpre[i - 1], mpre[i]);
  std::vector<double> terms;
  for (size_t i = 0; i + 1 < mrec.size(); ++i)
    if (mrec[i + 1] != mrec[i]) terms.push_back((mrec[i + 1] - mrec[i]) * mpre[i + 1]);
  return numpy_sum(terms);
}

VocCurve voc_eval(const VocGroundTruth& gt, const std::string& class_name,
                  const std::vector<VocDetection>& detections, double ovthresh,
                  bool use_07_metric) {
  // The class's objects per image, and whether each was matched already.
  std::vector<std::vector<const VocGtObject*>> class_objects(gt.objects.size());
  std::vector<std::vector<char>> matched(gt.objects.size());
  VocCurve curve;
  for (size_t i = 0; i < gt.objects.size(); ++i) {
    for (const VocGtObject& o : gt.objects[i])
      if (o.name == class_name) {
        class_objects[i].push_back(&o);
        if (!o.difficult) ++curve.npos;
      }
    matched[i].assign(class_objects[i].size(), 0);
  }
  std::vector<size_t> order(detections.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return detections[a].score > detections[b].score; });

  const size_t nd = detections.size();
  std::vector<double> tp(nd, 0.0), fp(nd, 0.0);
  for (size_t d = 0; d < nd; ++d) {
    const VocDetection& det = detections[order[d]];
    if (det.image >= class_objects.size())
      throw Error("voc_eval: a detection of class '" + class_name + "' names image " +
                  std::to_string(det.image) + " of " + std::to_string(class_objects.size()));
    const auto& objects = class_objects[det.image];
    const auto& bb = det.box;
    double ovmax = -std::numeric_limits<double>::infinity();
    size_t jmax = 0;
    bool nan_overlap = false;
    for (size_t j = 0; j < objects.size(); ++j) {
      const auto& g = objects[j]->bbox;
      const double ixmin = std::max(g[0], bb[0]), iymin = std::max(g[1], bb[1]);
      const double ixmax = std::min(g[2], bb[2]), iymax = std::min(g[3], bb[3]);
      const double iw = std::max(ixmax - ixmin + 1.0, 0.0);
      const double ih = std::max(iymax - iymin + 1.0, 0.0);
      const double inters = iw * ih;
      const double uni = (bb[2] - bb[0] + 1.0) * (bb[3] - bb[1] + 1.0) +
                         (g[2] - g[0] + 1.0) * (g[3] - g[1] + 1.0) - inters;
      const double overlap = inters / uni;
      if (std::isnan(overlap)) {  // np.max gives NaN, which matches nothing
        nan_overlap = true;
        break;
      }
      if (j == 0 || overlap > ovmax) {
        ovmax = overlap;
        jmax = j;
      }
    }
    if (!nan_overlap && ovmax > ovthresh) {
      if (!objects[jmax]->difficult) {
        if (!matched[det.image][jmax]) {
          tp[d] = 1.0;
          matched[det.image][jmax] = 1;
        } else {
          fp[d] = 1.0;
        }
      }
    } else {
      fp[d] = 1.0;
    }
  }
  double tp_sum = 0.0, fp_sum = 0.0;
  curve.recall.resize(nd);
  curve.precision.resize(nd);
  for (size_t d = 0; d < nd; ++d) {
    tp_sum += tp[d];
    fp_sum += fp[d];
    curve.recall[d] = tp_sum / static_cast<double>(curve.npos);
    curve.precision[d] = tp_sum / std::max(tp_sum + fp_sum, std::numeric_limits<double>::epsilon());
  }
  curve.ap = voc_ap(curve.recall, curve.precision, use_07_metric);
  return curve;
}

VocResult evaluate_voc(const VocGroundTruth& gt, const std::vector<std::string>& class_names,
                       const std::vector<std::vector<VocDetection>>& detections,
                       bool use_07_metric) {
  if (detections.size() != class_names.size())
    throw Error("evaluate_voc: detections of " + std::to_string(detections.size()) +
                " classes for " + std::to_string(class_names.size()) + " class names");
  VocResult result;
  result.class_names = class_names;
  result.use_07_metric = use_07_metric;
  result.ap.resize(class_names.size());
  std::vector<double> map_at(kVocThresholds);
  for (int t = 0; t < kVocThresholds; ++t) {
    const int thresh = 50 + 5 * t;
    std::vector<double> aps;
    for (size_t c = 0; c < class_names.size(); ++c) {
      const double ap =
          voc_eval(gt, class_names[c], detections[c], thresh / 100.0, use_07_metric).ap;
      result.ap[c][t] = ap * 100;
      aps.push_back(ap * 100);
    }
    map_at[t] = voc_mean(aps);
  }
  result.AP = voc_mean(map_at);
  result.AP50 = map_at[0];
  result.AP75 = map_at[5];
  return result;
}

std::string voc_result_json(const VocResult& result) {
  nlohmann::ordered_json bbox;
  for (const auto& [name, value] :
       {std::pair{"AP", result.AP}, std::pair{"AP50", result.AP50}, std::pair{"AP75", result.AP75}})
    bbox[name] = std::isnan(value) ? nlohmann::ordered_json() : nlohmann::ordered_json(value);
  nlohmann::ordered_json j;
  j["bbox"] = bbox;
  return j.dump();
}

std::string voc_result_table(const VocResult& result) {
  std::string out = fmt::format("Pascal VOC {} metric (IoU 0.50:0.05:0.95), bbox:\n",
                                result.use_07_metric ? "2007 11-point" : "area");
  out += "|   AP   |  AP50  |  AP75  |\n|:------:|:------:|:------:|\n";
  out += fmt::format("| {:6.3f} | {:6.3f} | {:6.3f} |\n", result.AP, result.AP50, result.AP75);
  size_t width = 8;
  for (const auto& name : result.class_names) width = std::max(width, name.size());
  out += fmt::format("Per-class AP:\n| {:<{}} | AP50    | AP75    |\n|:{}|:--------|:--------|\n",
                     "class", width, std::string(width + 1, '-'));
  for (size_t c = 0; c < result.class_names.size(); ++c)
    out += fmt::format("| {:<{}} | {:<7.3f} | {:<7.3f} |\n", result.class_names[c], width,
                       result.ap[c][0], result.ap[c][5]);
  return out;
}

}  // namespace detkit::evaluation
