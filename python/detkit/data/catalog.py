"""A dataset registered as a Python function is called once, when a trainer first needs it; its
dicts are checked (each problem named by dataset, record, file and field) and written as a COCO
instances file that detkit's own catalog then reads, with the same checks as any COCO file."""
import atexit
import json
import os
import shutil
import tempfile

from .. import _C
from .coco_dicts import dicts_to_coco


class _Metadata:
    """Detectron2's Metadata: attributes set once (thing_classes, keypoint_names, ...)."""

    def __init__(self, name):
        object.__setattr__(self, "name", name)

    def set(self, **kwargs):
        for key, value in kwargs.items():
            setattr(self, key, value)
        return self

    def __setattr__(self, key, value):
        if hasattr(self, key) and getattr(self, key) != value:
            raise AssertionError(f"Attribute '{key}' in the metadata of '{self.name}' cannot be "
                                 f"set to a different value!\n{getattr(self, key)} != {value}")
        object.__setattr__(self, key, value)

    def get(self, key, default=None):
        return getattr(self, key, default)

    def as_dict(self):
        return dict(self.__dict__)


class _MetadataCatalog:
    """Detectron2's MetadataCatalog. A name detkit knows (built in, such as coco_2017_val, or
    registered) comes with detkit's metadata of it: thing_classes, thing_dataset_id_to_contiguous_id,
    keypoint_names, keypoint_flip_map, keypoint_connection_rules, stuff_classes, evaluator_type,
    the files, ..."""

    def __init__(self):
        self._metadata = {}

    def get(self, name):
        if name not in self._metadata:
            self._metadata[name] = _Metadata(name).set(**_C.metadata_of(name))
        return self._metadata[name]

    def list(self):
        return list(self._metadata)

    def remove(self, name):
        self._metadata.pop(name, None)

    def pop(self, name, *default):
        """Forgets name's metadata and returns it (Detectron2's MetadataCatalog is a dict)."""
        return self._metadata.pop(name, *default)


class _DatasetCatalog:
    def __init__(self):
        self._functions = {}
        self._written = {}  # name -> the COCO file written for it
        self._folder = None

    def register(self, name, func):
        if not callable(func):
            raise _C.Error(f"DatasetCatalog.register('{name}', ...): the dataset must be a function "
                           "returning a list of dicts")
        if name in self._functions or name in _C.registered_datasets():
            raise _C.Error(f"Dataset '{name}' is already registered!")
        self._functions[name] = func

    def get(self, name):
        """The registered function's dicts; for a COCO instances dataset of detkit's catalog
        (built in, or from register_coco_instances), load_coco_json of its file."""
        if name in self._functions:
            return self._functions[name]()
        meta = MetadataCatalog.get(name) if name in _C.registered_datasets() else None
        if meta is not None and meta.get("evaluator_type") == "coco" and meta.get("json_file"):
            from .datasets.coco import load_coco_json
            return load_coco_json(meta.json_file, meta.image_root, name)
        if meta is not None:
            raise KeyError(f"Dataset '{name}' is detkit's ({meta.get('evaluator_type')}): "
                           f"DatasetCatalog.get gives the dicts of COCO instances datasets and "
                           f"of datasets registered as functions only")
        raise KeyError(f"Dataset '{name}' is not registered! Available datasets are: "
                       f"{', '.join(self.list())}")

    def list(self):
        """The names registered as functions and those of detkit's catalog (built in or
        registered from files)."""
        return sorted(set(self._functions) | set(_C.registered_datasets()))

    def keys(self):
        return self.list()

    def remove(self, name):
        """Unregisters name (Detectron2's DatasetCatalog.remove)."""
        if name not in self._functions:
            raise KeyError(f"Dataset '{name}' is not registered!")
        self.pop(name)

    def pop(self, name, *default):
        """Unregisters name and returns its function (Detectron2's DatasetCatalog is a dict)."""
        self._written.pop(name, None)
        return self._functions.pop(name, *default)

    def __contains__(self, name):
        return name in self._functions or name in _C.registered_datasets()

    def materialize(self, name):
        """Calls the function once and registers its dicts with detkit's catalog as a COCO file."""
        if name not in self._functions or name in self._written:
            return
        if self._folder is None:
            self._folder = tempfile.mkdtemp(prefix="detkit_datasets_")
            atexit.register(shutil.rmtree, self._folder, True)
        coco, image_root = dicts_to_coco(name, self.get(name), MetadataCatalog.get(name))
        path = os.path.join(self._folder, f"{name}.json")
        with open(path, "w") as f:
            json.dump(coco, f)
        _C.register_coco_instances(name, path, image_root)
        self._written[name] = path


