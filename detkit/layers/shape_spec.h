#pragma once
// ShapeSpec: what a feature map looks like to the module consuming it.
#include <cstdint>
#include <map>
#include <string>

namespace detkit::layers {

struct ShapeSpec {
  int64_t channels = 0;
  int64_t stride = 0;  // input pixels per feature pixel
};

/// Feature name ("res2", "p3", ...) -> its shape.
using ShapeSpecs = std::map<std::string, ShapeSpec>;

}  // namespace detkit::layers
