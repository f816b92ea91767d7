"""Checkpoint oracle for tests/checkpoint: files made by Python's torch.save, and torch.load of
files detkit wrote.

usage: oracle_checkpoint.py make DIR MARKER   writes the reader fixtures into DIR (see make())
       oracle_checkpoint.py resnet50 PATH     a torchvision resnet50 state dict, random weights
       oracle_checkpoint.py reload IN OUT     checks that IN's pickle names only the globals of
                                              plain tensors, torch.load(IN) as torch 2.x loads by
                                              default (weights_only=True), checks that it holds
                                              only plain types, torch.save(..., OUT)
       oracle_checkpoint.py unsafe_load PATH  torch.load(weights_only=False) (to show a malicious
                                              file works where safety is turned off)
"""
import collections
import io
import os
import pickle
import sys
import zipfile

import torch


def tiny_state_dict():
    """What state_dict() returns: an OrderedDict with _metadata, known values."""
    net = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    sd = net.state_dict()
    with torch.no_grad():
        for i, value in enumerate(sd.values()):
            value.copy_((torch.arange(value.numel()) + i).reshape(value.shape))
    assert hasattr(sd, "_metadata")
    return sd


class Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, ("touch '%s'" % self.marker,))


def zip_with_pickle(path, pickle_bytes):
    """A torch.save-style archive whose data.pkl is `pickle_bytes`."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", pickle_bytes)
        z.writestr("archive/version", "3\n")


def make(out, marker):
    torch.save({"a": torch.arange(4), "b.c": torch.ones(2, 2)}, f"{out}/plain.pth")
    torch.save(tiny_state_dict(), f"{out}/ordered.pth")
    torch.save({
        "model": tiny_state_dict(),
        "iteration": 7,
        "optimizer": {"state": {0: {"momentum_buffer": torch.full((2, 3), 0.5)}},
                      "param_groups": [{"lr": 0.02, "momentum": 0.9, "nesterov": False,
                                        "params": [0, 1]}]},
        "scheduler": {"base_lrs": [0.02], "last_epoch": 7},
        "extra": (1, "two", None, -3.5, 2**40, -2**40, True, "\u00e9"),
    }, f"{out}/nested.pth")
    x = torch.arange(60, dtype=torch.float32).reshape(3, 4, 5)
    torch.save({"transposed": x.transpose(0, 2), "sliced": x[1, 1:3, ::2],
                "offset": x.view(-1)[7:13], "empty": torch.empty(0, 3),
                "scalar": torch.tensor(3.5), "base": x}, f"{out}/views.pth")
    values = [0, 1, 2, 3, 100]
    dtypes = {"float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16,
              "int64": torch.int64, "int32": torch.int32, "int16": torch.int16,
              "int8": torch.int8, "uint8": torch.uint8}
    d = {name: torch.tensor(values).to(dt) for name, dt in dtypes.items()}
    d["bool"] = torch.tensor([True, False, True])
    torch.save(d, f"{out}/dtypes.pth")
    torch.save({"model": {}, "payload": Evil(marker)}, f"{out}/evil.pth")
    zip_with_pickle(f"{out}/evil_os.pth", b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00true\x85R.")
    zip_with_pickle(f"{out}/evil_stack_global.pth",
                    b"\x80\x04\x8c\x08builtins\x8c\x04eval\x93X\x01\x00\x00\x001\x85R.")
    zip_with_pickle(f"{out}/evil_inst.pth", b"(X\x04\x00\x00\x00trueisubprocess\nPopen\n.")
    torch.save({"a": torch.ones(3)}, f"{out}/legacy.pth", _use_new_zipfile_serialization=False)
    with open(f"{out}/model_zoo.pkl", "wb") as f:
        pickle.dump({"model": {"w": [1.0, 2.0]}, "__author__": "Detectron2 Model Zoo"}, f)
    with zipfile.ZipFile(f"{out}/plain.pth") as src, \
            zipfile.ZipFile(f"{out}/deflated.pth", "w", zipfile.ZIP_DEFLATED) as dst:
        for name in src.namelist():
            dst.writestr(name, src.read(name))


def resnet50(path):
    import torchvision
    torch.manual_seed(0)
    sd = torchvision.models.resnet50().state_dict()
    with torch.no_grad():
        for name, value in sd.items():
            if value.is_floating_point():
                value.copy_(torch.rand_like(value) + 0.5 if "running_var" in name
                            else torch.randn_like(value))
    torch.save(sd, path)


def check_plain(value, where="checkpoint"):
    """Only what detkit promises: dict, list, tuple, int, float, bool, None, str, tensor."""
    if isinstance(value, dict):
        for k, v in value.items():
            assert isinstance(k, (str, int, float, bool)), f"{where}: key {k!r}"
            check_plain(v, f"{where}[{k!r}]")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            check_plain(v, f"{where}[{i}]")
    elif isinstance(value, torch.Tensor):
        assert not value.requires_grad, f"{where}: requires_grad"
    else:
        assert value is None or isinstance(value, (int, float, bool, str)), f"{where}: {value!r}"


ALLOWED_GLOBALS = {"collections OrderedDict", "torch._utils _rebuild_tensor_v2"} | {
    f"torch {t}Storage" for t in ("Float", "Double", "Half", "BFloat16", "Long", "Int", "Short",
                                  "Char", "Byte", "Bool")}


def check_globals(path):
    """Every global data.pkl names is one a weights-only reader allows (read, never run)."""
    import pickletools
    with zipfile.ZipFile(path) as z:
        [pkl] = [n for n in z.namelist() if n.endswith("/data.pkl")]
        for opcode, arg, _ in pickletools.genops(z.read(pkl)):
            assert opcode.name != "GLOBAL" or arg in ALLOWED_GLOBALS, f"global {arg}"
            assert opcode.name not in ("STACK_GLOBAL", "INST", "OBJ", "NEWOBJ"), opcode.name


def reload(src, dst):
    check_globals(src)
    value = torch.load(src)  # torch 2.x's default, weights_only=True: what a user's torch.load does
    check_plain(value)
    torch.save(value, dst)


def main():
    mode = sys.argv[1]
    if mode == "make":
        make(sys.argv[2], sys.argv[3])
    elif mode == "resnet50":
        resnet50(sys.argv[2])
    elif mode == "reload":
        reload(sys.argv[2], sys.argv[3])
    elif mode == "unsafe_load":
        torch.load(sys.argv[2], weights_only=False)
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
