"""Detectron2's detectron2.data.build: dataset dicts from the catalog, and torch DataLoaders for
training (an endless, batched stream) and inference (every item once) over a dataset and a
Python mapper. build_detection_test_loader(cfg, dataset_name) without a mapper gives instead the
loader that detkit.evaluation.inference_on_dataset runs natively."""
import importlib
import itertools
import logging
import operator
import pickle

import numpy as np
import torch
import torch.utils.data as torchdata

from ..config import configurable
from ..config.configurable import _is_config
from ..structures import BoxMode
from ..utils.comm import get_world_size
from ..utils.env import seed_all_rng
from .catalog import DatasetCatalog, MetadataCatalog, _TestLoader
from .common import AspectRatioGroupedDataset, DatasetFromList, MapDataset, ToIterableDataset
from .samplers import (InferenceSampler, RandomSubsetTrainingSampler, RepeatFactorTrainingSampler,
                       TrainingSampler)

__all__ = ["build_batch_data_loader", "build_detection_train_loader",
           "build_detection_test_loader", "get_detection_dataset_dicts",
           "load_proposals_into_dataset", "trivial_batch_collator", "worker_init_reset_seed"]

logger = logging.getLogger(__name__)


def trivial_batch_collator(batch):
    """The batch as it is: a list of the mapped items."""
    return batch


def worker_init_reset_seed(worker_id):
    """A DataLoader worker's seed for Python, numpy and torch: torch's per-worker seed."""
    seed_all_rng(torch.initial_seed() % 2 ** 31 + worker_id)


def _filter_crowd_only(dicts):
    kept = [d for d in dicts if any(a.get("iscrowd", 0) == 0 for a in d["annotations"])]
    logger.info("Removed %d images with no usable annotations. %d images left.",
                len(dicts) - len(kept), len(kept))
    return kept


def _filter_few_keypoints(dicts, min_keypoints):
    def visible(record):
        return sum(int((np.asarray(a["keypoints"][2::3]) > 0).sum())
                   for a in record["annotations"] if "keypoints" in a)

    kept = [d for d in dicts if visible(d) >= min_keypoints]
    logger.info("Removed %d images with fewer than %d keypoints.", len(dicts) - len(kept),
                min_keypoints)
    return kept


def load_proposals_into_dataset(dataset_dicts, proposal_file):
    """Adds proposal_boxes, proposal_objectness_logits (highest first) and proposal_bbox_mode to
    each record, from a pickled dict of ids, boxes and objectness_logits (or indexes, scores)."""
    with open(proposal_file, "rb") as f:
        proposals = pickle.load(f, encoding="latin1")
    for old, new in (("indexes", "ids"), ("scores", "objectness_logits")):
        if old in proposals:
            proposals[new] = proposals.pop(old)
    index_of = {str(i): k for k, i in enumerate(proposals["ids"])}
    mode = BoxMode(proposals["bbox_mode"]) if "bbox_mode" in proposals else BoxMode.XYXY_ABS
    for record in dataset_dicts:
        key = str(record["image_id"])
        if key not in index_of:
            raise KeyError(f"{proposal_file} has no proposals for image_id {key}")
        k = index_of[key]
        logits = proposals["objectness_logits"][k]
        order = logits.argsort()[::-1]
        record["proposal_boxes"] = proposals["boxes"][k][order]
        record["proposal_objectness_logits"] = logits[order]
        record["proposal_bbox_mode"] = mode
    return dataset_dicts


def _check_same_classes(names):
    classes = [MetadataCatalog.get(n).get("thing_classes") for n in names]
    if any(c is None for c in classes):
        return
    for name, c in zip(names[1:], classes[1:]):
        if list(c) != list(classes[0]):
            raise ValueError(f"Datasets '{names[0]}' and '{name}' have different thing_classes: "
                             f"{list(classes[0])} != {list(c)}")


def get_detection_dataset_dicts(names, filter_empty=True, min_keypoints=0, proposal_files=None,
                                check_consistency=True):
    """The dicts of the named datasets (DatasetCatalog.get each), concatenated, without the
    images that have no non-crowd annotation (filter_empty) or fewer than min_keypoints visible
    keypoints. A dataset registered as a torch Dataset is returned as it is (several are
    concatenated)."""
    if isinstance(names, str):
        names = [names]
    if not names:
        raise ValueError("get_detection_dataset_dicts: no dataset name given")
    per_dataset = [DatasetCatalog.get(n) for n in names]
    if isinstance(per_dataset[0], torchdata.Dataset):
        return per_dataset[0] if len(per_dataset) == 1 else torchdata.ConcatDataset(per_dataset)
    for name, dicts in zip(names, per_dataset):
        if not len(dicts):
            raise ValueError(f"Dataset '{name}' is empty!")
    if proposal_files is not None:
        if len(proposal_files) != len(names):
            raise ValueError(f"{len(proposal_files)} proposal files for {len(names)} datasets")
        per_dataset = [load_proposals_into_dataset(d, f)
                       for d, f in zip(per_dataset, proposal_files)]
    dicts = list(itertools.chain.from_iterable(per_dataset))
    has_instances = "annotations" in dicts[0]
    if filter_empty and has_instances:
        dicts = _filter_crowd_only(dicts)
    if min_keypoints > 0 and has_instances:
        dicts = _filter_few_keypoints(dicts, min_keypoints)
    if check_consistency and has_instances:
        _check_same_classes(names)
    if not dicts:
        raise ValueError(f"No valid data found in {','.join(names)}.")
    return dicts


