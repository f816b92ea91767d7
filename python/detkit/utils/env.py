"""Detectron2's detectron2.utils.env helpers: TORCH_VERSION and seed_all_rng."""
import logging
import os
import random
from datetime import datetime

import numpy as np
import torch

# (major, minor) of the torch in this process, as Detectron2 compares it
TORCH_VERSION = tuple(int(x) for x in torch.__version__.split(".")[:2])


def seed_all_rng(seed=None):
    """Seeds Python's, numpy's and torch's generators; a seed from the pid, the time and
    os.urandom where none is given (logged, as Detectron2's)."""
    if seed is None:
        seed = (os.getpid() + int(datetime.now().strftime("%S%f")) +
                int.from_bytes(os.urandom(2), "big"))
        logging.getLogger(__name__).info("Using a generated random seed {}".format(seed))
    np.random.seed(seed)
    torch.manual_seed(seed)
    random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