DatasetCatalog = _DatasetCatalog()
MetadataCatalog = _MetadataCatalog()


def register_coco_instances(name, metadata, json_file, image_root):
    """Detectron2's register_coco_instances: a COCO instances file and its image folder."""
    _require_free(name)
    _C.register_coco_instances(name, str(json_file), str(image_root))
    MetadataCatalog.get(name).set(json_file=str(json_file), image_root=str(image_root),
                                  evaluator_type="coco", **metadata)


def register_lvis_instances(name, metadata, json_file, image_root):
    """Detectron2's register_lvis_instances: an LVIS file (images found by their coco_url's file
    name under image_root), scored by the LVIS evaluator."""
    _require_free(name)
    _C.register_lvis_instances(name, str(json_file), str(image_root))
    MetadataCatalog.get(name).set(json_file=str(json_file), image_root=str(image_root),
                                  evaluator_type="lvis", **metadata)


def register_pascal_voc(name, dirname, split, year, class_names=None):
    """Detectron2's register_pascal_voc: the images of ImageSets/Main/<split>.txt under a VOC
    folder, with their Annotations/*.xml. detkit reads the 20 VOC classes (Detectron2's
    CLASS_NAMES) only: other class_names are a detkit.Error."""
    voc = list(_C.voc_class_names())
    if class_names is not None and list(class_names) != voc:
        raise _C.Error(f"register_pascal_voc('{name}', ...): class_names {list(class_names)} are not "
                       f"Detectron2's 20 VOC classes; detkit reads those only")
    _require_free(name)
    _C.register_pascal_voc(name, str(dirname), str(split), int(year))
    MetadataCatalog.get(name).set(thing_classes=voc, dirname=str(dirname), year=int(year),
                                  split=str(split))


def register_coco_panoptic(name, metadata, image_root, panoptic_root, panoptic_json,
                           instances_json=None):
    """Detectron2's register_coco_panoptic: panoptic PNGs and their JSON (and the instances file,
    optional), scored by the COCO panoptic evaluator."""
    _require_free(name)
    _C.register_coco_panoptic(name, str(image_root), str(panoptic_root), str(panoptic_json),
                              "" if instances_json is None else str(instances_json))
    MetadataCatalog.get(name).set(panoptic_root=str(panoptic_root), image_root=str(image_root),
                                  panoptic_json=str(panoptic_json), json_file=instances_json,
                                  evaluator_type="coco_panoptic_seg", ignore_label=255,
                                  label_divisor=1000, **metadata)


def register_coco_panoptic_separated(name, metadata, image_root, panoptic_root, panoptic_json,
                                     sem_seg_root, instances_json):
    """Detectron2's register_coco_panoptic_separated: registers name + "_separated" (instances and
    the semantic PNGs of stuff, things as one class) and name + "_stuffonly" (the semantic PNGs)."""
    for registered in (name + "_separated", name + "_stuffonly"):
        _require_free(registered)
    _C.register_coco_panoptic_separated(name, str(image_root), str(panoptic_root),
                                        str(panoptic_json), str(sem_seg_root), str(instances_json))
    MetadataCatalog.get(name + "_separated").set(
        panoptic_root=str(panoptic_root), image_root=str(image_root),
        panoptic_json=str(panoptic_json), sem_seg_root=str(sem_seg_root),
        json_file=str(instances_json), evaluator_type="coco_panoptic_seg", ignore_label=255,
        **metadata)
    MetadataCatalog.get(name + "_stuffonly").set(
        sem_seg_root=str(sem_seg_root), image_root=str(image_root), evaluator_type="sem_seg",
        ignore_label=255, **metadata)


def _require_free(name):
    if name in DatasetCatalog or name in _C.registered_datasets():
        raise _C.Error(f"Dataset '{name}' is already registered!")


def materialize_datasets(cfg):
    """Registers with detkit's catalog every Python-registered dataset that cfg names."""
    for name in list(cfg.DATASETS.TRAIN) + list(cfg.DATASETS.TEST):
        DatasetCatalog.materialize(name)


class _TestLoader:
    """Detectron2's test loader, as inference_on_dataset consumes it: the dataset mapped as
    DatasetMapper(cfg, is_train=False) does, one image at a time (detkit runs it natively).
    detkit.data.build_detection_test_loader(cfg, dataset_name) with no mapper gives one."""

    def __init__(self, cfg, dataset_name):
        self.cfg = cfg.clone()
        self.dataset_name = dataset_name
