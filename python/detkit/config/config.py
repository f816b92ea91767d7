"""CfgNode: attribute access (cfg.MODEL.WEIGHTS, cfg.SOLVER.BASE_LR = 0.01) to detkit's C++
config tree. Every read, write and merge goes to that tree, so a value of another type, a write to
a frozen config or a file's key the config lacks fail with the CLI's message (detkit.Error;
reading an unknown key is an AttributeError with that message, as getattr expects). Setting a new
key on an unfrozen config adds it, as yacs does."""
from .._C import CfgTree, Error
from .._C import get_cfg as _defaults


def _flatten(nested, prefix=""):
    """{"SOLVER": {"BASE_LR": 0.1}} -> [("SOLVER.BASE_LR", 0.1)]."""
    items = []
    for name, value in nested.items():
        if isinstance(value, dict):
            items += _flatten(value, f"{prefix}{name}.")
        else:
            items.append((prefix + name, value))
    return items


def _empty_sections(tree):
    """Sections added empty from Python (cfg.X = CN()) until keys are set in them (detkit's tree
    holds sections through their leaves only): kept on the tree object itself."""
    try:
        return tree._empty_sections
    except AttributeError:
        tree._empty_sections = set()
        return tree._empty_sections


def _distance(a, b):
    """Levenshtein distance."""
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (ca != cb))
    return row[-1]


_DEFAULT_KEYS = []


def _near_miss(tree, key):
    """Whether `key` is a typo of one of Detectron2's (detkit's default) keys of its section: one
    edit from it (two for names of ten letters or more). Keys added from Python are not guarded:
    a project's ARG1 and ARG2 are both its own."""
    if not _DEFAULT_KEYS:
        _DEFAULT_KEYS.extend(_defaults().leaf_keys())
    section, _, name = key.rpartition(".")
    prefix = section + "." if section else ""
    siblings = {k[len(prefix):].split(".")[0] for k in _DEFAULT_KEYS if k.startswith(prefix)}
    allowed = 2 if len(name) >= 10 else 1
    return any(_distance(name, sibling) <= allowed for sibling in siblings)


def _check_new(tree, key):
    """A key the tree lacks may be added unless the config is frozen or the key is a near miss
    of an existing one (a typo: the tree's "did you mean" error)."""
    if _near_miss(tree, key):
        tree.get(key)  # raises the tree's "unknown key (did you mean ...)" error
    if tree.is_frozen():
        raise Error(f"config key '{key}': cannot add a key to a frozen config (defrost() first)")


def _set_or_add(tree, key, value):
    """Sets `key`; a key the config lacks is added, as yacs adds one to an unfrozen config
    (Detectron2's projects extend the config so), its value its default and its type. A near
    miss of an existing key stays an error (a typo, not a new key), and merging a file or a list
    still refuses keys the config lacks, as yacs does."""
    if tree.kind(key) is not None:
        tree.set(key, value)  # a wrong type: the tree's error
        return
    if _near_miss(tree, key):
        tree.set(key, value)  # the tree's "unknown key (did you mean ...)" error
    _check_new(tree, key)
    tree.define(key, value)


