#!/usr/bin/env python3
"""detkit.config from Python: Detectron2's attribute access over detkit's config tree, with the
CLI's types and errors. Usage: test_config.py SHARED SOURCE DETKIT"""
import subprocess
import sys

import detkit
from detkit.config import CfgNode, get_cfg

shared, source, detkit_binary = sys.argv[1:4]
base = f"{source}/configs/Base-RCNN-FPN.yaml"


def error_of(action, kind=detkit.Error):
    try:
        action()
    except kind as e:
        return str(e)
    raise AssertionError(f"no {kind.__name__} raised")


cfg = get_cfg()
assert isinstance(cfg, CfgNode)
assert cfg.SOLVER.BASE_LR == 0.001 and cfg.MODEL.ROI_HEADS.NUM_CLASSES == 80
assert cfg["SOLVER"]["IMS_PER_BATCH"] == cfg.SOLVER.IMS_PER_BATCH
cfg.SOLVER.BASE_LR = 0.01
cfg.MODEL.WEIGHTS = "w.pth"
cfg.INPUT.MIN_SIZE_TRAIN = (320, 352)
section = cfg.SOLVER
section.MAX_ITER = 300  # a section is a view of the tree
assert (cfg.SOLVER.BASE_LR, cfg.MODEL.WEIGHTS, cfg.SOLVER.MAX_ITER) == (0.01, "w.pth", 300)
assert list(cfg.INPUT.MIN_SIZE_TRAIN) == [320, 352]
assert "SOLVER" in cfg and "BASE_LR" in cfg.SOLVER and "NOPE" not in cfg
assert "BASE_LR" in cfg.SOLVER.keys()

# The same messages as the CLI and the YAML files.
cli = subprocess.run([detkit_binary, "config", "--config-file", base, "SOLVER.BASE_LRR", "0.1"],
                     capture_output=True, text=True)
cli_message = cli.stderr.strip().split("detkit: error: ")[-1]
listed = error_of(lambda: cfg.merge_from_list(["SOLVER.BASE_LRR", "0.1"]))
print("CLI:   ", cli_message)
print("Python:", listed)
assert listed == cli_message, "merge_from_list and the CLI word an unknown key differently"
assert error_of(lambda: setattr(cfg.SOLVER, "BASE_LRR", 0.1)) == \
    "unknown config key 'SOLVER.BASE_LRR' in Python (did you mean 'SOLVER.BASE_LR'?)"
assert "unknown config key 'SOLVER.BASE_LRR'" in error_of(lambda: cfg.SOLVER.BASE_LRR,
                                                          AttributeError)
assert not hasattr(cfg.SOLVER, "BASE_LRR")
# New keys on an unfrozen config are added, as yacs adds them (Detectron2's projects extend the
# config so); a near miss of an existing key stays the error above; a frozen config refuses.
extended = get_cfg()
extended.MY_PROJECT_KEY = 3
extended.MODEL.MY_HEAD = CfgNode()
extended.MODEL.MY_HEAD.DIM = 256
extended.MODEL.MY_HEAD.NAMES = ["a", "b"]
extended.MODEL.OTHER_HEAD = {"DEPTH": 2}
assert (extended.MY_PROJECT_KEY, extended.MODEL.MY_HEAD.DIM, list(extended.MODEL.MY_HEAD.NAMES),
        extended.MODEL.OTHER_HEAD.DEPTH) == (3, 256, ["a", "b"], 2)
assert "MY_HEAD" in extended.MODEL and "MY_PROJECT_KEY: 3" in extended.dump()
assert "expected a int" in error_of(lambda: setattr(extended.MODEL.MY_HEAD, "DIM", "wide"))
assert "unknown config key 'MY_PROJECT_KEY'" in error_of(
    lambda: get_cfg().merge_from_list(["MY_PROJECT_KEY", "1"]))  # lists and files: known keys
extended.freeze()
assert "frozen" in error_of(lambda: setattr(extended, "ANOTHER_KEY", 1))
assert error_of(lambda: setattr(cfg.SOLVER, "MAX_ITER", "many")).startswith(
    "config key 'SOLVER.MAX_ITER' in Python: expected a int")
assert "expected a list" in error_of(lambda: setattr(cfg.MODEL, "PIXEL_STD", 57.0))
assert issubclass(detkit.Error, RuntimeError)

