"""Checkpointer: fvcore's Checkpointer as Detectron2 uses it (fvcore itself is not imported).
Saves the model's and the checkpointables' state_dicts to <save_dir>/<name>.pth, remembers the
last one in <save_dir>/last_checkpoint, and loads a file back (tensors by name, shapes checked)."""
import logging
import os
from typing import List, NamedTuple, Tuple

import numpy as np
import torch
from torch import nn

from ..utils.file_io import PathManager

__all__ = ["Checkpointer", "IncompatibleKeys"]

_LAST = "last_checkpoint"


class IncompatibleKeys(NamedTuple):
    """What load_state_dict reports, plus (name, shape in checkpoint, shape in model) for each
    tensor skipped for its shape."""
    missing_keys: List[str]
    unexpected_keys: List[str]
    incorrect_shapes: List[Tuple[str, Tuple[int, ...], Tuple[int, ...]]]


def _unwrap(model):
    if isinstance(model, (nn.DataParallel, nn.parallel.DistributedDataParallel)):
        return model.module
    return model


class Checkpointer:
    """Checkpointer(model, save_dir="", *, save_to_disk=True, **checkpointables): each
    checkpointable is an object with state_dict() / load_state_dict() (an optimizer, a
    scheduler), saved under its keyword. path_manager: any object with open / exists /
    get_local_path / mkdirs (+ ls / isfile for get_all_checkpoint_files)."""

    def __init__(self, model, save_dir="", *, save_to_disk=True, **checkpointables):
        if not isinstance(model, nn.Module):
            raise TypeError(f"Checkpointer: model must be a torch.nn.Module, got "
                            f"{type(model).__name__}")
        self.model = _unwrap(model)
        self.checkpointables = {}
        for key, obj in checkpointables.items():
            self.add_checkpointable(key, obj)
        self.logger = logging.getLogger(__name__)
        self.save_dir = save_dir
        self.save_to_disk = save_to_disk
        self.path_manager = PathManager

    def add_checkpointable(self, key, checkpointable):
        if key in self.checkpointables or key == "model":
            raise KeyError(f"Checkpointer: the key '{key}' is already used")
        if not hasattr(checkpointable, "state_dict"):
            raise TypeError(f"Checkpointer: checkpointable '{key}' ({type(checkpointable)}) "
                            f"has no state_dict() method")
        self.checkpointables[key] = checkpointable

    # ---- saving
    def save(self, name, **kwargs):
        """Writes {"model": ..., each checkpointable's state, **kwargs} to
        <save_dir>/<name>.pth and tags it as the last checkpoint. Nothing without a save_dir
        or with save_to_disk False."""
        if not self.save_dir or not self.save_to_disk:
            return
        data = {"model": self.model.state_dict()}
        for key, obj in self.checkpointables.items():
            data[key] = obj.state_dict()
        data.update(kwargs)
        basename = f"{name}.pth"
        if os.path.basename(basename) != basename:
            raise ValueError(f"Checkpointer.save: name '{name}' must not contain a directory")
        path = os.path.join(self.save_dir, basename)
        self.logger.info(f"Saving checkpoint to {path}")
        self.path_manager.mkdirs(self.save_dir)
        with self.path_manager.open(path, "wb") as f:
            torch.save(data, f)
        self.tag_last_checkpoint(basename)

    def tag_last_checkpoint(self, last_filename_basename):
        with self.path_manager.open(os.path.join(self.save_dir, _LAST), "w") as f:
            f.write(last_filename_basename)

    # ---- finding
    def has_checkpoint(self):
        return self.path_manager.exists(os.path.join(self.save_dir, _LAST))

    def get_checkpoint_file(self):
        """The file last_checkpoint names (under save_dir); "" when there is none."""
        try:
            with self.path_manager.open(os.path.join(self.save_dir, _LAST), "r") as f:
                last = f.read().strip()
        except OSError:
            return ""
        return os.path.join(self.save_dir, last)

    def get_all_checkpoint_files(self):
        pm = self.path_manager
        return [os.path.join(self.save_dir, name) for name in pm.ls(self.save_dir)
                if name.endswith(".pth") and pm.isfile(os.path.join(self.save_dir, name))]

    # ---- loading
    def resume_or_load(self, path, *, resume=True):
        """resume and a last checkpoint in save_dir: load it with every checkpointable;
        otherwise load the model alone from path."""
        if resume and self.has_checkpoint():
            return self.load(self.get_checkpoint_file())
        return self.load(path, checkpointables=[])

    def load(self, path, checkpointables=None):
        """Loads the model (and the named checkpointables; None: all) from path; returns what
        else the file holds (the extra data given to save). An empty path loads nothing."""
        if not path:
            self.logger.info("No checkpoint found. Initializing model from scratch")
            return {}
        self.logger.info(f"[Checkpointer] Loading from {path} ...")
        if not os.path.isfile(path):
            path = self.path_manager.get_local_path(path)
            if not os.path.isfile(path):
                raise FileNotFoundError(f"Checkpoint {path} not found")
        checkpoint = self._load_file(path)
        if not isinstance(checkpoint, dict) or "model" not in checkpoint:
            raise ValueError(f"checkpoint {path} has no 'model' entry")
        incompatible = self._load_model(checkpoint)
        if incompatible is not None:
            self._log_incompatible_keys(incompatible)
        names = self.checkpointables if checkpointables is None else checkpointables
        for key in names:
            if key not in self.checkpointables:
                raise KeyError(f"Checkpointer.load: no checkpointable named '{key}' "
                               f"(have {sorted(self.checkpointables)})")
            if key in checkpoint:
                self.logger.info(f"Loading {key} from {path} ...")
                self.checkpointables[key].load_state_dict(checkpoint.pop(key))
        return checkpoint

    def _load_file(self, f):
        """The checkpoint dict of a local file (torch.load to the CPU)."""
        return torch.load(f, map_location=torch.device("cpu"))

    def _load_model(self, checkpoint):
        """Loads checkpoint["model"] (popped) into the model; a tensor whose shape differs from
        the model's is skipped and reported."""
        state = checkpoint.pop("model")
        self._convert_ndarray_to_tensor(state)
        if state and all(key.startswith("module.") for key in state):
            for key in list(state):  # saved from a DataParallel / DDP wrapper
                state[key[len("module."):]] = state.pop(key)
        model_state = self.model.state_dict()
        incorrect = []
        for key in list(state):
            if key not in model_state:
                continue
            target = model_state[key]
            if isinstance(target, nn.parameter.UninitializedParameter):
                continue
            if tuple(target.shape) != tuple(state[key].shape):
                incorrect.append((key, tuple(state[key].shape), tuple(target.shape)))
                del state[key]
        result = self.model.load_state_dict(state, strict=False)
        return IncompatibleKeys(list(result.missing_keys), list(result.unexpected_keys),
                                incorrect)

    def _log_incompatible_keys(self, incompatible):
        for key, in_file, in_model in incompatible.incorrect_shapes:
            self.logger.warning(f"Skip loading parameter '{key}' to the model due to "
                                f"incompatible shapes: {in_file} in the checkpoint but "
                                f"{in_model} in the model!")
        if incompatible.missing_keys:
            self.logger.warning("Some model parameters or buffers are not found in the "
                                "checkpoint:\n  " + "\n  ".join(incompatible.missing_keys))
        if incompatible.unexpected_keys:
            self.logger.warning("The checkpoint contains keys not used by the model:\n  "
                                + "\n  ".join(incompatible.unexpected_keys))

    def _convert_ndarray_to_tensor(self, state_dict):
        """In place: numpy arrays become tensors; anything else but a tensor is an error."""
        for key in list(state_dict):
            value = state_dict[key]
            if isinstance(value, np.ndarray):
                state_dict[key] = torch.from_numpy(np.ascontiguousarray(value))
            elif not isinstance(value, torch.Tensor):
                raise ValueError(f"Unsupported type found in checkpoint! {key}: {type(value)}")
