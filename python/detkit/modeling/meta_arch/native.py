"""detkit's built-in models as torch.nn.Modules with Detectron2's names (GeneralizedRCNN,
RetinaNet, ProposalNetwork, SemanticSegmentor, PanopticFPN): the C++ model (detkit._C.Model)
behind Detectron2's Python interface.

The module's parameters and buffers are the C++ model's own tensors (no copies), under
Detectron2's names (`backbone.bottom_up.stem.conv1.weight`, ...): state_dict() / load_state_dict()
read and write them, an optimizer over parameters() trains the tensors the C++ layers use,
`.to(device)` moves them in place. `model(batched_inputs)` takes Detectron2's list of dicts
("image": a (C, H, W) tensor in INPUT.FORMAT order, already resized; "height" / "width": the
size to give predictions in; "instances": the targets in training) and returns Detectron2's
loss dict in training (tensors whose graph reaches the parameters, so `.backward()` fills their
.grad) and its list of output dicts in evaluation. The C++ model runs with the GIL released.
inference_on_dataset(model, build_detection_test_loader(cfg, name), evaluator) evaluates it.
The submodules (`model.backbone`, `model.proposal_generator`, `model.roi_heads`; a RetinaNet's
`model.head` and `model.anchor_generator`, with `forward_inference`) are Detectron2's
Python modules (detkit.modeling.backbone, proposal_generator, roi_heads) holding those same C++
tensors, so they can be called on their own (`model.roi_heads(images, features, proposals)`) and
compute what the C++ model computes, while `model(batched_inputs)` runs the C++ model. A part
whose Python module does not hold exactly the C++ part's tensors (a semantic segmentation head:
no Python module here) stays a container of the tensors, not callable.
Not exposed: `inference(..., do_postprocess=False)`, precomputed proposals as inputs."""
import torch
from torch import nn

from ... import _C
from ...config import CfgNode
from ...structures import BitMasks, Boxes, Instances, Keypoints, PolygonMasks
from ..anchor_generator import build_anchor_generator
from ..box_regression import Box2BoxTransform
from .build import META_ARCH_REGISTRY
from .dense_inference import DenseInference, RetinaNetHead

__all__ = ["GeneralizedRCNN", "PanopticFPN", "ProposalNetwork", "RetinaNet", "SemanticSegmentor"]


def _field(name, value, where):
    if isinstance(value, Boxes):
        return ("boxes", value.tensor)
    if isinstance(value, PolygonMasks):
        return ("polygons", [[p.tolist() for p in instance] for instance in value.polygons])
    if isinstance(value, BitMasks):
        return ("bitmasks", value.tensor)
    if isinstance(value, Keypoints):
        return value.tensor
    if isinstance(value, torch.Tensor):
        return value
    raise TypeError(f"{where}: instances field '{name}' is a {type(value).__name__}; detkit's "
                    f"models take tensors, Boxes, PolygonMasks, BitMasks and Keypoints")


def _native_input(index, d, device):
    where = f"batched_inputs[{index}]"
    if not isinstance(d, dict) or "image" not in d:
        raise ValueError(f"{where}: a dict with an 'image' (C, H, W) tensor, as Detectron2's "
                         f"models take, got {type(d).__name__}")
    image = d["image"]
    if not isinstance(image, torch.Tensor) or image.dim() != 3:
        raise ValueError(f"{where}['image']: a (C, H, W) tensor, got "
                         f"{getattr(image, 'shape', type(image).__name__)}")
    out = {"image": image.to(device=device, dtype=torch.float32),
           "height": int(d.get("height", image.shape[1])),
           "width": int(d.get("width", image.shape[2]))}
    if "file_name" in d:
        out["file_name"] = str(d["file_name"])
    if "instances" in d:
        inst = d["instances"]
        fields = {name: _field(name, value, where) for name, value in inst.get_fields().items()}
        fields = {k: (v.to(device) if isinstance(v, torch.Tensor) else
                      (v[0], v[1].to(device)) if isinstance(v[1], torch.Tensor) else v)
                  for k, v in fields.items()}
        out["instances"] = (tuple(int(s) for s in inst.image_size), fields)
    if "sem_seg" in d:
        out["sem_seg"] = d["sem_seg"].to(device=device, dtype=torch.int64)
    return out


def _instances(fields):
    instances = Instances(tuple(fields.pop("image_size")))
    for name, value in fields.items():
        instances.set(name, Boxes(value) if name in ("pred_boxes", "proposal_boxes") else value)
    return instances


