"""check_version.py DETKIT (run with the Python whose torch detkit was built against)

`detkit --version` against what that torch says of itself:
  line 1  "detkit <version>"
  line 2  "torch <torch.__version__ without its local part> (...)"
  line 3  torch.version.cuda, torch.backends.cudnn.version() (91900 is 9.19.0) and
          torch.cuda.nccl.version(); the GPUs torch.cuda sees, by index and name, or
          "GPUs: none visible".
And the start log of a command names the same CUDA line. Where no GPU is visible,
`detkit train ... MODEL.DEVICE cuda` fails in one line naming the key and that no CUDA device is
visible, and the default MODEL.DEVICE (`detkit config`) is cpu; where one is, it is cuda.
"""
import os
import subprocess
import sys

import torch

detkit = sys.argv[1]
out = subprocess.run([detkit, "--version"], capture_output=True, text=True, timeout=120)
assert out.returncode == 0, out
lines = out.stdout.strip().splitlines()
print("\n".join(lines))
assert len(lines) == 3, lines
assert lines[0].startswith("detkit "), lines[0]
assert lines[1].startswith("torch " + torch.__version__.split("+")[0] + " ("), lines[1]

cuda = lines[2]
if torch.version.cuda is None:
    assert cuda == "CUDA: none (a CPU build of torch)", cuda
else:
    assert cuda.startswith("CUDA " + torch.version.cuda + ", "), cuda
    v = torch.backends.cudnn.version()
    assert f"cuDNN {v // 10000}.{v // 100 % 100}.{v % 100}" in cuda, (cuda, v)
    nccl = ".".join(str(x) for x in torch.cuda.nccl.version())
    assert f"NCCL {nccl}" in cuda, (cuda, nccl)
    gpus = torch.cuda.device_count()
    if gpus == 0:
        assert cuda.endswith("; GPUs: none visible"), cuda
    for i in range(gpus):
        p = torch.cuda.get_device_properties(i)
        assert f" {i} {p.name} (sm_{p.major}{p.minor}, " in cuda, (cuda, p)

# The start log of any command says the same.
log = subprocess.run([detkit, "config", "--config-file", "configs/Base-RCNN-FPN.yaml"],
                     capture_output=True, text=True, timeout=120)
assert log.returncode == 0, log
assert cuda in log.stderr + log.stdout, log.stderr
default = [l for l in log.stdout.splitlines() if l.strip().startswith("DEVICE:")]
gpus = torch.cuda.device_count() if torch.version.cuda else 0
built_with_kernels = "detkit's CUDA kernels for" in cuda
expected = "cuda" if gpus > 0 and built_with_kernels else "cpu"
assert default == [f"  DEVICE: {expected}"], default
print("default MODEL.DEVICE:", expected)

if gpus == 0:
    train = subprocess.run(
        [detkit, "train", "--config-file", "configs/quick/mask_rcnn_R_18_FPN_shapes.yaml",
         "MODEL.DEVICE", "cuda", "OUTPUT_DIR", os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                           "detkit_check_version")],
        capture_output=True, text=True, timeout=300)
    assert train.returncode != 0, train
    error = [l for l in train.stderr.splitlines() if l.startswith("detkit: error:")]
    print(error)
    assert len(error) == 1, train.stderr
    assert "MODEL.DEVICE 'cuda' is not available" in error[0], error
    assert "no CUDA device visible" in error[0], error
print("ok")
