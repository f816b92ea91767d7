"""Detectron2's proposal generators (detectron2.modeling.proposal_generator): the RPN and its
heads, built by name from a config."""
from .build import PROPOSAL_GENERATOR_REGISTRY, build_proposal_generator
from .rpn import RPN, RPN_HEAD_REGISTRY, StandardRPNHead, build_rpn_head

__all__ = ["PROPOSAL_GENERATOR_REGISTRY", "RPN", "RPN_HEAD_REGISTRY", "StandardRPNHead",
           "build_proposal_generator", "build_rpn_head"]