# Files and lists as Detectron2 merges them; values other than strings are set as they are.
cfg = get_cfg()
cfg.merge_from_file(f"{source}/configs/quick/mask_rcnn_R_18_FPN_shapes.yaml")
cfg.merge_from_list(["SOLVER.IMS_PER_BATCH", "2", "SOLVER.MAX_ITER", 7,
                     "INPUT.MIN_SIZE_TEST", "(64)", "DATASETS.TEST", ("a", "b")])
assert (cfg.SOLVER.IMS_PER_BATCH, cfg.SOLVER.MAX_ITER, cfg.INPUT.MIN_SIZE_TEST) == (2, 7, 64)
assert list(cfg.DATASETS.TEST) == ["a", "b"]
assert cfg.MODEL.RESNETS.DEPTH == 18
assert "config file 'nowhere.yaml' does not exist" in error_of(lambda: cfg.merge_from_file("nowhere.yaml"))

# dump() is Detectron2's cfg.dump(), and what it wrote loads back to the same tree; clone() is a
# copy; freeze() refuses writes.
dumped = cfg.dump()
again = get_cfg()
with open("python_config_dump.yaml", "w") as f:  # in the test's working directory
    f.write(dumped)
again.merge_from_file("python_config_dump.yaml")
assert again == cfg and again.dump() == dumped
copy = cfg.clone()
copy.SOLVER.MAX_ITER = 9
assert cfg.SOLVER.MAX_ITER == 7
cfg.freeze()
assert cfg.is_frozen()
assert "frozen" in error_of(lambda: setattr(cfg.SOLVER, "MAX_ITER", 1))
cfg.defrost()
cfg.SOLVER.MAX_ITER = 1

# merge_from_other_cfg: a dict-made CfgNode sets only its keys; a whole config sets all of them
target = get_cfg()
target.MODEL.WEIGHTS = "kept.pth"
partial = CfgNode({"SOLVER": {"LR_SCHEDULER_NAME": "WarmupCosineLR", "BASE_LR": 5.0,
                              "STEPS": (10, 20)}})
assert partial.SOLVER.BASE_LR == 5.0 and partial.MODEL.WEIGHTS == ""  # others: the defaults
target.merge_from_other_cfg(partial.clone())
assert (target.SOLVER.LR_SCHEDULER_NAME, target.SOLVER.BASE_LR, target.SOLVER.STEPS,
        target.MODEL.WEIGHTS) == ("WarmupCosineLR", 5.0, [10, 20], "kept.pth")
target.merge_from_other_cfg({"SOLVER": {"MAX_ITER": 7}})
assert target.SOLVER.MAX_ITER == 7 and target.SOLVER.BASE_LR == 5.0
target.merge_from_other_cfg(get_cfg())  # a whole config: every key, as yacs
assert target == get_cfg()
assert CfgNode({"SOLVER": {"NOT_A_KEY": 1}}).SOLVER.NOT_A_KEY == 1  # a dict's own keys, as yacs
assert "NOT_A_KEY" in error_of(lambda: target.merge_from_other_cfg({"MODEL": {"NOT_A_KEY": 1}}))
assert "MAX_ITER" in error_of(lambda: target.merge_from_other_cfg({"SOLVER": {"MAX_ITER": "x"}}))
assert "CfgNode or a dict" in error_of(lambda: target.merge_from_other_cfg(3), TypeError)
target.freeze()
assert "frozen" in error_of(lambda: target.merge_from_other_cfg({"SOLVER": {"MAX_ITER": 8}}))

# The model zoo: Detectron2's names, detkit's shipped configs.
from detkit import model_zoo  # noqa: E402

name = "COCO-InstanceSegmentation/mask_rcnn_R_50_FPN_3x.yaml"
zoo = model_zoo.get_config(name, trained=True)
assert zoo.MODEL.MASK_ON and zoo.MODEL.WEIGHTS == model_zoo.get_checkpoint_url(name)
assert zoo.MODEL.WEIGHTS.startswith("https://dl.fbaipublicfiles.com/detectron2/" + name[:-5])
assert model_zoo.get_config_file(name).endswith(name)
assert "not available" in error_of(lambda: model_zoo.get_config_file("Nope/x.yaml"), RuntimeError)
# The CLI's log line on the torch build detkit runs on, from Python: the same torch, threads alike.
import torch  # noqa: E402

report = detkit._C.torch_build_report()
assert report.startswith(f"torch {torch.__version__.split('+')[0]} ("), report
logged = subprocess.run([detkit_binary, "config", "--config-file", base], capture_output=True,
                        text=True).stderr
assert report in logged, (report, logged)
print(report)
print("detkit.config, detkit.model_zoo and the torch build line: all checks passed")
