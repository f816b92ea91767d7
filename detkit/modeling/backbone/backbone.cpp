#include "detkit/modeling/backbone/backbone.h"

namespace detkit::modeling {

Registry<BackboneFactory>& backbone_registry() {
  static Registry<BackboneFactory> registry("backbone (MODEL.BACKBONE.NAME)");
  return registry;
}

std::shared_ptr<Backbone> build_backbone(const config::CfgNode& cfg) {
  const auto& factory = backbone_registry().get(cfg.get_string("MODEL.BACKBONE.NAME"));
  return factory(cfg, static_cast<int64_t>(cfg.get_float_list("MODEL.PIXEL_MEAN").size()));
}

}  // namespace detkit::modeling
