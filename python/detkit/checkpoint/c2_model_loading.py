"""Detectron2's c2_model_loading over detkit's C++ (detkit/checkpoint/caffe2_names.h,
matching_heuristics.h): Caffe2 Detectron blob names to Detectron2's, and a checkpoint's keys
fitted to a model's by the longest dot-bounded suffix."""
import numpy as np
import torch

from .. import _C

__all__ = ["align_and_update_state_dicts", "convert_c2_detectron_names"]


def _as_tensors(state_dict, what):
    out = {}
    for key, value in state_dict.items():
        if isinstance(value, np.ndarray):
            value = torch.from_numpy(np.ascontiguousarray(value))
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"{what}: '{key}' is a {type(value).__name__}, not a tensor or a "
                             f"numpy array")
        out[key] = value
    return out


def convert_c2_detectron_names(weights):
    """(weights by Detectron2 name, {Detectron2 name: Caffe2 name}). The class-specific
    predictors are changed as Detectron2 does: cls_score's background row moves from first to
    last, bbox_pred and the mask predictor drop the background's rows. Two names that become
    one are a detkit.Error naming both."""
    return _C.convert_caffe2_names(_as_tensors(weights, "convert_c2_detectron_names"))


def align_and_update_state_dicts(model_state_dict, ckpt_state_dict, c2_conversion=True):
    """The checkpoint's tensors under the model's names: each model key takes the checkpoint key
    that is its longest dot-bounded suffix ("res2.0.conv1.weight" fills
    "backbone.bottom_up.res2.0.conv1.weight"); a tensor of another shape is skipped with a
    warning; one checkpoint key filling two model keys is a detkit.Error naming them. Unmatched
    checkpoint tensors stay under their own names. c2_conversion: rename Caffe2 blob names
    first (convert_c2_detectron_names). No match at all: the (renamed) checkpoint as it is."""
    ckpt = _as_tensors(ckpt_state_dict, "align_and_update_state_dicts (checkpoint)")
    model = _as_tensors(model_state_dict, "align_and_update_state_dicts (model)")
    original = {}
    if c2_conversion:
        ckpt, original = _C.convert_caffe2_names(ckpt)
    return _C.align_to_model(model, ckpt, original)


def _longest_common_prefix(names):
    """["abc.zfg", "abc.zef"] -> "abc.": the dot-separated parts all names begin with."""
    if not names:
        return ""
    split = [name.split(".") for name in names]
    common = []
    for parts in zip(*split):
        if any(part != parts[0] for part in parts):
            break
        common.append(parts[0])
    return ".".join(common) + "." if common else ""


def _longest_common_prefix_str(names):
    """The characters all names begin with."""
    if not names:
        return ""
    first, last = min(names), max(names)  # the others lie between them
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:n]
