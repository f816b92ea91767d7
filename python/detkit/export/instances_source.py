"""Python source of a TorchScript class standing for Instances with a fixed set of typed fields
(used by patch_instances): each field is an Optional attribute `_<name>` read and written
through a property of the field's name; has/len/to/[]/cat/get_fields as Instances."""
import torch

from ..structures.boxes import Boxes


def _annotation(field_type):
    """The name of a field type in the generated module (imported under it), e.g.
    "torch_Tensor"."""
    if not isinstance(field_type, type):
        raise TypeError(f"patch_instances: a field's type must be a class, got {field_type!r}")
    return f"{field_type.__module__}.{field_type.__name__}".replace(".", "_")


def _block(indent, text):
    pad = " " * indent
    return [pad + line if line else line for line in text.strip("\n").splitlines()]


def _init(cls_name, fields):
    args = "".join(f", {n}: Optional[{a}] = None" for n, a in fields)
    lines = [f"    def __init__(self, image_size: Tuple[int, int]{args}):",
             "        self.image_size = image_size",
             f"        self._field_names = {tuple(n for n, _ in fields)!r}"]
    lines += [f"        self._{n} = torch.jit.annotate(Optional[{a}], {n})" for n, a in fields]
    return lines


def _property(name, annotation):
    return _block(4, f'''
@property
def {name}(self) -> {annotation}:
    value = self._{name}
    assert value is not None, "field '{name}' is not set in this Instances"
    return value

@{name}.setter
def {name}(self, value: {annotation}) -> None:
    self._{name} = value
''')


def _for_each_set_field(fields, body):
    """Lines running `body` (format string with {n}, {a}) for each field that is not None."""
    lines = []
    for n, a in fields:
        lines += [f"        value_{n} = self._{n}", f"        if value_{n} is not None:"]
        lines += ["            " + line.format(n=n, a=a) for line in body]
    return lines


def _methods(cls_name, fields, movable):
    empty = f"{cls_name}(self.image_size" + ", None" * len(fields) + ")"
    lines = ["", "    def __len__(self) -> int:"]
    lines += _for_each_set_field(fields, ["return len(value_{n})"])
    lines += ['        raise NotImplementedError("Empty Instances does not support __len__!")',
              "", "    def has(self, name: str) -> bool:"]
    for n, _ in fields:
        lines += [f'        if name == "{n}":', f"            return self._{n} is not None"]
    lines += ["        return False", "",
              f'    def to(self, device: torch.device) -> "{cls_name}":', f"        out = {empty}"]
    lines += _for_each_set_field([f for f in fields if f[0] in movable],
                                 ["out._{n} = value_{n}.to(device)"])
    lines += ["        return out", "",
              f'    def __getitem__(self, item) -> "{cls_name}":', f"        out = {empty}"]
    lines += _for_each_set_field(fields, ["out._{n} = value_{n}[item]"])
    lines += ["        return out", "",
              f'    def cat(self, instances: List["{cls_name}"]) -> "{cls_name}":',
              f"        out = {empty}"]
    lines += _for_each_set_field(fields, [
        "parts: List[{a}] = [i.{n} for i in instances]",
        "if torch.jit.isinstance(value_{n}, torch.Tensor):",
        "    out._{n} = torch.cat(parts, dim=0)",
        "else:",
        "    out._{n} = value_{n}.cat(parts)"])
    lines += ["        return out"]
    return lines


def _get_fields(fields, kinds):
    """get_fields() as a Dict[str, Tensor]: tensors as they are, Boxes-like fields by their
    `.tensor`; other field types cannot be returned in a typed dict."""
    lines = ["", "    def get_fields(self) -> Dict[str, torch.Tensor]:",
             "        out: Dict[str, torch.Tensor] = {}"]
    for n, _ in fields:
        if kinds[n] is None:
            continue
        lines += [f"        value_{n} = self._{n}", f"        if value_{n} is not None:",
                  f'            out["{n}"] = value_{n}{kinds[n]}']
    return lines + ["        return out"]


def instances_module_source(cls_name, fields):
    """(module source) defining class `cls_name` for fields, a dict name -> type."""
    if not isinstance(fields, dict):
        raise TypeError(f"patch_instances: fields must be a dict name -> type, got "
                        f"{type(fields).__name__}")
    for name in fields:
        if not (isinstance(name, str) and name.isidentifier() and not name.startswith("_")):
            raise ValueError(f"patch_instances: field name {name!r} is not a public identifier")
    typed = [(n, _annotation(t)) for n, t in fields.items()]
    imports = sorted({f"from {t.__module__} import {t.__name__} as {_annotation(t)}"
                      for t in fields.values()})
    movable = {n for n, t in fields.items() if hasattr(t, "to")}
    kinds = {n: "" if t is torch.Tensor else (".tensor" if issubclass(t, Boxes) else None)
             for n, t in fields.items()}
    lines = ["from typing import Dict, List, Optional, Tuple"]
    lines += ["import torch"] + imports
    lines += ["", "", f"class {cls_name}:"] + _init(cls_name, typed)
    for n, a in typed:
        lines += [""] + _property(n, a)
    lines += _methods(cls_name, typed, movable) + _get_fields(typed, kinds)
    return "\n".join(lines) + "\n"
