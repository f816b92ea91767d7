#include "detkit/visualization/training_curves.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <opencv2/imgproc.hpp>

#include "detkit/utils/error.h"
#include "detkit/visualization/visualizer.h"

namespace detkit::visualization {
namespace {

using Points = std::vector<std::pair<int64_t, double>>;

struct Panel {
  std::string title;
  std::vector<std::pair<std::string, Points>> series;
  bool log_scale = false;
  bool markers = false;
};

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) { lo = std::min(lo, v), hi = std::max(hi, v); }
  bool empty() const { return !(lo <= hi); }
};

// "Nice" tick values (1, 2, 5 x 10^k) covering [lo, hi], about `count` of them.
std::vector<double> nice_ticks(double lo, double hi, int count) {
  if (hi <= lo) hi = lo + 1;
  const double raw = (hi - lo) / count;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw) {
      step = m * power;
      break;
    }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push_back(t);
  return ticks;
}

std::string tick_label(double v) {
  if (v == 0) return "0";
  const double a = std::abs(v);
  if (a >= 1e4 || a < 1e-3) return fmt::format("{:.0e}", v);
  return fmt::format("{:g}", std::round(v * 1e6) / 1e6);
}

void text(cv::Mat& img, const std::string& s, cv::Point at, double scale = 0.5,
          cv::Scalar color = cv::Scalar(40, 40, 40), int thickness = 1) {
  cv::putText(img, s, at, cv::FONT_HERSHEY_SIMPLEX, scale, color, thickness, cv::LINE_AA);
}

int text_width(const std::string& s, double scale = 0.5) {
  int base = 0;
  return cv::getTextSize(s, cv::FONT_HERSHEY_SIMPLEX, scale, 1, &base).width;
}

void draw_panel(cv::Mat& img, const cv::Rect& area, const Panel& panel, int64_t max_iter) {
  const cv::Rect plot(area.x + 80, area.y + 35, area.width - 80 - 230, area.height - 35 - 45);
  text(img, panel.title, {area.x + 80, area.y + 22}, 0.65, cv::Scalar(0, 0, 0), 2);
  Range y;
  for (const auto& [name, points] : panel.series)
    for (const auto& [it, v] : points)
      if (std::isfinite(v) && (!panel.log_scale || v > 0)) y.add(panel.log_scale ? std::log10(v) : v);
  cv::rectangle(img, plot, cv::Scalar(0, 0, 0), 1);
  if (y.empty()) {
    text(img, "(nothing recorded)", {plot.x + 20, plot.y + plot.height / 2});
    return;
  }
  if (!panel.log_scale) y.lo = std::min(y.lo, 0.0);
  if (y.hi - y.lo < 1e-12) y.hi = y.lo + 1;
  const double pad = 0.05 * (y.hi - y.lo);
  y.lo -= panel.log_scale ? pad : (y.lo < 0 ? pad : 0);
  y.hi += pad;
  const double x_hi = std::max<int64_t>(max_iter, 1);
  auto px = [&](double it) { return plot.x + static_cast<int>(std::lround(it / x_hi * plot.width)); };
  auto py = [&](double v) {
    return plot.y + plot.height - static_cast<int>(std::lround((v - y.lo) / (y.hi - y.lo) * plot.height));
  };
  // Grid and ticks: iterations below, values (10^k on a log scale) on the left.
  for (double t : nice_ticks(0, x_hi, 8)) {
    const int x = px(t);
    cv::line(img, {x, plot.y}, {x, plot.y + plot.height}, cv::Scalar(225, 225, 225), 1);
    cv::line(img, {x, plot.y + plot.height}, {x, plot.y + plot.height + 5}, cv::Scalar(0, 0, 0), 1);
    const std::string s = tick_label(t);
    text(img, s, {x - text_width(s, 0.45) / 2, plot.y + plot.height + 22}, 0.45);
  }
  text(img, "iteration", {plot.x + plot.width / 2 - 35, plot.y + plot.height + 40}, 0.5);
  std::vector<double> y_ticks = panel.log_scale
                                    ? nice_ticks(std::floor(y.lo), std::ceil(y.hi), 6)
                                    : nice_ticks(y.lo, y.hi, 6);
  for (double t : y_ticks) {
    if (panel.log_scale && t != std::round(t)) continue;  // decades only
    if (t < y.lo || t > y.hi) continue;
    const int yy = py(t);
    cv::line(img, {plot.x, yy}, {plot.x + plot.width, yy}, cv::Scalar(225, 225, 225), 1);
    cv::line(img, {plot.x - 5, yy}, {plot.x, yy}, cv::Scalar(0, 0, 0), 1);
    const std::string s = panel.log_scale ? tick_label(std::pow(10.0, t)) : tick_label(t);
    text(img, s, {plot.x - 10 - text_width(s, 0.45), yy + 5}, 0.45);
  }
  cv::rectangle(img, plot, cv::Scalar(0, 0, 0), 1);
  // Curves, then the legend to the right of the plot.
  int legend_y = plot.y + 12;
  size_t k = 0;
  for (const auto& [name, points] : panel.series) {
    const cv::Scalar color = instance_color(k++);
    std::vector<cv::Point> line;
    for (const auto& [it, v] : points) {
      if (!std::isfinite(v) || (panel.log_scale && v <= 0)) continue;
      line.emplace_back(px(static_cast<double>(it)), py(panel.log_scale ? std::log10(v) : v));
    }
    if (line.size() > 1) cv::polylines(img, line, false, color, 2, cv::LINE_AA);
    if (panel.markers || line.size() == 1)
      for (const cv::Point& p : line) cv::circle(img, p, 4, color, cv::FILLED, cv::LINE_AA);
    cv::line(img, {plot.x + plot.width + 15, legend_y - 4}, {plot.x + plot.width + 45, legend_y - 4},
             color, 3, cv::LINE_AA);
    text(img, name, {plot.x + plot.width + 52, legend_y}, 0.45);
    legend_y += 20;
  }
}

}  // namespace

