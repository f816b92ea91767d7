#include "detkit/modeling/backbone/backbone.h"

#include "detkit/utils/error.h"

namespace detkit::modeling {

FeatureLevels feature_levels(const layers::ShapeSpecs& shapes,
                             const std::vector<std::string>& names, const std::string& key) {
  if (names.empty()) throw Error(key + " must name at least one feature");
  FeatureLevels levels;
  for (const auto& name : names) {
    auto it = shapes.find(name);
    if (it == shapes.end()) throw Error(key + ": the backbone has no feature '" + name + "'");
    if (!levels.strides.empty() && it->second.channels != levels.channels)
      throw Error(key + " must all have the same number of channels");
    levels.channels = it->second.channels;
    levels.strides.push_back(it->second.stride);
  }
  return levels;
}

Registry<BackboneFactory>& backbone_registry() {
  static Registry<BackboneFactory> registry("backbone (MODEL.BACKBONE.NAME)");
  return registry;
}

std::shared_ptr<Backbone> build_backbone(const config::CfgNode& cfg) {
  const auto& factory = backbone_registry().get(cfg.get_string("MODEL.BACKBONE.NAME"));
  return factory(cfg, static_cast<int64_t>(cfg.get_float_list("MODEL.PIXEL_MEAN").size()));
}

}  // namespace detkit::modeling