def _detkit_config(cfg):
    """A detkit CfgNode from a CfgNode, a dict of its keys or an omegaconf DictConfig of them
    (Detectron2 builds models from either)."""
    if hasattr(cfg, "_tree"):
        return cfg
    if type(cfg).__module__.startswith("omegaconf"):
        from omegaconf import OmegaConf  # the caller's: an omegaconf config was given
        cfg = OmegaConf.to_container(cfg, resolve=True)
    if isinstance(cfg, dict):
        return CfgNode(cfg)
    raise TypeError(f"a model is built from a detkit CfgNode, a dict or an omegaconf DictConfig, "
                    f"got {type(cfg).__name__}")


def _python_parts(cfg):
    """Detectron2's Python modules of the model's parts, by attribute name. They are built from a
    forked random generator (their initial weights are replaced by the C++ model's tensors), so
    building them changes no later random draw."""
    from ..backbone import BACKBONE_REGISTRY, build_backbone
    from ..proposal_generator import build_proposal_generator
    from ..roi_heads import build_roi_heads

    meta = cfg.MODEL.META_ARCHITECTURE
    parts = {}
    if cfg.MODEL.BACKBONE.NAME not in BACKBONE_REGISTRY:
        return parts

    def add(name, build):
        try:
            parts[name] = build()
        except NotImplementedError:  # an option the Python part lacks: its tensors stay a container
            pass

    with torch.random.fork_rng(devices=[]):
        add("backbone", lambda: build_backbone(cfg))
        if "backbone" not in parts:
            return parts
        shape = parts["backbone"].output_shape()
        if meta in ("GeneralizedRCNN", "ProposalNetwork", "PanopticFPN"):
            add("proposal_generator", lambda: build_proposal_generator(cfg, shape))
        if meta in ("GeneralizedRCNN", "PanopticFPN"):
            add("roi_heads", lambda: build_roi_heads(cfg, shape))
        if meta == "RetinaNet":
            level_shapes = [shape[f] for f in cfg.MODEL.RETINANET.IN_FEATURES]
            add("head", lambda: RetinaNetHead(cfg, level_shapes))
            add("anchor_generator", lambda: build_anchor_generator(cfg, level_shapes))
    return {name: module for name, module in parts.items() if module is not None}


def _holds_exactly(module, part, tensors):
    """Whether `module`'s parameters and persistent buffers are, by name and shape, the C++
    tensors of `part` (names "part.…"); if so, they are put in its place (no copies)."""
    prefix = part + "."
    mine = {"_parameters": dict(module.named_parameters()), "_buffers": {}}
    for owner_name, owner in module.named_modules():
        for leaf, tensor in owner._buffers.items():
            if tensor is not None and leaf not in owner._non_persistent_buffers_set:
                mine["_buffers"][f"{owner_name}.{leaf}" if owner_name else leaf] = tensor
    for kind in mine:
        native = {name[len(prefix):]: t for name, t in tensors[kind].items()
                  if name.startswith(prefix)}
        if set(native) != set(mine[kind]) or any(
                native[name].shape != mine[kind][name].shape for name in native):
            return False
    for kind in mine:
        for name in list(tensors[kind]):
            if not name.startswith(prefix):
                continue
            *path, leaf = name[len(prefix):].split(".")
            owner = module
            for step in path:
                owner = owner._modules[step]
            getattr(owner, kind)[leaf] = tensors[kind].pop(name)
    return True


