"""numpy .pkl oracle for tests/checkpoint: Detectron2 model-zoo and Caffe2 / Detectron1 weight
files made with Debian's python3-numpy, each checked by reading it back the way Detectron2 does
(pickle.load(f, encoding="latin1")).

usage: oracle_numpy_pickle.py make DIR MARKER [D2_WEIGHTS]
  DIR/arrays_p{2,4,5}.pkl   dtypes, byte orders, Fortran order, 0-d and empty arrays, a shared
                            array, a non-contiguous view; DIR/arrays.pth: the same as tensors
  DIR/arrays_py2.pkl        the same dict written as Python 2's cPickle protocol 2 writes it
                            (str as BINSTRING, numpy buffers as latin-1 str)
  DIR/r50_caffe2.pkl        a Caffe2 ImageNet R-50 (MSRA names conv1_w ... res5_2_branch2c_bn_b,
                            pred_w/b; Python 2 style), DIR/r50_expected.pth: its tensors under
                            the Detectron2 names of a GeneralizedRCNN's backbone.bottom_up
  DIR/zoo_p{2,4,5}.pkl      with D2_WEIGHTS: {"model": D2_WEIGHTS as numpy, "__author__": ...}
  DIR/detectron1.pkl        with D2_WEIGHTS: its tensors under Detectron1 blob names in "blobs"
                            (class-specific rows in Detectron1's order, _momentum blobs added)
  DIR/evil_*.pkl            malicious or malformed pickles (MARKER is created if one runs)
"""
import collections
import io
import os
import pickle
import pickletools
import struct
import sys

import numpy as np


class Python2Pickler(pickle._Pickler):
    """Writes str and bytes as Python 2's str (BINSTRING / SHORT_BINSTRING)."""

    def save_py2_str(self, obj):
        data = obj.encode("latin1") if isinstance(obj, str) else bytes(obj)
        if len(data) < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([len(data)]) + data)
        else:
            self.write(pickle.BINSTRING + struct.pack("<i", len(data)) + data)
        self.memoize(obj)

    dispatch = dict(pickle._Pickler.dispatch)
    dispatch[str] = save_py2_str
    dispatch[bytes] = save_py2_str


def dump_py2(obj, path):
    with open(path, "wb") as f:
        Python2Pickler(f, protocol=2).dump(obj)


def disassembled(path):
    """The opcode names and the globals (module.name) of a pickle file, as pickletools sees them."""
    ops, names, strings = set(), set(), []
    for op, arg, _ in pickletools.genops(open(path, "rb").read()):
        ops.add(op.name)
        if op.name == "GLOBAL":
            names.add(arg.replace(" ", "."))
        elif op.name in ("SHORT_BINUNICODE", "BINUNICODE"):
            strings.append(arg)
        elif op.name == "STACK_GLOBAL":
            names.add(strings[-2] + "." + strings[-1])
    # numpy 2 (the venv's) writes numpy.core as numpy._core; detkit reads both spellings, and the
    # checks below name numpy 1's, which the model zoo's files have.
    return ops, {n.replace("numpy._core.", "numpy.core.") for n in names}


def check_paths(out):
    """Each file exercises the reader path it is meant to (checked on pickletools' disassembly)."""
    ops, names = disassembled(f"{out}/arrays_p2.pkl")
    assert {"numpy.core.multiarray._reconstruct", "numpy.dtype", "_codecs.encode",
            "numpy.core.multiarray.scalar"} <= names and "BINUNICODE" in ops, (ops, names)
    ops, names = disassembled(f"{out}/arrays_p4.pkl")
    assert "SHORT_BINBYTES" in ops and "STACK_GLOBAL" in ops and "FRAME" in ops, ops
    ops, names = disassembled(f"{out}/arrays_p5.pkl")
    assert "BYTEARRAY8" in ops and "numpy.core.numeric._frombuffer" in names, (ops, names)
    # the non-contiguous view still goes through _reconstruct in protocol 5
    assert "numpy.core.multiarray._reconstruct" in names, names
    ops, names = disassembled(f"{out}/arrays_py2.pkl")
    assert {"SHORT_BINSTRING", "BINSTRING"} & ops and not {"BINUNICODE", "SHORT_BINBYTES"} & ops, ops


def load_like_detectron2(path):
    with open(path, "rb") as f:
        return pickle.load(f, encoding="latin1")