def build_batch_data_loader(dataset, sampler, total_batch_size, *, aspect_ratio_grouping=False,
                            num_workers=0, collate_fn=None, drop_last=True,
                            single_gpu_batch_size=None, prefetch_factor=2,
                            persistent_workers=False, pin_memory=False, seed=None, **kwargs):
    """Batches of total_batch_size / world_size items (or single_gpu_batch_size) of a dataset
    read through `sampler` (None for an iterable dataset), not collated unless collate_fn is
    given; with aspect_ratio_grouping each batch is all wide or all tall images."""
    if single_gpu_batch_size:
        if total_batch_size:
            raise ValueError("total_batch_size and single_gpu_batch_size are mutually "
                             "incompatible. Please specify only one.")
        batch_size = single_gpu_batch_size
    else:
        world_size = get_world_size()
        if not (total_batch_size > 0 and total_batch_size % world_size == 0):
            raise ValueError(f"Total batch size ({total_batch_size}) must be divisible by the "
                             f"number of gpus ({world_size}).")
        batch_size = total_batch_size // world_size
    if isinstance(dataset, torchdata.IterableDataset):
        if sampler is not None:
            raise ValueError("sampler must be None if dataset is IterableDataset")
    else:
        dataset = ToIterableDataset(dataset, sampler, shard_chunk_size=batch_size)
    generator = None
    if seed is not None:
        generator = torch.Generator()
        generator.manual_seed(seed)
    common = dict(num_workers=num_workers, worker_init_fn=worker_init_reset_seed,
                  prefetch_factor=prefetch_factor if num_workers > 0 else None,
                  persistent_workers=persistent_workers, pin_memory=pin_memory,
                  generator=generator, **kwargs)
    if aspect_ratio_grouping:
        if not drop_last:
            raise ValueError("Aspect ratio grouping will drop incomplete batches.")
        single = torchdata.DataLoader(dataset, collate_fn=operator.itemgetter(0), **common)
        grouped = AspectRatioGroupedDataset(single, batch_size)
        return grouped if collate_fn is None else MapDataset(grouped, collate_fn)
    return torchdata.DataLoader(dataset, batch_size=batch_size, drop_last=drop_last,
                                collate_fn=trivial_batch_collator if collate_fn is None
                                else collate_fn, **common)


def _default_mapper(cfg, is_train):
    """DatasetMapper(cfg, is_train), where detkit.data has a Python DatasetMapper."""
    try:
        module = importlib.import_module(__package__ + ".dataset_mapper")
    except ModuleNotFoundError as e:
        raise NotImplementedError("a loader built from a config needs mapper=...: detkit.data has "
                                  "no Python DatasetMapper here") from e
    return module.DatasetMapper(cfg, is_train)


def _train_sampler(cfg, dataset):
    name = cfg.DATALOADER.SAMPLER_TRAIN
    logger.info("Using training sampler %s", name)
    seed = cfg.SEED  # as Detectron2: the config's seed, -1 included, seeds the stream
    if name == "TrainingSampler":
        return TrainingSampler(len(dataset), seed=seed)
    if name == "RepeatFactorTrainingSampler":
        factors = RepeatFactorTrainingSampler.repeat_factors_from_category_frequency(
            dataset, cfg.DATALOADER.REPEAT_THRESHOLD, sqrt=cfg.DATALOADER.REPEAT_SQRT)
        return RepeatFactorTrainingSampler(factors, seed=seed)
    if name == "RandomSubsetTrainingSampler":
        ratio = getattr(cfg.DATALOADER, "RANDOM_SUBSET_RATIO", None)
        if ratio is None:
            raise ValueError("RandomSubsetTrainingSampler needs cfg.DATALOADER.RANDOM_SUBSET_RATIO")
        return RandomSubsetTrainingSampler(len(dataset), ratio)
    raise ValueError(f"Unknown training sampler: {name}")


