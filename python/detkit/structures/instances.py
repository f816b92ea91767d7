import torch


class Instances:
    """Detectron2's Instances: per-instance fields (tensors, Boxes, ...) of one image, all of the
    same length, read as attributes (instances.pred_boxes, instances.scores)."""

    def __init__(self, image_size, **fields):
        # a tensor (a traced size) is kept as it is, so that traces follow it
        self._image_size = (image_size if isinstance(image_size, torch.Tensor)
                            else tuple(image_size))
        self._fields = {}
        for name, value in fields.items():
            self.set(name, value)

    @property
    def image_size(self):
        return self._image_size

    def __setattr__(self, name, value):
        if name.startswith("_"):
            super().__setattr__(name, value)
        else:
            self.set(name, value)

    def __getattr__(self, name):
        if name == "_fields" or name not in self._fields:
            raise AttributeError(f"Cannot find field '{name}' in the given Instances!")
        return self._fields[name]

    def set(self, name, value):
        if self._fields:
            length = len(self)
            if len(value) != length:
                raise ValueError(f"Adding a field '{name}' of length {len(value)} to an "
                                 f"Instances of length {length}")
        self._fields[name] = value

    def has(self, name):
        return name in self._fields

    def remove(self, name):
        del self._fields[name]

    def get(self, name):
        return self._fields[name]

    def get_fields(self):
        return self._fields

    def to(self, *args, **kwargs):
        out = Instances(self._image_size)
        for name, value in self._fields.items():
            out.set(name, value.to(*args, **kwargs) if hasattr(value, "to") else value)
        return out

    def __getitem__(self, item):
        if isinstance(item, int):
            if item >= len(self) or item < -len(self):
                raise IndexError("Instances index out of range!")
            item = slice(item, None, len(self)) if item >= 0 else slice(item + len(self), None,
                                                                         len(self))
        out = Instances(self._image_size)
        for name, value in self._fields.items():
            out.set(name, value[item])
        return out

    @staticmethod
    def cat(instance_lists):
        """One Instances of every field of the given ones (same image size, same fields), in
        order: tensors with torch.cat, lists joined, other types with their own `cat`."""
        if not isinstance(instance_lists, (list, tuple)) or not instance_lists:
            raise ValueError("Instances.cat takes a non-empty list of Instances")
        if len(instance_lists) == 1:
            return instance_lists[0]
        image_size = instance_lists[0].image_size
        for i in instance_lists[1:]:
            # a tensor size (as tracing gives) is not compared
            if not isinstance(image_size, torch.Tensor) and i.image_size != image_size:
                raise ValueError(f"Instances.cat: image sizes {i.image_size} and {image_size} "
                                 "differ")
        out = Instances(image_size)
        for name, first in instance_lists[0]._fields.items():
            values = [i.get(name) for i in instance_lists]
            if isinstance(first, torch.Tensor):
                joined = torch.cat(values, dim=0)
            elif isinstance(first, list):
                joined = [item for value in values for item in value]
            elif hasattr(type(first), "cat"):
                joined = type(first).cat(values)
            else:
                raise ValueError(f"Instances.cat: field '{name}' of type "
                                 f"{type(first).__name__} cannot be joined")
            out.set(name, joined)
        return out

    def __len__(self):
        for value in self._fields.values():
            # __len__ rather than len(): under tracing a Boxes' length stays a traced size
            return value.__len__()
        raise NotImplementedError("Empty Instances does not support __len__!")

    def __iter__(self):
        raise NotImplementedError("`Instances` object is not iterable!")

    def __repr__(self):
        fields = ", ".join(f"{k}: {v}" for k, v in self._fields.items())
        return (f"Instances(num_instances={len(self) if self._fields else 0}, "
                f"image_height={self._image_size[0]}, image_width={self._image_size[1]}, "
                f"fields=[{fields}])")