def same(a, b):
    return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype.str[1:] == b.dtype.str[1:] and
            a.shape == b.shape and np.array_equal(a, b))


def arrays():
    base = np.arange(24, dtype=np.float32).reshape(2, 3, 4) * 0.5 - 3
    shared = np.linspace(-1, 1, 7).astype(np.float32)
    d = collections.OrderedDict()
    d["f32"] = base
    d["f32_big_endian"] = base.astype(">f4")
    d["f64_big_endian"] = np.arange(6, dtype=">f8").reshape(3, 2) / 7
    d["i64_big_endian"] = np.array([-(2**40), 3, 2**50], dtype=">i8")
    d["fortran"] = np.asfortranarray(np.arange(12, dtype=np.int32).reshape(3, 4))
    d["fortran_3d"] = np.asfortranarray(base)
    d["f16"] = np.array([0.5, -2.25, 65504], dtype=np.float16)
    d["i8"] = np.array([-128, 0, 127], dtype=np.int8)
    d["i16"] = np.array([-30000, 12345], dtype=np.int16)
    d["u8"] = np.array([0, 200, 255], dtype=np.uint8)
    d["bool"] = np.array([[True, False], [False, True]])
    d["scalar_0d"] = np.array(2.5, dtype=np.float32)
    d["empty"] = np.zeros((0, 3), dtype=np.float32)
    d["view"] = base[:, ::2, 1:]  # not contiguous
    d["shared_a"] = shared
    d["shared_b"] = shared
    d["numpy_scalar"] = np.float32(3.25)
    d["latin1_bytes"] = bytes(range(250, 256)).decode("latin1")  # a str above 127
    return d


def torch_of(value):
    import torch
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.array(value, dtype=value.dtype.newbyteorder("="), order="C"))
    if isinstance(value, np.generic):
        return torch.from_numpy(np.array(value))
    return value


def r50_caffe2():
    """MSRA R-50.pkl's names and shapes (stride-in-1x1 bottlenecks, affine BN as _bn_s/_bn_b)."""
    rng = np.random.RandomState(0)
    blobs, names = collections.OrderedDict(), {}

    def add(c2, d2, shape):
        # distinct values in every array, scaled like a trained network's so that a model
        # started from them trains: He-scaled convolutions, residual branches damped
        if c2.endswith("_w"):
            value = rng.standard_normal(shape) * np.sqrt(2.0 / np.prod(shape[1:]))
        elif c2.endswith("_s"):
            value = rng.uniform(0.05, 0.15, shape) if "branch2c" in c2 else rng.uniform(0.5, 1, shape)
        else:
            value = rng.standard_normal(shape) * 0.1
        blobs[c2] = value.astype(np.float32)
        names[c2] = d2

    add("conv1_w", "stem.conv1.weight", (64, 3, 7, 7))
    add("res_conv1_bn_s", "stem.conv1.norm.weight", (64,))
    add("res_conv1_bn_b", "stem.conv1.norm.bias", (64,))
    in_ch = 64
    for stage, (blocks, mid) in zip(range(2, 6), [(3, 64), (4, 128), (6, 256), (3, 512)]):
        out = mid * 4
        for b in range(blocks):
            pre, d2 = f"res{stage}_{b}", f"res{stage}.{b}"
            if b == 0:
                add(f"{pre}_branch1_w", f"{d2}.shortcut.weight", (out, in_ch, 1, 1))
                add(f"{pre}_branch1_bn_s", f"{d2}.shortcut.norm.weight", (out,))
                add(f"{pre}_branch1_bn_b", f"{d2}.shortcut.norm.bias", (out,))
            for branch, conv, shape in [("2a", "conv1", (mid, in_ch if b == 0 else out, 1, 1)),
                                        ("2b", "conv2", (mid, mid, 3, 3)),
                                        ("2c", "conv3", (out, mid, 1, 1))]:
                add(f"{pre}_branch{branch}_w", f"{d2}.{conv}.weight", shape)
                add(f"{pre}_branch{branch}_bn_s", f"{d2}.{conv}.norm.weight", shape[:1])
                add(f"{pre}_branch{branch}_bn_b", f"{d2}.{conv}.norm.bias", shape[:1])
        in_ch = out
    blobs["pred_w"] = rng.standard_normal((1000, 2048)).astype(np.float32)
    blobs["pred_b"] = rng.standard_normal((1000,)).astype(np.float32)
    return blobs, names