def _train_loader_from_config(cfg, mapper=None, *, dataset=None, sampler=None):
    if dataset is None:
        dataset = get_detection_dataset_dicts(
            cfg.DATASETS.TRAIN, filter_empty=cfg.DATALOADER.FILTER_EMPTY_ANNOTATIONS,
            min_keypoints=cfg.MODEL.ROI_KEYPOINT_HEAD.MIN_KEYPOINTS_PER_IMAGE
            if cfg.MODEL.KEYPOINT_ON else 0,
            proposal_files=cfg.DATASETS.PROPOSAL_FILES_TRAIN if cfg.MODEL.LOAD_PROPOSALS else None)
    if mapper is None:
        mapper = _default_mapper(cfg, True)
    if sampler is None and not isinstance(dataset, torchdata.IterableDataset):
        sampler = _train_sampler(cfg, dataset)
    return {"dataset": dataset, "sampler": sampler, "mapper": mapper,
            "total_batch_size": cfg.SOLVER.IMS_PER_BATCH,
            "aspect_ratio_grouping": cfg.DATALOADER.ASPECT_RATIO_GROUPING,
            "num_workers": cfg.DATALOADER.NUM_WORKERS}


def _as_mapped_dataset(dataset, mapper):
    if isinstance(dataset, list):
        dataset = DatasetFromList(dataset, copy=False)
    if not isinstance(dataset, torchdata.Dataset):
        raise TypeError(f"dataset must be a list or a torch Dataset, got "
                        f"{type(dataset).__name__}")
    return MapDataset(dataset, mapper) if mapper is not None else dataset


@configurable(from_config=_train_loader_from_config)
def build_detection_train_loader(dataset, *, mapper, sampler=None, total_batch_size,
                                 aspect_ratio_grouping=True, num_workers=0, collate_fn=None,
                                 **kwargs):
    """An endless stream of batches (lists of mapper(item)) of `dataset` (a list of dicts or a
    torch Dataset), read through `sampler` (a TrainingSampler by default; None for an iterable
    dataset). With a config: build_detection_train_loader(cfg, mapper=...)."""
    dataset = _as_mapped_dataset(dataset, mapper)
    if isinstance(dataset, torchdata.IterableDataset):
        if sampler is not None:
            raise ValueError("sampler must be None if dataset is IterableDataset")
    else:
        if sampler is None:
            sampler = TrainingSampler(len(dataset))
        if not isinstance(sampler, torchdata.Sampler):
            raise TypeError(f"Expect a Sampler but got {type(sampler)}")
    return build_batch_data_loader(dataset, sampler, total_batch_size,
                                   aspect_ratio_grouping=aspect_ratio_grouping,
                                   num_workers=num_workers, collate_fn=collate_fn, **kwargs)


def _test_loader_from_config(cfg, dataset_name, mapper=None):
    names = [dataset_name] if isinstance(dataset_name, str) else list(dataset_name)
    proposal_files = None
    if cfg.MODEL.LOAD_PROPOSALS:
        tests = list(cfg.DATASETS.TEST)
        proposal_files = [cfg.DATASETS.PROPOSAL_FILES_TEST[tests.index(n)] for n in names]
    dataset = get_detection_dataset_dicts(names, filter_empty=False,
                                          proposal_files=proposal_files)
    if mapper is None:
        mapper = _default_mapper(cfg, False)
    sampler = None if isinstance(dataset, torchdata.IterableDataset) \
        else InferenceSampler(len(dataset))
    return {"dataset": dataset, "mapper": mapper, "num_workers": cfg.DATALOADER.NUM_WORKERS,
            "sampler": sampler}


@configurable(from_config=_test_loader_from_config)
def _build_test_loader(dataset, *, mapper, sampler=None, batch_size=1, num_workers=0,
                       collate_fn=None):
    dataset = _as_mapped_dataset(dataset, mapper)
    if isinstance(dataset, torchdata.IterableDataset):
        if sampler is not None:
            raise ValueError("sampler must be None if dataset is IterableDataset")
    elif sampler is None:
        sampler = InferenceSampler(len(dataset))
    return torchdata.DataLoader(dataset, batch_size=batch_size, sampler=sampler, drop_last=False,
                                num_workers=num_workers,
                                collate_fn=trivial_batch_collator if collate_fn is None
                                else collate_fn)


def build_detection_test_loader(*args, **kwargs):
    """Every item of a dataset once (InferenceSampler), in batches of batch_size (1) lists of
    mapper(item): build_detection_test_loader(dataset, mapper=..., sampler=None, batch_size=1,
    num_workers=0, collate_fn=None), or (cfg, dataset_name, mapper=...) -> a torch DataLoader.
    build_detection_test_loader(cfg, dataset_name) with no mapper gives the loader that
    detkit.evaluation.inference_on_dataset runs natively (DatasetMapper(cfg, False)'s mapping)."""
    cfg = args[0] if args else kwargs.get("cfg")
    if _is_config(cfg) and kwargs.get("mapper") is None and len(args) <= 2 \
            and set(kwargs) <= {"cfg", "dataset_name", "mapper"}:
        name = args[1] if len(args) > 1 else kwargs.get("dataset_name")
        if not isinstance(name, str):
            raise TypeError(f"build_detection_test_loader(cfg, dataset_name): dataset_name must "
                            f"be a str, got {type(name).__name__}")
        return _TestLoader(cfg, name)
    return _build_test_loader(*args, **kwargs)


build_detection_test_loader.from_config = _test_loader_from_config
