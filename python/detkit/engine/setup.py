"""Detectron2's job setup helpers (detectron2.engine.defaults): default_argument_parser,
default_setup and default_writers, for loops written in Python."""
import argparse
import os
import sys

import torch

from .. import _C
from ..config.config import CfgNode
from ..utils import comm
from ..utils.collect_env import collect_env_info
from ..utils.env import seed_all_rng
from ..utils.events import CommonMetricPrinter, JSONWriter, TensorboardXWriter
from ..utils.logger import setup_logger

__all__ = ["default_argument_parser", "default_setup", "default_writers"]


def default_argument_parser(epilog=None):
    """Detectron2's command line: --config-file, --resume, --eval-only, --num-gpus,
    --num-machines, --machine-rank, --dist-url and the trailing config overrides (opts)."""
    prog = sys.argv[0]
    examples = "\n".join([
        "usage examples:",
        f"  one machine, 8 processes:   {prog} --config-file my.yaml --num-gpus 8",
        f"  config overrides at the end: {prog} --config-file my.yaml SOLVER.BASE_LR 0.001",
        f"  two machines, on the first:  {prog} --num-machines 2 --machine-rank 0 "
        "--dist-url tcp://HOST:PORT ...",
        f"  and on the second:          {prog} --num-machines 2 --machine-rank 1 "
        "--dist-url tcp://HOST:PORT ...",
    ])
    parser = argparse.ArgumentParser(epilog=epilog or examples,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config-file", default="", metavar="FILE",
                        help="the YAML config to start from")
    parser.add_argument("--resume", action="store_true",
                        help="resume from OUTPUT_DIR's last checkpoint when there is one")
    parser.add_argument("--eval-only", action="store_true",
                        help="evaluate MODEL.WEIGHTS on DATASETS.TEST without training")
    parser.add_argument("--num-gpus", type=int, default=1,
                        help="processes to start on this machine (one per device)")
    parser.add_argument("--num-machines", type=int, default=1,
                        help="machines taking part in the job")
    parser.add_argument("--machine-rank", type=int, default=0,
                        help="this machine's index among them, 0 .. num-machines - 1")
    # a port that differs between users of one machine, as Detectron2's
    uid = os.getuid() if sys.platform != "win32" else 1
    port = 2 ** 15 + 2 ** 14 + hash(uid) % 2 ** 14
    parser.add_argument("--dist-url", default=f"tcp://127.0.0.1:{port}",
                        help="URL of machine 0 for the job's rendezvous")
    parser.add_argument("opts", default=None, nargs=argparse.REMAINDER,
                        help='config overrides at the end: "PATH.KEY VALUE" pairs')
    return parser


def _try_get_key(cfg, *keys, default=None):
    """The value of the first dotted key cfg has (a CfgNode, or nested dicts / attributes)."""
    for key in keys:
        node = cfg
        try:
            for part in key.split("."):
                node = node[part] if isinstance(node, dict) else getattr(node, part)
        except (AttributeError, KeyError, _C.Error):
            continue
        return node
    return default


def default_setup(cfg, args):
    """At a job's start: make OUTPUT_DIR, log to it (loggers "detkit" and "fvcore"), log the
    environment, the arguments and the config, save the config to OUTPUT_DIR/config.yaml (main
    process), seed from SEED (+ rank; a random seed when negative) and set
    cudnn.benchmark from CUDNN_BENCHMARK unless args.eval_only."""
    output_dir = _try_get_key(cfg, "OUTPUT_DIR", "output_dir", "train.output_dir")
    if comm.is_main_process() and output_dir:
        os.makedirs(output_dir, exist_ok=True)
    rank = comm.get_rank()
    setup_logger(output_dir, distributed_rank=rank, name="fvcore")
    logger = setup_logger(output_dir, distributed_rank=rank)
    logger.info(f"process {rank} of {comm.get_world_size()}")
    logger.info("environment:\n" + collect_env_info())
    logger.info(f"arguments: {args}")
    config_file = getattr(args, "config_file", "")
    if config_file:
        with open(config_file, "r") as f:
            logger.info(f"{config_file}:\n{f.read()}")
    if comm.is_main_process() and output_dir:
        if not isinstance(cfg, CfgNode):
            raise _C.Error("default_setup: only a detkit CfgNode can be saved to config.yaml, "
                           f"not a {type(cfg).__name__}")
        path = os.path.join(output_dir, "config.yaml")
        logger.info(f"the whole config:\n{cfg.dump()}")
        with open(path, "w") as f:
            f.write(cfg.dump())
        logger.info(f"config written to {path}")
    seed = _try_get_key(cfg, "SEED", "train.seed", default=-1)
    seed_all_rng(None if seed < 0 else seed + rank)
    if not getattr(args, "eval_only", False):
        torch.backends.cudnn.benchmark = bool(
            _try_get_key(cfg, "CUDNN_BENCHMARK", "train.cudnn_benchmark", default=False))


def default_writers(output_dir, max_iter=None):
    """[CommonMetricPrinter(max_iter), JSONWriter(output_dir/metrics.json),
    TensorboardXWriter(output_dir)]; output_dir is made."""
    os.makedirs(output_dir, exist_ok=True)
    return [CommonMetricPrinter(max_iter),
            JSONWriter(os.path.join(output_dir, "metrics.json")),
            TensorboardXWriter(output_dir)]
