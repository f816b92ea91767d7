"""detkit.utils' small modules: collect_env_info (the versions and paths it reports are the ones
imported). Usage: test_utils.py [SHARED SOURCE DETKIT] (unused)."""
import os
import sys

import numpy as np
import torch

import detkit
from checks import check, finish
from detkit.utils.collect_env import collect_env_info

info = collect_env_info()
rows = {}
for line in info.splitlines():
    key, _, value = line.partition("  ")
    if value.strip() and not key.startswith("-"):
        rows[key.strip()] = value.strip()
check(rows.get("PyTorch") == f"{torch.__version__} @{os.path.dirname(torch.__file__)}",
      f"collect_env: PyTorch {rows.get('PyTorch')}")
check(rows.get("numpy") == np.__version__ and rows.get("sys.platform") == sys.platform,
      "collect_env: numpy and platform")
check(rows.get("detkit") == f"@{os.path.dirname(detkit.__file__)}" and
      rows.get("detkit._C") == detkit._C.__file__, f"collect_env: detkit {rows.get('detkit')}")
check(rows.get("GPU available", "").startswith("Yes" if torch.cuda.is_available() else "No"),
      f"collect_env: GPU available {rows.get('GPU available')}")
check(info.endswith(torch.__config__.show()), "collect_env: torch's build configuration last")
finish()