def detectron1_names(d2_weights):
    """Detectron1 blob name of each Detectron2 name of the fixture's Mask R-CNN R-50-FPN."""
    out = {}
    last_block = {2: 2, 3: 3, 4: 5, 5: 2}  # R-50's blocks per stage, minus one
    for name in d2_weights:
        parts = name.split(".")
        leaf = {"weight": "w", "bias": "b"}[parts[-1]] if parts[-1] in ("weight", "bias") else {
            "running_mean": "rm", "running_var": "riv"}[parts[-1]]
        if name.startswith("backbone.bottom_up.stem.conv1."):
            c2 = "conv1_w" if parts[-2] == "conv1" else "res_conv1_bn_" + {"w": "s"}.get(leaf, leaf)
        elif name.startswith("backbone.bottom_up.res"):
            stage, block, conv = parts[2], parts[3], parts[4]
            branch = {"shortcut": "branch1", "conv1": "branch2a", "conv2": "branch2b",
                      "conv3": "branch2c"}[conv]
            base = f"{stage}_{block}_{branch}"
            c2 = base + "_bn_" + {"w": "s"}.get(leaf, leaf) if parts[5] == "norm" else base + "_w"
        elif name.startswith("backbone.fpn_lateral"):  # the top stage has no "_lateral"
            stage = int(parts[1][-1])
            lateral = "" if stage == 5 else "_lateral"
            c2 = f"fpn_inner_res{stage}_{last_block[stage]}_sum{lateral}_{leaf}"
        elif name.startswith("backbone.fpn_output"):
            stage = int(parts[1][-1])
            c2 = f"fpn_res{stage}_{last_block[stage]}_sum_{leaf}"
        elif name.startswith("proposal_generator.rpn_head."):
            c2 = {"conv": "conv_rpn_fpn2", "objectness_logits": "rpn_cls_logits_fpn2",
                  "anchor_deltas": "rpn_bbox_pred_fpn2"}[parts[2]] + "_" + leaf
        elif name.startswith("roi_heads.box_head.fc"):
            c2 = {"fc1": "fc6", "fc2": "fc7"}[parts[2]] + "_" + leaf
        elif name.startswith("roi_heads.box_predictor."):
            c2 = {"cls_score": "cls_score", "bbox_pred": "bbox_pred"}[parts[2]] + "_" + leaf
        elif name.startswith("roi_heads.mask_head.mask_fcn"):
            c2 = f"_[mask]_fcn{parts[2][-1]}_{leaf}"
        elif name.startswith("roi_heads.mask_head.deconv"):
            c2 = "conv5_mask_" + leaf
        elif name.startswith("roi_heads.mask_head.predictor"):
            c2 = "mask_fcn_logits_" + leaf
        else:
            raise ValueError("no Detectron1 name for " + name)
        out[name] = c2
    return out


def detectron1_value(name, value, num_classes):
    """Detectron1's layout of a class-specific tensor: background first."""
    if name.startswith("roi_heads.box_predictor.cls_score."):
        return np.concatenate([value[-1:], value[:-1]])
    if name.startswith("roi_heads.box_predictor.bbox_pred."):
        return np.concatenate([np.full_like(value[:4], 7.0), value])
    if name.startswith("roi_heads.mask_head.predictor."):
        return np.concatenate([np.full_like(value[:1], 7.0), value])
    return value


