#include "detkit/modeling/proposal_generator/proposal_generator.h"

namespace detkit::modeling {

Registry<ProposalGeneratorFactory>& proposal_generator_registry() {
  static Registry<ProposalGeneratorFactory> registry(
      "proposal generator (MODEL.PROPOSAL_GENERATOR.NAME)");
  return registry;
}

std::shared_ptr<ProposalGenerator> build_proposal_generator(const config::CfgNode& cfg,
                                                            const layers::ShapeSpecs& input_shapes) {
  // Detectron2's name for "none: the inputs carry precomputed proposals".
  if (cfg.get_string("MODEL.PROPOSAL_GENERATOR.NAME") == "PrecomputedProposals") return nullptr;
  return proposal_generator_registry().get(cfg.get_string("MODEL.PROPOSAL_GENERATOR.NAME"))(
      cfg, input_shapes);
}

}  // namespace detkit::modeling
