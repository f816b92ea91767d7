#include "detkit/evaluation/sem_seg_metrics.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "detkit/evaluation/numpy_sum.h"
#include "detkit/utils/error.h"

namespace detkit::evaluation {

ConfusionMatrix::ConfusionMatrix(int64_t num_classes)
    : num_classes_(num_classes),
      counts_(static_cast<size_t>((num_classes + 1) * (num_classes + 1)), 0) {
  if (num_classes < 1) throw Error("semantic segmentation needs at least one class");
}

void ConfusionMatrix::add(const int64_t* predicted, const int64_t* ground_truth, size_t n) {
  const int64_t side = num_classes_ + 1;
  for (size_t i = 0; i < n; ++i) ++counts_[predicted[i] * side + ground_truth[i]];
}

void ConfusionMatrix::add(const ConfusionMatrix& other) {
  if (other.num_classes_ != num_classes_)
    throw Error("confusion matrices of " + std::to_string(num_classes_) + " and " +
                std::to_string(other.num_classes_) + " classes cannot be summed");
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Python's repr of a float: the shortest round-trip digits, ".0" on integral values.
std::string python_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string python_string(const std::string& s) {
  const char quote =
      s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, quote);
  for (char c : s) {
    if (c == '\\' || c == quote) out += '\\';
    out += c;
  }
  return out + quote;
}

nlohmann::ordered_json number_or_null(double v) {
  return std::isnan(v) ? nlohmann::ordered_json() : nlohmann::ordered_json(v);
}

std::string percent_cell(double v) { return std::isnan(v) ? "nan" : fmt::format("{:.3f}", v); }

}  // namespace

SemSegMetrics sem_seg_metrics(const ConfusionMatrix& matrix, const ConfusionMatrix* boundary) {
  const int64_t c = matrix.num_classes();
  // Detectron2's arrays, over the real classes (the ignore row and column left out).
  std::vector<double> tp(c), pos_gt(c, 0.), pos_pred(c, 0.);
  for (int64_t i = 0; i < c; ++i) {
    tp[i] = static_cast<double>(matrix.at(i, i));
    int64_t column = 0, row = 0;
    for (int64_t j = 0; j < c; ++j) {
      column += matrix.at(j, i);
      row += matrix.at(i, j);
    }
    pos_gt[i] = static_cast<double>(column);
    pos_pred[i] = static_cast<double>(row);
  }
  const double gt_pixels = numpy_sum(pos_gt);
  SemSegMetrics m;
  m.acc.assign(c, kNaN);
  m.iou.assign(c, kNaN);
  std::vector<double> valid_acc, valid_iou, weighted_iou;
  for (int64_t i = 0; i < c; ++i) {
    if (pos_gt[i] <= 0) continue;  // no ground truth: NaN, left out of every mean
    m.acc[i] = tp[i] / pos_gt[i];
    valid_acc.push_back(m.acc[i]);
    const double union_pixels = pos_gt[i] + pos_pred[i] - tp[i];
    if (union_pixels <= 0) continue;
    m.iou[i] = tp[i] / union_pixels;
    valid_iou.push_back(m.iou[i]);
    weighted_iou.push_back(m.iou[i] * (pos_gt[i] / gt_pixels));
  }
  // numpy: a mean over no class is 0 / 0 = NaN.
  m.macc = 100 * (numpy_sum(valid_acc) / static_cast<double>(valid_acc.size()));
  m.miou = 100 * (numpy_sum(valid_iou) / static_cast<double>(valid_iou.size()));
  m.fwiou = 100 * numpy_sum(weighted_iou);
  m.pacc = 100 * (numpy_sum(tp) / gt_pixels);
  for (double& v : m.acc) v *= 100;
  for (double& v : m.iou) v *= 100;
  if (boundary) {
    m.boundary_iou.assign(c, kNaN);
    for (int64_t i = 0; i < c; ++i) {
      int64_t column = 0, row = 0;
      for (int64_t j = 0; j < c; ++j) {
        column += boundary->at(j, i);
        row += boundary->at(i, j);
      }
      const double b_tp = static_cast<double>(boundary->at(i, i));
      const double b_union = static_cast<double>(column) + static_cast<double>(row) - b_tp;
      if (b_union > 0) m.boundary_iou[i] = 100 * (b_tp / b_union);
    }
  }
  return m;
}

