"""detkit.export: Detectron2's export helpers (detectron2.export): TorchScript scripting of
modules whose code uses Instances, tracing through flattened inputs / outputs (TracingAdapter),
and dumps of TorchScript code and graphs. (Detectron2's Caffe2 export is not part of detkit.)"""
import warnings

from .flatten import TracingAdapter, flatten_to_tuple
from .torchscript import (dump_torchscript_IR, export_torchscript_with_instances,
                          scripting_with_instances)
from .torchscript_patch import freeze_training_mode, patch_builtin_len, patch_instances

# The ONNX opset Detectron2's export tests use.
STABLE_ONNX_OPSET_VERSION = 11


def add_export_config(cfg):
    """Deprecated in Detectron2 (the export keys are gone): warns and returns cfg unchanged."""
    warnings.warn("add_export_config has been deprecated and behaves as no-op function.",
                  DeprecationWarning)
    return cfg


__all__ = ["STABLE_ONNX_OPSET_VERSION", "TracingAdapter", "add_export_config",
           "dump_torchscript_IR", "export_torchscript_with_instances", "flatten_to_tuple",
           "freeze_training_mode", "patch_builtin_len", "patch_instances",
           "scripting_with_instances"]
