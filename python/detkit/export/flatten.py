"""Detectron2's detectron2.export.flatten: flatten_to_tuple turns a nested object (lists, tuples,
str-keyed dicts, Instances, Boxes, ROIMasks, leaves) into a flat tuple and a schema, a plain
dataclass that rebuilds the object from such a tuple; TracingAdapter makes a model with rich
inputs and outputs traceable by torch.jit.trace through them."""
import collections.abc
from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple

import torch
from torch import nn

from ..structures import Boxes, Instances, ROIMasks
from ..utils.registry import _convert_target_to_string, locate
from .torchscript_patch import patch_builtin_len

__all__ = ["DictSchema", "IdentitySchema", "InstancesSchema", "ListSchema", "Schema",
           "TensorWrapSchema", "TracingAdapter", "TupleSchema", "flatten_to_tuple"]


def _join(flat_parts):
    """(one tuple of every part, the length of each part)."""
    joined, sizes = (), []
    for part in flat_parts:
        if not isinstance(part, tuple):
            raise TypeError(f"a flattened part must be a tuple, got {type(part).__name__}")
        joined += part
        sizes.append(len(part))
    return joined, sizes


def _cut(values, sizes):
    """values cut into consecutive pieces of the given sizes (which must add up to all)."""
    if len(values) != sum(sizes):
        raise ValueError(f"the schema expects {sum(sizes)} flattened values, got {len(values)}")
    pieces, start = [], 0
    for size in sizes:
        pieces.append(values[start:start + size])
        start += size
    return pieces


@dataclass
class Schema:
    """How an object was flattened: `Schema.flatten(obj)` gives (flat tuple, schema) and
    `schema(flat tuple)` rebuilds the object. Subclasses say how for one kind of object."""

    @classmethod
    def flatten(cls, obj):
        raise NotImplementedError(f"{cls.__name__} does not define flatten()")

    def __call__(self, values):
        raise NotImplementedError(f"{type(self).__name__} does not define __call__()")


@dataclass
class IdentitySchema(Schema):
    """A leaf (tensor, number, string, None ...): one flat value, itself."""

    @classmethod
    def flatten(cls, obj):
        return (obj,), cls()

    def __call__(self, values):
        if len(values) != 1:
            raise ValueError(f"IdentitySchema rebuilds one value, got {len(values)}")
        return values[0]


@dataclass
class ListSchema(Schema):
    """A list: each item's schema and the number of flat values it took."""

    schemas: List[Schema]
    sizes: List[int]

    @classmethod
    def flatten(cls, obj):
        flat_items = [flatten_to_tuple(item) for item in obj]
        values, sizes = _join([values for values, _ in flat_items])
        return values, cls([schema for _, schema in flat_items], sizes)

    def __call__(self, values):
        if len(self.sizes) != len(self.schemas):
            raise ValueError(f"{type(self).__name__} has {len(self.schemas)} schemas but "
                             f"{len(self.sizes)} sizes")
        return [schema(piece) for schema, piece in zip(self.schemas, _cut(values, self.sizes))]


@dataclass
class TupleSchema(ListSchema):
    """A tuple (a namedtuple is rebuilt as a plain tuple)."""

    def __call__(self, values):
        return tuple(super().__call__(values))


@dataclass
class DictSchema(ListSchema):
    """A mapping with str keys, flattened in sorted key order; rebuilt as a dict."""

    keys: List[str]

    @classmethod
    def flatten(cls, obj):
        for key in obj.keys():
            if not isinstance(key, str):
                raise KeyError(f"flatten_to_tuple flattens dicts with str keys only, got key "
                               f"{key!r}")
        keys = sorted(obj.keys())
        values, items = ListSchema.flatten([obj[key] for key in keys])
        return values, cls(items.schemas, items.sizes, keys)

    def __call__(self, values):
        if len(self.keys) != len(self.schemas):
            raise ValueError(f"{type(self).__name__} has {len(self.schemas)} schemas but "
                             f"{len(self.keys)} keys")
        return dict(zip(self.keys, super().__call__(values)))


@dataclass
class InstancesSchema(DictSchema):
    """An Instances: its fields as a DictSchema, then its image size as one last flat value (a
    tensor: the given one, or one made from a tuple)."""

    @classmethod
    def flatten(cls, obj):
        values, schema = super().flatten(obj.get_fields())
        image_size = obj.image_size
        if not isinstance(image_size, torch.Tensor):
            image_size = torch.tensor(image_size)
        return values + (image_size,), schema

    def __call__(self, values):
        if len(values) < 1:
            raise ValueError("InstancesSchema needs the image size as its last flat value")
        fields = super().__call__(values[:-1])
        return Instances(values[-1], **fields)


