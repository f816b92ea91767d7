"""The registry of proposal generators and build_proposal_generator (Detectron2's
proposal_generator/build.py)."""
from ...utils.registry import Registry

PROPOSAL_GENERATOR_REGISTRY = Registry("PROPOSAL_GENERATOR")
PROPOSAL_GENERATOR_REGISTRY.__doc__ = """Proposal generators (modules that propose object boxes
from feature maps), each called as obj(cfg, input_shape) to give an nn.Module."""


def build_proposal_generator(cfg, input_shape):
    """The generator cfg.MODEL.PROPOSAL_GENERATOR.NAME names, built from (cfg, input_shape);
    None for "PrecomputedProposals" (the proposals come with the inputs)."""
    name = cfg.MODEL.PROPOSAL_GENERATOR.NAME
    if name == "PrecomputedProposals":
        return None
    return PROPOSAL_GENERATOR_REGISTRY.get(name)(cfg, input_shape)


from . import rpn  # noqa: E402,F401  (registers RPN)