class _NativeModel(nn.Module):
    """A detkit C++ model as an nn.Module (see the module's docstring)."""

    def __init__(self, cfg):
        super().__init__()
        cfg = _detkit_config(cfg)
        expected = type(self).__name__
        if cfg.MODEL.META_ARCHITECTURE != expected:
            raise ValueError(f"{expected}(cfg): cfg.MODEL.META_ARCHITECTURE is "
                             f"'{cfg.MODEL.META_ARCHITECTURE}'")
        self._native = _C.build_model(cfg._tree)
        self._adopt(_python_parts(cfg))
        self.train(True)

    def _adopt(self, python_parts):
        """The C++ tensors, registered under their dotted names (so state_dict keys are
        Detectron2's): in the Python module of their part where it holds exactly those tensors
        (names and shapes), else in nested nn.Modules that mirror the C++ module tree."""
        tensors = {"_parameters": dict(self._native.named_parameters()),
                   "_buffers": dict(self._native.named_buffers())}
        for part, module in python_parts.items():
            if _holds_exactly(module, part, tensors):
                self._modules[part] = module
        for kind, items in tensors.items():
            for name, tensor in items.items():
                *path, leaf = name.split(".")
                module = self
                for part in path:
                    if part not in module._modules:
                        module._modules[part] = nn.Module()
                    module = module._modules[part]
                getattr(module, kind)[leaf] = tensor

    def _apply(self, fn, recurse=True):
        """.to(), .cuda(), .double(), ...: each tensor changed in place (its data replaced), so
        the C++ model, which holds the same tensors, moves with the module; nn.Module's own
        _apply would put new tensors in place of the buffers and leave the C++ model's behind."""
        with torch.no_grad():
            for module in self.modules():
                for group in (module._parameters, module._buffers):
                    for tensor in group.values():
                        if tensor is not None:
                            tensor.data = fn(tensor)
        return self

    def train(self, mode=True):
        super().train(mode)
        self._native.train(bool(mode))
        return self

    @property
    def device(self):
        for p in self.parameters():
            return p.device
        return torch.device("cpu")

    def forward(self, batched_inputs):
        if not isinstance(batched_inputs, (list, tuple)):
            raise ValueError(f"{type(self).__name__}: batched_inputs is a list of dicts, got "
                             f"{type(batched_inputs).__name__}")
        device = self.device
        inputs = [_native_input(i, d, device) for i, d in enumerate(batched_inputs)]
        if self.training:
            missing = [i for i, d in enumerate(batched_inputs) if "instances" not in d]
            if missing:
                raise ValueError(f"{type(self).__name__} in training: batched_inputs {missing} "
                                 f"have no 'instances' (the targets)")
            return self._native.losses(inputs)
        outputs = self._native.outputs(inputs)
        for out in outputs:
            if "instances" in out:
                fields = out.pop("instances")
                key = "proposals" if "proposal_boxes" in fields else "instances"
                out[key] = _instances(fields)
        return outputs

    def _evaluate(self, cfg_tree, dataset_name, output_dir):
        """For detkit.evaluation.inference_on_dataset: this model (in eval mode) over the dataset
        as the test loader maps it, evaluated by detkit's evaluators."""
        was_training = self.training
        self.eval()
        try:
            with torch.no_grad():
                return _C.evaluate_model(self._native, cfg_tree, dataset_name, output_dir)
        finally:
            self.train(was_training)

    def inference(self, batched_inputs, detected_instances=None, do_postprocess=True):
        if detected_instances is not None or not do_postprocess:
            raise NotImplementedError(f"{type(self).__name__}.inference: detkit's C++ model "
                                      f"gives post-processed outputs of whole images only")
        was_training = self.training
        self.eval()
        try:
            with torch.no_grad():
                return self.forward(batched_inputs)
        finally:
            self.train(was_training)


@META_ARCH_REGISTRY.register()
class GeneralizedRCNN(_NativeModel):
    """Detectron2's GeneralizedRCNN (Faster / Mask / Keypoint / Cascade R-CNN) in C++."""


@META_ARCH_REGISTRY.register()
class RetinaNet(DenseInference, _NativeModel):
    """Detectron2's RetinaNet in C++; `head`, `anchor_generator` and `forward_inference` as
    Detectron2's (Python, on the C++ model's tensors)."""

    def __init__(self, cfg):
        super().__init__(cfg)
        cfg = _detkit_config(cfg)
        retina = cfg.MODEL.RETINANET
        self.num_classes = retina.NUM_CLASSES
        self.head_in_features = list(retina.IN_FEATURES)
        self.box2box_transform = Box2BoxTransform(weights=tuple(retina.BBOX_REG_WEIGHTS))
        self.test_score_thresh = retina.SCORE_THRESH_TEST
        self.test_topk_candidates = retina.TOPK_CANDIDATES_TEST
        self.test_nms_thresh = retina.NMS_THRESH_TEST
        self.max_detections_per_image = cfg.TEST.DETECTIONS_PER_IMAGE


@META_ARCH_REGISTRY.register()
class ProposalNetwork(_NativeModel):
    """Detectron2's ProposalNetwork (RPN only) in C++: {"proposals": Instances} per image."""


@META_ARCH_REGISTRY.register()
class SemanticSegmentor(_NativeModel):
    """Detectron2's SemanticSegmentor in C++: {"sem_seg": (C, H, W)} per image."""


@META_ARCH_REGISTRY.register()
class PanopticFPN(_NativeModel):
    """Detectron2's PanopticFPN in C++: instances, sem_seg and panoptic_seg per image."""
