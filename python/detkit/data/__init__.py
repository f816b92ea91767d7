"""detkit.data: Detectron2's DatasetCatalog (datasets as Python functions returning its list of
dicts), MetadataCatalog and the register_* functions of detkit.data.datasets (COCO instances, LVIS,
Pascal VOC, COCO panoptic), over detkit's catalog; Detectron2's torch data loading (common,
samplers, build), transforms and detection_utils."""
from . import datasets, detection_utils, samplers, transforms
from .build import (build_batch_data_loader, build_detection_test_loader,
                    build_detection_train_loader, get_detection_dataset_dicts,
                    load_proposals_into_dataset)
from .catalog import DatasetCatalog, MetadataCatalog, register_coco_instances
from .common import AspectRatioGroupedDataset, DatasetFromList, MapDataset, ToIterableDataset

__all__ = ["AspectRatioGroupedDataset", "DatasetCatalog", "DatasetFromList", "MapDataset",
           "MetadataCatalog", "ToIterableDataset", "build_batch_data_loader",
           "build_detection_test_loader", "build_detection_train_loader", "datasets",
           "detection_utils", "get_detection_dataset_dicts", "load_proposals_into_dataset",
           "register_coco_instances", "samplers", "transforms"]
