#pragma once
// Detectron2's event scalars of a training step (rpn/num_pos_anchors, fast_rcnn/cls_accuracy, ...)
// against what detkit's model recorded: the same names, values within `tolerance` (relative to
// the larger of 1 and the value). Prints the largest difference; returns it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "detkit/utils/event_scalars.h"

namespace detkit::testing {

/// Records every event scalar put while it lives.
struct CapturedScalars {
  std::map<std::string, double> values;
  EventScalarScope scope{[this](const std::string& name, double value, bool) { values[name] = value; }};
};

inline double expect_scalars_match(const std::map<std::string, double>& got,
                                   const nlohmann::json& want, const std::string& label,
                                   double tolerance = 1e-9) {
  double worst = 0;
  for (const auto& [name, value] : want.items()) {
    auto it = got.find(name);
    if (it == got.end()) {
      ADD_FAILURE() << label << ": no event scalar " << name;
      continue;
    }
    const double w = value.get<double>();
    const double diff = std::abs(it->second - w) / std::max(1.0, std::abs(w));
    worst = std::max(worst, diff);
    EXPECT_LE(diff, tolerance) << label << " " << name << ": " << it->second << " vs " << w;
  }
  for (const auto& [name, value] : got)
    EXPECT_TRUE(want.contains(name)) << label << ": event scalar " << name << " = " << value
                                     << " is not Detectron2's";
  std::cout << "[ detectron2 parity ] " << label << ": " << want.size()
            << " event scalars, max relative diff " << worst << "\n";
  return worst;
}

}  // namespace detkit::testing
