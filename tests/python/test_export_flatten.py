"""detkit.export's flattening and dumps from Python: flatten_to_tuple / schema round trips of
nested lists, tuples, dicts, Instances, Boxes and ROIMasks checked value by value and field by
field against the objects given (leaves passed through as the same objects), schemas serialised
with dump_dataclass / instantiate through JSON; TracingAdapter traced on one input and run on
others equal to the eager model; Instances lengths traced under patch_builtin_len;
dump_torchscript_IR's files; utils.testing's sample COCO image against a PIL read of the same
file, its skip decorators. The errors.
Usage: test_export_flatten.py SHARED SOURCE DETKIT (SHARED: the shared data folder)."""
import json
import os
import sys
import tempfile
import unittest

import numpy as np
import torch
from PIL import Image
from torch import nn

from checks import check, finish, raises
from detkit.config.instantiate import dump_dataclass, instantiate
from detkit.export import STABLE_ONNX_OPSET_VERSION, TracingAdapter, dump_torchscript_IR
from detkit.export.flatten import (DictSchema, IdentitySchema, InstancesSchema, ListSchema,
                                   TensorWrapSchema, TupleSchema, flatten_to_tuple)
from detkit.export.torchscript_patch import patch_builtin_len
from detkit.structures import Boxes, Instances, ROIMasks
from detkit.utils import testing
from detkit.utils.torch_version_utils import min_torch_version

shared = sys.argv[1] if len(sys.argv) > 1 else None
torch.manual_seed(0)


def leaves(obj):
    """obj's leaves in flatten_to_tuple's order, by a hand walk (dict keys sorted, an
    Instances' fields by name then its size, a wrapper's tensor)."""
    if isinstance(obj, (list, tuple)):
        return [x for item in obj for x in leaves(item)]
    if isinstance(obj, dict):
        return [x for key in sorted(obj) for x in leaves(obj[key])]
    if isinstance(obj, Instances):
        return leaves(dict(obj.get_fields())) + [obj.image_size]
    if isinstance(obj, (Boxes, ROIMasks)):
        return [obj.tensor]
    return [obj]