MetricsHistory read_metrics_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read '" + path + "' (a training run's metrics.json)");
  MetricsHistory history;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!record.is_object() || !record.contains("iteration") ||
        !record["iteration"].is_number_integer())
      throw Error(fmt::format("{}:{}: not a metrics.json record (a JSON object with an integer "
                              "\"iteration\")",
                              path, number));
    const int64_t iteration = record["iteration"].get<int64_t>();
    for (const auto& [name, value] : record.items())
      if (name != "iteration" && value.is_number())
        history[name].emplace_back(iteration, value.get<double>());
  }
  return history;
}

cv::Mat draw_training_curves(const MetricsHistory& history, int width, int height) {
  if (history.empty()) throw Error("no metrics to plot: metrics.json holds no records");
  Panel losses{"Losses (log scale)", {}, /*log_scale=*/true};
  Panel lr{"Learning rate", {}};
  Panel ap{"Evaluation AP", {}, false, /*markers=*/true};
  int64_t max_iter = 0;
  for (const auto& [name, points] : history) {
    for (const auto& p : points) max_iter = std::max(max_iter, p.first);
    if (name.find("loss") != std::string::npos)
      losses.series.emplace_back(name, points);
    else if (name == "lr")
      lr.series.emplace_back(name, points);
    else if (name.size() >= 3 && name.compare(name.size() - 3, 3, "/AP") == 0)
      ap.series.emplace_back(name, points);
  }
  // total_loss first: the legend's first entry and colour.
  std::stable_partition(losses.series.begin(), losses.series.end(),
                        [](const auto& s) { return s.first == "total_loss"; });
  cv::Mat img(height, width, CV_8UC3, cv::Scalar(255, 255, 255));
  const int h = height / 3;
  draw_panel(img, {0, 0, width, h}, losses, max_iter);
  draw_panel(img, {0, h, width, h}, lr, max_iter);
  draw_panel(img, {0, 2 * h, width, height - 2 * h}, ap, max_iter);
  return img;
}

}  // namespace detkit::visualization