def evil_pickles(out, marker):
    class Evil:
        def __reduce__(self):
            return (os.system, ("touch '%s'" % marker,))

    class Nested:
        def __reduce__(self):
            return (np.array, ([Evil()],))

    for proto in (2, 4):
        with open(f"{out}/evil_system_p{proto}.pkl", "wb") as f:
            pickle.dump({"model": {"w": Evil()}, "__author__": "x"}, f, protocol=proto)
    with open(f"{out}/evil_nested.pkl", "wb") as f:
        pickle.dump({"w": np.zeros(2, np.float32), "x": Nested()}, f, protocol=2)
    # numpy's own reconstructor asked to build something else than an ndarray
    with open(f"{out}/evil_matrix.pkl", "wb") as f:
        pickle.dump({"w": np.matrix([[1.0, 2.0]])}, f, protocol=2)
    with open(f"{out}/object_array.pkl", "wb") as f:
        pickle.dump({"w": np.array([1, "a"], dtype=object)}, f, protocol=2)
    with open(f"{out}/uint32.pkl", "wb") as f:
        pickle.dump({"w": np.arange(3, dtype=np.uint32)}, f, protocol=2)
    with open(f"{out}/structured.pkl", "wb") as f:
        pickle.dump({"w": np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")])}, f, protocol=2)
    # A persistent id, as torch.save's pickler would write it, in a plain pickle.
    with open(f"{out}/persistent_id.pkl", "wb") as f:
        f.write(b"\x80\x02}q\x00X\x01\x00\x00\x00wq\x01(X\x07\x00\x00\x00storageq\x02ctorch\n"
                b"FloatStorage\nq\x03X\x01\x00\x00\x000q\x04X\x03\x00\x00\x00cpuq\x05K\x04tq\x06"
                b"Qs.")
    # The shape says 4 floats, the buffer holds 3; an absurd shape; protocol 5 out-of-band.
    good = pickle.dumps({"w": np.arange(4, dtype=np.float32)}, protocol=4)
    short = good.replace(np.arange(4, dtype=np.float32).tobytes(),
                         np.arange(3, dtype=np.float32).tobytes())
    short = short.replace(b"C\x10", b"C\x0c")
    open(f"{out}/short_buffer.pkl", "wb").write(short)
    assert b"K\x04\x85" in good
    huge = good.replace(b"K\x04\x85", b"\x8a\x05\x00\x00\x00\x00\x01\x8a\x05\x00\x00\x00\x00\x01\x86")
    open(f"{out}/absurd_shape.pkl", "wb").write(huge)
    buffers = []
    oob = pickle.dumps({"w": np.arange(4, dtype=np.float32)}, protocol=5,
                       buffer_callback=buffers.append)
    open(f"{out}/out_of_band.pkl", "wb").write(oob)
    r = pickle.dumps({"w": np.arange(1000, dtype=np.float32)}, protocol=4)
    open(f"{out}/truncated.pkl", "wb").write(r[: len(r) // 2])
    open(f"{out}/protocol0.pkl", "wb").write(pickle.dumps({"w": 1}, protocol=0))


def make(out, marker, d2_weights=None):
    import torch
    d = arrays()
    for proto in (2, 4, 5):
        with open(f"{out}/arrays_p{proto}.pkl", "wb") as f:
            pickle.dump(d, f, protocol=proto)
    dump_py2(d, f"{out}/arrays_py2.pkl")
    for name in ["arrays_p2", "arrays_p4", "arrays_p5", "arrays_py2"]:
        back = load_like_detectron2(f"{out}/{name}.pkl")
        for k, v in d.items():
            assert type(back[k]) == type(v) and (not isinstance(v, np.ndarray) or same(back[k], v)), (name, k)
        assert back["shared_a"] is back["shared_b"]
    check_paths(out)
    torch.save({k: torch_of(v) for k, v in d.items()}, f"{out}/arrays.pth")

    blobs, names = r50_caffe2()
    dump_py2(blobs, f"{out}/r50_caffe2.pkl")
    back = load_like_detectron2(f"{out}/r50_caffe2.pkl")
    assert list(back) == list(blobs) and all(same(back[k], v) for k, v in blobs.items())
    torch.save({"backbone.bottom_up." + names[k]: torch.from_numpy(v)
                for k, v in blobs.items() if k in names}, f"{out}/r50_expected.pth")

    if d2_weights:
        weights = {k: v.numpy() for k, v in torch.load(d2_weights, weights_only=False).items()}
        for proto in (2, 4, 5):
            with open(f"{out}/zoo_p{proto}.pkl", "wb") as f:
                pickle.dump({"model": weights, "__author__": "Detectron2 Model Zoo"}, f,
                            protocol=proto)
        c2 = detectron1_names(weights)
        assert len(set(c2.values())) == len(c2)
        blobs = {c2[k]: detectron1_value(k, v, 80) for k, v in weights.items()}
        blobs.update({k + "_momentum": np.zeros_like(v) for k, v in list(blobs.items())[:5]})
        dump_py2({"blobs": blobs, "cfg": "MODEL:\n  TYPE: generalized_rcnn\n"},
                 f"{out}/detectron1.pkl")
    evil_pickles(out, marker)


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "make":
        make(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
    else:
        sys.exit(__doc__)
