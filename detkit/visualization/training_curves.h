#pragma once
// Training curves from metrics.json (Detectron2's format: one JSON object per line, "iteration"
// plus scalars) drawn as one picture with three panels sharing the iteration axis: the losses
// (every metric whose name holds "loss"; log scale), the learning rate, and the evaluation AP
// ("<task>/AP", dataset-prefixed ones too; points joined by lines). Each panel has axes, ticks
// with values, a grid and a legend.
//
//   data::write_image("curves.png", draw_training_curves(read_metrics_json("out/metrics.json")));
#include <cstdint>
#include <map>
#include <opencv2/core.hpp>
#include <string>
#include <utility>
#include <vector>

namespace detkit::visualization {

/// Metric name -> (iteration, value) points in file order.
using MetricsHistory = std::map<std::string, std::vector<std::pair<int64_t, double>>>;

/// Reads metrics.json. A line that is not a JSON object with an integer "iteration" is a
/// detkit::Error naming the file and the line number; non-numeric values are skipped.
MetricsHistory read_metrics_json(const std::string& path);

/// The three panels, `width` x `height` pixels (BGR). An empty history is a detkit::Error.
cv::Mat draw_training_curves(const MetricsHistory& history, int width = 1200, int height = 1350);

}  // namespace detkit::visualization