def same(a, b):
    """a and b equal as nested values: same container types and keys, equal tensors (same
    dtype), Instances with equal sizes and fields, wrappers of the same class."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return sorted(a) == sorted(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, Instances):
        return (torch.equal(torch.as_tensor(a.image_size), torch.as_tensor(b.image_size))
                and same(dict(a.get_fields()), dict(b.get_fields())))
    if isinstance(a, (Boxes, ROIMasks)):
        return same(a.tensor, b.tensor)
    if isinstance(a, torch.Tensor):
        return a.dtype == b.dtype and torch.equal(a, b)
    return a == b


def through_json(schema):
    dumped = dump_dataclass(schema)
    return instantiate(json.loads(json.dumps(dumped)))


# nested lists, tuples and dicts: leaves in order, the same objects; rebuilt equal
tensor = torch.randn(3, 2)
nested = [3, ([5, tensor], {"name": [7, "text"], "b": None, "a": (2.5,)}), []]
values, schema = flatten_to_tuple(nested)
check(values == (3, 5, tensor, 2.5, None, 7, "text"), "nested leaves in sorted-key order")
check(all(x is y for x, y in zip(values, leaves(nested))), "leaves are the objects given")
check(same(schema(values), nested), "nested list / tuple / dict rebuilt equal")
check(type(schema) is ListSchema and type(schema.schemas[1]) is TupleSchema
      and type(schema.schemas[1].schemas[1]) is DictSchema
      and schema.schemas[1].schemas[1].keys == ["a", "b", "name"], "schema types, sorted keys")
check(schema.sizes == [1, 6, 0], f"flattened sizes of the items: {schema.sizes}")
check(flatten_to_tuple(schema(values))[1] == schema, "the rebuilt object has an equal schema")
check(flatten_to_tuple([3, (5,)])[1] != flatten_to_tuple([3, [5]])[1],
      "a tuple and a list have different schemas")
check(through_json(schema) == schema, "schema through dump_dataclass / JSON / instantiate")
other = tuple(torch.full((1,), float(i)) for i in range(len(values)))
rebuilt = schema(other)
check(rebuilt[1][1]["name"][1] is other[6] and rebuilt[1][0][1] is other[2],
      "the schema places new values where the old ones were")
check(flatten_to_tuple("abc") == (("abc",), IdentitySchema()), "a string is one leaf")

# Instances with Boxes, ROIMasks and a tensor field; tuple and tensor image sizes
boxes = Boxes(torch.rand(4, 4) * 50)
masks = ROIMasks(torch.rand(4, 7, 7))
scores = torch.rand(4)
instances = Instances((30, 40), pred_boxes=boxes, scores=scores, pred_masks=masks)
values, schema = flatten_to_tuple({"instances": instances, "n": torch.tensor(4)})
check(values[0] is boxes.tensor and values[1] is masks.tensor and values[2] is scores,
      "Instances' fields flattened by name, wrappers by their tensor (the same objects)")
check(torch.equal(values[3], torch.tensor([30, 40])) and values[3].dtype == torch.int64,
      "a tuple image size flattened as a tensor")
inner = schema.schemas[0]
check(type(inner) is InstancesSchema and inner.keys == ["pred_boxes", "pred_masks", "scores"]
      and [type(s) for s in inner.schemas] == [TensorWrapSchema, TensorWrapSchema,
                                               IdentitySchema], "InstancesSchema of the fields")
back = schema(values)["instances"]
check(type(back.pred_boxes) is Boxes and type(back.pred_masks) is ROIMasks,
      "wrappers rebuilt as their classes")
for name in ("pred_boxes", "pred_masks", "scores"):
    check(same(back.get(name), instances.get(name)), f"field {name} rebuilt equal")
check(torch.equal(torch.as_tensor(back.image_size), torch.tensor([30, 40])),
      "image size rebuilt (as a tensor)")
check(through_json(schema) == schema, "Instances schema through JSON")
size = torch.tensor([5, 8])
traced_like = Instances(size, pred_boxes=Boxes(torch.ones((1, 4))), pred_masks=torch.tensor([3]))
check(traced_like.image_size is size, "Instances keeps a tensor image size as it is")
values, schema = flatten_to_tuple(traced_like)
check(values[-1] is size, "a tensor image size flattened as the same object")
testing.assert_instances_allclose(schema(values), traced_like, rtol=0.0, size_as_tensor=True)
check(same(Instances.cat([traced_like, traced_like]).pred_masks, torch.tensor([3, 3])),
      "Instances.cat with tensor image sizes")
empty_values, empty_schema = flatten_to_tuple(Instances((2, 3)))
empty_back = empty_schema(empty_values)
check(len(empty_values) == 1 and not empty_back.get_fields()
      and torch.equal(empty_back.image_size, torch.tensor([2, 3])),
      "an Instances without fields round trips")

# errors
raises(KeyError, lambda: flatten_to_tuple({1: torch.ones(1)}), "str keys")
values, schema = flatten_to_tuple([1, [2, 3]])
raises(ValueError, lambda: schema(values[:2]), "expects 3 flattened values")
raises(ValueError, lambda: IdentitySchema()((1, 2)), "one value")
raises(ValueError, lambda: flatten_to_tuple(boxes)[1](()), "one tensor")
raises(ValueError, lambda: ListSchema([IdentitySchema()], [1, 1])((1, 2)), "sizes")


# TracingAdapter: dict input, Instances + dict output; traced on one input, run on others
class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 3)

    def forward(self, batch):
        features = self.linear(batch["boxes"]) * batch["scale"]
        result = Instances(batch["size"], pred_boxes=Boxes(batch["boxes"] + features[:, :1]),
                           scores=features.sigmoid().max(dim=1).values)
        return {"instances": result, "total": [features.sum()]}


def detector_input(n):
    return {"boxes": torch.rand(n, 4) * 20, "scale": torch.rand(1), "size": torch.tensor([9, 7])}


model = Detector().eval()
adapter = TracingAdapter(model, detector_input(6))
check(adapter.inputs_schema is not None and len(adapter.flattened_inputs) == 3,
      "adapter flattens its inputs to three tensors")
traced = torch.jit.trace(adapter, adapter.flattened_inputs)
worst = 0.0
for n in (6, 2, 11):
    batch = detector_input(n)
    eager = model(batch)
    out = adapter.outputs_schema(traced(*flatten_to_tuple((batch,))[0]))
    testing.assert_instances_allclose(out["instances"], eager["instances"], size_as_tensor=True)
    worst = max(worst, (out["instances"].scores - eager["instances"].scores).abs().max().item(),
                (out["total"][0] - eager["total"][0]).abs().item())
print(f"traced adapter vs eager model on 6, 2 and 11 boxes: largest difference {worst:.2e}")
check(worst < 1e-5, "traced TracingAdapter equals the eager model on new inputs")
check(isinstance(adapter.outputs_schema, DictSchema), "outputs_schema known after tracing")
wrapped = adapter._create_wrapper(traced)(detector_input(3))
check(isinstance(wrapped["instances"], Instances) and len(wrapped["instances"]) == 3,
      "_create_wrapper calls the trace as the original model")


class Passthrough(nn.Module):
    def forward(self, x, number):
        return x * number


data = (torch.tensor([5.0, 8.0]), 3)
raises(ValueError, lambda: TracingAdapter(Passthrough(), data), "must only contain tensors")
loose = TracingAdapter(Passthrough(), data, allow_non_tensor=True)
check(loose.inputs_schema is None and loose.flattened_inputs == (data[0],),
      "allow_non_tensor keeps the tensors of the inputs only")
check(torch.equal(loose(*loose.flattened_inputs)[0], data[0] * 3),
      "allow_non_tensor adapter runs on its own inputs")
raises(ValueError, lambda: loose(data[0].clone()), "cannot generalize")


class WithNumber(nn.Module):
    def forward(self, x):
        return x + 1, 7


raises(ValueError, lambda: TracingAdapter(WithNumber(), torch.ones(2))(torch.ones(2)),
       "cannot flatten to tensors")
keep = TracingAdapter(WithNumber(), torch.ones(2), allow_non_tensor=True)
out = keep(*keep.flattened_inputs)
check(len(out) == 1 and torch.equal(out[0], torch.full((2,), 2.0)) and keep.outputs_schema is None,
      "allow_non_tensor drops non-tensor outputs")


class Shifting(nn.Module):
    def forward(self, x):
        return [x] if x.shape[0] == 2 else (x,)


shifting = TracingAdapter(Shifting(), torch.ones(2))
shifting(torch.ones(2))
raises(ValueError, lambda: shifting(torch.ones(3)), "same structure")


# patch_builtin_len: len() of an Instances stays a traced size (Instances.__len__ -> Boxes')
def split_per_image(features, boxes1, boxes2):
    images = [Instances((50, 50), pred_boxes=Boxes(boxes1)),
              Instances((50, 50), pred_boxes=Boxes(boxes2))]
    return features.split([len(i) for i in images])


def split_inputs(n1, n2):
    return torch.randn(n1 + n2, 3), testing.random_boxes(n1), testing.random_boxes(n2)


with torch.no_grad(), patch_builtin_len([__name__]):
    traced_split = torch.jit.trace(split_per_image, split_inputs(5, 3), check_trace=False)
    inputs = split_inputs(2, 6)
    parts, expected = traced_split(*inputs), split_per_image(*inputs)
check([p.shape[0] for p in parts] == [2, 6] and all(torch.equal(p, e) for p, e in
                                                    zip(parts, expected)),
      "traced per-image split follows the new Instances lengths under patch_builtin_len")


# dump_torchscript_IR: a traced module (four files), a traced function (three)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.head = nn.Sequential(nn.ReLU(), nn.Conv2d(4, 2, 1))

    def forward(self, x):
        return self.head(self.conv(x))


net = torch.jit.trace(Net().eval(), (torch.rand(1, 3, 8, 8),))
with tempfile.TemporaryDirectory(prefix="detkit_dump") as d:
    out_dir = os.path.join(d, "new", "dir")
    dump_torchscript_IR(net, out_dir)
    names = sorted(os.listdir(out_dir))
    check(names == ["model.txt", "model_ts_IR.txt", "model_ts_IR_inlined.txt",
                    "model_ts_code.txt"], f"module dump files {names}")
    read = {n: open(os.path.join(out_dir, n)).read() for n in names}
    check(all(read.values()), "every dump file is non-empty")
    check(read["model.txt"] == str(net), "model.txt is the printed module")
    check(all(f"Code for {p}" in read["model_ts_code.txt"]
              for p in ("root model", ".conv", ".head", ".head.0", ".head.1")),
          "code dumped for the module and each submodule")
    check("aten::_convolution" in read["model_ts_IR_inlined.txt"]
          and "aten::relu" in read["model_ts_IR_inlined.txt"], "inlined graph holds the ops")
    check("module __torch__" in read["model_ts_IR.txt"], "IR lists the modules' graphs")


@torch.jit.script
def add(x, y):
    return x + y


def combined(x, y):
    return x * y + add(x, y)


function = torch.jit.trace(combined, (torch.rand(3), torch.rand(3)))
with tempfile.TemporaryDirectory(prefix="detkit_dump") as d:
    dump_torchscript_IR(function, d)
    names = sorted(os.listdir(d))
    check(names == ["model_ts_IR.txt", "model_ts_IR_inlined.txt", "model_ts_code.txt"],
          f"function dump files {names}")
    check(open(os.path.join(d, "model_ts_code.txt")).read() == function.code,
          "a function's code dumped")
    check("aten::add" in open(os.path.join(d, "model_ts_IR_inlined.txt")).read(),
          "the scripted call inlined")
    raises(TypeError, lambda: dump_torchscript_IR(Net(), d), "traced or scripted")

# utils.testing: the sample COCO image, the skip decorators, versions
check(STABLE_ONNX_OPSET_VERSION == 11, "STABLE_ONNX_OPSET_VERSION")
check(min_torch_version("1.0") and not min_torch_version("999.0"), "min_torch_version")
with tempfile.TemporaryDirectory(prefix="detkit_nodata") as d:
    saved = {k: os.environ.get(k) for k in ("DETECTRON2_DATASETS", "DETKIT_SHARED_DIR")}
    os.environ["DETECTRON2_DATASETS"] = d
    os.environ["DETKIT_SHARED_DIR"] = os.path.join(d, "absent")
    raises(FileNotFoundError, testing.get_sample_coco_image, "does not download")
    if shared and os.path.isdir(os.path.join(shared, "data", "coco_tiny")):
        os.environ["DETKIT_SHARED_DIR"] = shared
        image = testing.get_sample_coco_image()
        array = testing.get_sample_coco_image(tensor=False)
        with open(os.path.join(shared, "data/coco_tiny/annotations/instances_val2017.json")) as f:
            first = min(json.load(f)["images"], key=lambda i: i["id"])
        path = os.path.join(shared, "data/coco_tiny/val2017", first["file_name"])
        rgb = np.asarray(Image.open(path).convert("RGB")).astype(np.int16)
        difference = np.abs(array.astype(np.int16) - rgb[:, :, ::-1])
        print(f"sample COCO image vs PIL's BGR read of {first['file_name']}: mean difference "
              f"{difference.mean():.3f}, largest {difference.max()}")
        check(image.dtype == torch.uint8 and tuple(image.shape) == (3,) + rgb.shape[:2],
              "sample image as a (3, H, W) uint8 tensor")
        check(np.array_equal(image.permute(1, 2, 0).numpy(), array), "tensor and array agree")
        check(difference.mean() < 1.0, "sample image is the first COCO image, in BGR")
    else:
        print("skipped the sample COCO image: shared data/coco_tiny is absent")
    for key, value in saved.items():
        os.environ.pop(key, None)
        if value is not None:
            os.environ[key] = value


class Opsets(unittest.TestCase):
    opset_version = 11

    @testing.skipIfUnsupportedMinOpsetVersion(16)
    def test_needs_16(self):
        pass

    @testing.skipIfUnsupportedMinOpsetVersion(9)
    def test_needs_9(self):
        pass

    @testing.skipIfUnsupportedMinTorchVersion("999.0")
    def test_future_torch(self):
        pass


result = unittest.TextTestRunner(stream=open(os.devnull, "w")).run(
    unittest.defaultTestLoader.loadTestsFromTestCase(Opsets))
skipped = sorted(test.id().rsplit(".", 1)[1] for test, _ in result.skipped)
check(skipped == ["test_future_torch", "test_needs_16"] and result.wasSuccessful(),
      f"skip decorators skip {skipped}")
try:
    from onnx import TensorProto, helper
except ImportError:
    print("skipped has_dynamic_axes: onnx is absent")
else:
    def onnx_model(dims):
        value = helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)
        graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g", [value],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)])
        return helper.make_model(graph)
    check(testing.has_dynamic_axes(onnx_model(["batch", "width"])), "named axes are dynamic")
    check(not testing.has_dynamic_axes(onnx_model(["batch", "3"])), "a numeric axis name is not")
finish()