@dataclass
class TensorWrapSchema(Schema):
    """A structure that wraps one tensor as `.tensor` and is built from it (Boxes, ROIMasks):
    its class by dotted name, and one flat value, the tensor."""

    class_name: str

    @classmethod
    def flatten(cls, obj):
        return (obj.tensor,), cls(_convert_target_to_string(type(obj)))

    def __call__(self, values):
        if len(values) != 1:
            raise ValueError(f"TensorWrapSchema rebuilds one tensor, got {len(values)} values")
        return locate(self.class_name)(values[0])


# (types, schema) tried in order; anything else is a leaf
_SCHEMA_OF_TYPE = (
    ((str, bytes), IdentitySchema),
    (list, ListSchema),
    (tuple, TupleSchema),
    (collections.abc.Mapping, DictSchema),
    (Instances, InstancesSchema),
    ((Boxes, ROIMasks), TensorWrapSchema),
)


def flatten_to_tuple(obj):
    """(flat tuple of obj's leaves, schema) with schema(flat tuple) rebuilding obj; the schema
    is a dataclass (dump_dataclass / instantiate serialise it)."""
    for types, schema_class in _SCHEMA_OF_TYPE:
        if isinstance(obj, types):
            return schema_class.flatten(obj)
    return IdentitySchema.flatten(obj)


class TracingAdapter(nn.Module):
    """model called on `inputs` (one argument or a tuple of them) through a forward that takes
    the flattened inputs and returns the flattened outputs, so torch.jit.trace can trace it.
    `inputs_schema` rebuilds the inputs from flat tensors, `outputs_schema` (known after a first
    forward) the outputs. allow_non_tensor drops non-tensor inputs / outputs instead of failing;
    the schemas are then None and the adapter runs only on its own `flattened_inputs`."""

    flattened_inputs: Tuple[torch.Tensor, ...] = None
    inputs_schema: Optional[Schema] = None
    outputs_schema: Optional[Schema] = None

    def __init__(self, model: nn.Module, inputs, inference_func: Optional[Callable] = None,
                 allow_non_tensor: bool = False):
        super().__init__()
        if isinstance(model, (nn.parallel.DistributedDataParallel, nn.DataParallel)):
            model = model.module
        self.model = model
        self.inputs = inputs if isinstance(inputs, tuple) else (inputs,)
        self.allow_non_tensor = allow_non_tensor
        self.inference_func = inference_func if inference_func is not None else _call_model
        self.flattened_inputs, self.inputs_schema = flatten_to_tuple(self.inputs)
        non_tensors = [x for x in self.flattened_inputs if not isinstance(x, torch.Tensor)]
        if not non_tensors:
            return
        if not allow_non_tensor:
            raise ValueError(f"Inputs for tracing must only contain tensors. Got a "
                             f"{type(non_tensors[0])} instead.")
        self.flattened_inputs = tuple(x for x in self.flattened_inputs
                                      if isinstance(x, torch.Tensor))
        self.inputs_schema = None

    def _rebuilt_inputs(self, args):
        if self.inputs_schema is not None:
            return self.inputs_schema(args)
        same = len(args) == len(self.flattened_inputs) and all(
            given is own for given, own in zip(args, self.flattened_inputs))
        if not same:
            raise ValueError("TracingAdapter has no inputs_schema (its inputs held non-tensors),"
                             " so it cannot generalize to other inputs: call or trace it with "
                             "its own `.flattened_inputs`.")
        return self.inputs

    def forward(self, *args: torch.Tensor):
        with torch.no_grad(), patch_builtin_len():
            outputs = self.inference_func(self.model, *self._rebuilt_inputs(args))
            flat_outputs, schema = flatten_to_tuple(outputs)
            tensors = tuple(x for x in flat_outputs if isinstance(x, torch.Tensor))
            if len(tensors) < len(flat_outputs):
                if not self.allow_non_tensor:
                    raise ValueError("Model cannot be traced because some model outputs cannot "
                                     "flatten to tensors.")
                self.outputs_schema = None
                return tensors
            if self.outputs_schema is None:
                self.outputs_schema = schema
            elif self.outputs_schema != schema:
                raise ValueError("Model should always return outputs with the same structure so"
                                 " it can be traced!")
            return flat_outputs

    def _create_wrapper(self, traced_model):
        """A function called as the original model (rich inputs and outputs) that runs
        traced_model, a trace of this adapter."""
        def run(*args):
            flat_inputs, _ = flatten_to_tuple(args)
            return self.outputs_schema(traced_model(*flat_inputs))

        return run


def _call_model(model, *inputs):
    return model(*inputs)
