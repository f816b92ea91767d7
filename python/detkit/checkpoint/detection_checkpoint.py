"""DetectionCheckpointer: Detectron2's checkpointer. Besides the .pth files Checkpointer reads,
it reads Detectron2 model-zoo .pkl files ({"model": ..., "__author__": ...}), Caffe2 Detectron
.pkl files ({"blobs": ...} or bare blobs; renamed and fitted by suffix) and pycls .pyth files,
and fits any file's names to the model when the path ends with "?matching_heuristics=True"."""
import logging
import os
import pickle
from urllib.parse import parse_qs, urlparse

import torch

from ..utils import comm
from .c2_model_loading import align_and_update_state_dicts
from .checkpointer import Checkpointer

__all__ = ["DetectionCheckpointer"]


class DetectionCheckpointer(Checkpointer):
    """DetectionCheckpointer(model, save_dir="", *, save_to_disk=None, **checkpointables):
    save_to_disk None: only the main process of a job writes."""

    def __init__(self, model, save_dir="", *, save_to_disk=None, **checkpointables):
        if save_to_disk is None:
            save_to_disk = comm.is_main_process()
        super().__init__(model, save_dir, save_to_disk=save_to_disk, **checkpointables)
        self._parsed_url_during_load = None

    def load(self, path, *args, **kwargs):
        if self._parsed_url_during_load is not None:
            raise RuntimeError("DetectionCheckpointer.load called while another load runs")
        logging.getLogger(__name__).info(f"[DetectionCheckpointer] Loading from {path} ...")
        if path:
            parsed = urlparse(path)
            self._parsed_url_during_load = parsed
            path = self.path_manager.get_local_path(parsed._replace(query="").geturl())
        try:
            return super().load(path, *args, **kwargs)
        finally:
            self._parsed_url_during_load = None

    def _load_file(self, filename):
        if filename.endswith(".pkl"):
            return self._load_pickle(filename)
        if filename.endswith(".pyth"):
            with self.path_manager.open(filename, "rb") as f:
                data = torch.load(f, map_location=torch.device("cpu"))
            if not isinstance(data, dict) or "model_state" not in data:
                raise ValueError(f"Cannot load .pyth file {filename}; pycls checkpoints must "
                                 f"contain 'model_state'")
            state = {k: v for k, v in data["model_state"].items()
                     if not k.endswith("num_batches_tracked")}
            return {"model": state, "__author__": "pycls", "matching_heuristics": True}
        loaded = super()._load_file(filename)
        if not isinstance(loaded, dict) or "model" not in loaded:
            loaded = {"model": loaded}
        if self._parsed_url_during_load is None:
            raise RuntimeError("DetectionCheckpointer._load_file must be called inside load()")
        queries = parse_qs(self._parsed_url_during_load.query)
        if queries.pop("matching_heuristics", ["False"]) == ["True"]:
            loaded["matching_heuristics"] = True
        if queries:
            raise ValueError(f"Unsupported query remaining: {queries}, original filename: "
                             f"{self._parsed_url_during_load.geturl()}")
        return loaded

    def _load_pickle(self, filename):
        with self.path_manager.open(filename, "rb") as f:
            data = pickle.load(f, encoding="latin1")
        if not isinstance(data, dict):
            raise ValueError(f"{filename}: a .pkl checkpoint must hold a dict, got "
                             f"{type(data).__name__}")
        if "model" in data and "__author__" in data:  # Detectron2's model zoo
            self.logger.info(f"Reading a file from '{data['__author__']}'")
            return data
        blobs = data.get("blobs", data)  # Caffe2 Detectron: detection models have "blobs"
        blobs = {k: v for k, v in blobs.items() if not k.endswith("_momentum")}
        return {"model": blobs, "__author__": "Caffe2", "matching_heuristics": True}

    def _load_model(self, checkpoint):
        if checkpoint.get("matching_heuristics", False):
            self._convert_ndarray_to_tensor(checkpoint["model"])
            checkpoint["model"] = align_and_update_state_dicts(
                self.model.state_dict(), checkpoint["model"],
                c2_conversion=checkpoint.get("__author__") == "Caffe2")
        incompatible = super()._load_model(checkpoint)
        buffers = dict(self.model.named_buffers(recurse=False))
        for key in ("pixel_mean", "pixel_std"):  # set from the config; old files lack them
            if key in buffers and key in incompatible.missing_keys:
                incompatible.missing_keys.remove(key)
        for key in list(incompatible.unexpected_keys):  # old files: anchors were saved
            if "anchor_generator.cell_anchors" in key:
                incompatible.unexpected_keys.remove(key)
        return incompatible