std::vector<std::pair<std::string, double>> sem_seg_results(
    const SemSegMetrics& metrics, const std::vector<std::string>& class_names) {
  std::vector<std::pair<std::string, double>> res = {{"mIoU", metrics.miou},
                                                     {"fwIoU", metrics.fwiou}};
  for (size_t i = 0; i < class_names.size(); ++i) {
    res.emplace_back("IoU-" + class_names[i], metrics.iou[i]);
    if (metrics.boundary_iou.empty()) continue;
    const double iou = metrics.iou[i], b_iou = metrics.boundary_iou[i];
    res.emplace_back("BoundaryIoU-" + class_names[i], b_iou);
    // Python's min(iou, b_iou): iou unless b_iou < iou, so a NaN IoU stays NaN.
    res.emplace_back("min(IoU, B-Iou)-" + class_names[i], b_iou < iou ? b_iou : iou);
  }
  res.emplace_back("mACC", metrics.macc);
  res.emplace_back("pACC", metrics.pacc);
  for (size_t i = 0; i < class_names.size(); ++i)
    res.emplace_back("ACC-" + class_names[i], metrics.acc[i]);
  return res;
}

std::string sem_seg_results_repr(const std::vector<std::pair<std::string, double>>& results) {
  std::string out = "OrderedDict([('sem_seg', {";
  for (size_t i = 0; i < results.size(); ++i) {
    if (i > 0) out += ", ";
    out += python_string(results[i].first) + ": " + python_float(results[i].second);
  }
  return out + "})])";
}

std::string sem_seg_metrics_json(const SemSegMetrics& metrics) {
  nlohmann::ordered_json j;
  j["mIoU"] = number_or_null(metrics.miou);
  j["fwIoU"] = number_or_null(metrics.fwiou);
  j["mACC"] = number_or_null(metrics.macc);
  j["pACC"] = number_or_null(metrics.pacc);
  j["IoU"] = nlohmann::ordered_json::array();
  j["ACC"] = nlohmann::ordered_json::array();
  for (double v : metrics.iou) j["IoU"].push_back(number_or_null(v));
  for (double v : metrics.acc) j["ACC"].push_back(number_or_null(v));
  return j.dump();
}

std::string sem_seg_metrics_table(const SemSegMetrics& metrics,
                                  const std::vector<std::string>& class_names) {
  std::string out =
      "Semantic segmentation results:\n|  mIoU  |  fwIoU  |  mACC  |  pACC  |\n"
      "|:------:|:-------:|:------:|:------:|\n";
  out += fmt::format("| {:^6} | {:^7} | {:^6} | {:^6} |\n", percent_cell(metrics.miou),
                     percent_cell(metrics.fwiou), percent_cell(metrics.macc),
                     percent_cell(metrics.pacc));
  size_t width = 5;
  for (const auto& name : class_names) width = std::max(width, name.size());
  out += fmt::format("| {:<{}} | IoU     | ACC     |\n|:{:-<{}}|:--------|:--------|\n", "class",
                     width, "", width + 1);
  for (size_t i = 0; i < class_names.size(); ++i)
    out += fmt::format("| {:<{}} | {:<7} | {:<7} |\n", class_names[i], width,
                       percent_cell(metrics.iou[i]), percent_cell(metrics.acc[i]));
  return out;
}

std::vector<int64_t> label_boundary(const std::vector<int64_t>& labels, int64_t height,
                                    int64_t width) {
  cv::Mat mask(static_cast<int>(height), static_cast<int>(width), CV_8U);
  for (int64_t i = 0; i < height * width; ++i) {
    if (labels[i] < 0 || labels[i] > 255)
      throw Error("Boundary IoU needs labels in 0..255, got " + std::to_string(labels[i]));
    mask.data[i] = static_cast<uint8_t>(labels[i]);
  }
  const int iterations = std::max(
      1,
      static_cast<int>(std::nearbyint(0.02 * std::sqrt(double(height * height + width * width)))));
  cv::Mat padded, eroded;
  cv::copyMakeBorder(mask, padded, 1, 1, 1, 1, cv::BORDER_CONSTANT, cv::Scalar(0));
  cv::erode(padded, eroded, cv::Mat::ones(3, 3, CV_8U), cv::Point(-1, -1), iterations);
  const cv::Mat inner = eroded(cv::Rect(1, 1, static_cast<int>(width), static_cast<int>(height)));
  std::vector<int64_t> out(static_cast<size_t>(height * width));
  size_t i = 0;
  for (int y = 0; y < inner.rows; ++y) {
    const uint8_t* e = inner.ptr<uint8_t>(y);
    const uint8_t* m = mask.ptr<uint8_t>(y);
    for (int x = 0; x < inner.cols; ++x) out[i++] = m[x] - e[x];  // erosion never exceeds L
  }
  return out;
}

}  // namespace detkit::evaluation