class CfgNode:
    """One section of a config tree (the whole tree at the root). Sections are views: a value set
    through cfg.MODEL is set in cfg.

    CfgNode({"SOLVER": {"BASE_LR": 0.1}}): Detectron2's config from a dict, for
    merge_from_other_cfg. A Detectron2 CfgNode(dict) holds only the dict's keys; here the others
    read as detkit's defaults, and merging it sets only the dict's keys."""

    def __init__(self, tree=None, prefix=""):
        explicit = None
        if isinstance(tree, dict):
            explicit = _flatten(tree)
            tree = _defaults()
            for key, value in explicit:
                _set_or_add(tree, key, value)
            explicit = [key for key, _ in explicit]
        object.__setattr__(self, "_tree", tree if tree is not None else _defaults())
        object.__setattr__(self, "_prefix", prefix)
        object.__setattr__(self, "_explicit", explicit)

    def _key(self, name):
        return self._prefix + name

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        key = self._key(name)
        kind = self._tree.kind(key)
        if kind == "section" or (kind is None and key in _empty_sections(self._tree)):
            return CfgNode(self._tree, key + ".")
        try:
            return self._tree.get(key)  # a leaf; an unknown key gets the tree's message
        except Error as e:
            raise AttributeError(str(e)) from None

    def __setattr__(self, name, value):
        key = self._key(name)
        if self._tree.kind(key) is None and key not in _empty_sections(self._tree):
            self._add(key, value)
            return
        if isinstance(value, (CfgNode, dict)):
            raise Error(f"config key '{key}': sections cannot be replaced; set its keys")
        self._tree.set(key, value)

    def _add(self, key, value):
        """A new key or section (see _set_or_add): cfg.MODEL.MY_HEAD = CN() adds an empty
        section, CN({...}) or a dict its keys."""
        if isinstance(value, dict):
            value = CfgNode(value)
        if not isinstance(value, CfgNode):
            _set_or_add(self._tree, key, value)
            return
        _check_new(self._tree, key)
        if not value._explicit:  # CN(): an empty section, its keys to come
            _empty_sections(self._tree).add(key)
            return
        for sub in value._explicit:
            _set_or_add(self._tree, f"{key}.{sub}", value._tree.get(sub))

    def __getitem__(self, name):
        try:
            return getattr(self, name)
        except AttributeError as e:
            raise KeyError(str(e)) from None

    def __setitem__(self, name, value):
        setattr(self, name, value)

    def __contains__(self, name):
        key = self._key(name)
        return self._tree.kind(key) is not None or key in _empty_sections(self._tree)

    def keys(self):
        """The names directly under this section."""
        names = []
        for key in self._tree.leaf_keys():
            if key.startswith(self._prefix):
                name = key[len(self._prefix):].split(".")[0]
                if name not in names:
                    names.append(name)
        return names

    def __iter__(self):
        return iter(self.keys())

    def get(self, name, default=None):
        return getattr(self, name) if name in self else default

    def merge_from_file(self, cfg_filename, allow_unsafe=False):
        """A Detectron2 YAML file (with its _BASE_ chain) over this config."""
        self._root_only("merge_from_file")
        self._tree.merge_from_file(str(cfg_filename))

    def merge_from_list(self, cfg_list):
        """["KEY", value, ...]: strings are read as Python literals as on the command line
        ("0.02", "(640, 672)", "True"); other values are set as they are."""
        self._root_only("merge_from_list")
        if len(cfg_list) % 2:
            raise Error(f"merge_from_list needs KEY VALUE pairs, got {len(cfg_list)} items")
        for key, value in zip(cfg_list[0::2], cfg_list[1::2]):
            if isinstance(value, str):
                self._tree.merge_from_list([key, value])
            else:
                self._tree.set(key, value)

    def merge_from_other_cfg(self, cfg_other):
        """Sets here every key cfg_other holds: a CfgNode (all its keys; one made from a dict:
        that dict's keys) or a nested dict of KEY: value. Each key as merge_from_list sets it:
        an unknown key or a value of another type is the tree's error, naming it."""
        self._root_only("merge_from_other_cfg")
        if isinstance(cfg_other, dict):
            items = _flatten(cfg_other)
        elif isinstance(cfg_other, CfgNode):
            cfg_other._root_only("merge_from_other_cfg (of its argument)")
            keys = cfg_other._explicit
            if keys is None:
                keys = cfg_other._tree.leaf_keys()
            items = [(key, cfg_other._tree.get(key)) for key in keys]
        else:
            raise TypeError(f"merge_from_other_cfg takes a CfgNode or a dict, got "
                            f"{type(cfg_other).__name__}")
        for key, value in items:
            self._tree.set(key, value)

    def freeze(self):
        self._tree.freeze()

    def defrost(self):
        self._tree.defrost()

    def is_frozen(self):
        return self._tree.is_frozen()

    def clone(self):
        self._root_only("clone")
        copy = CfgNode(self._tree.clone())
        object.__setattr__(copy, "_explicit", self._explicit)
        _empty_sections(copy._tree).update(_empty_sections(self._tree))
        return copy

    def dump(self, **kwargs):
        """The YAML text Detectron2's cfg.dump() writes (keys sorted); the whole tree."""
        return self._tree.dump()

    def __eq__(self, other):
        return isinstance(other, CfgNode) and self._prefix == other._prefix and \
            self._tree == other._tree

    def __repr__(self):
        return f"CfgNode({self._prefix.rstrip('.') or 'root'})"

    def __str__(self):
        return self.dump()

    def _root_only(self, what):
        if self._prefix:
            raise Error(f"{what} works on the whole config, not on section {self._prefix[:-1]}")


def get_cfg():
    """A fresh copy of the defaults (Detectron2's, with detkit's own keys)."""
    return CfgNode()
