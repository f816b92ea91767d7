"""detkit.utils.file_io.PathManager: Detectron2's PathManager (iopath's) for local paths, so code
written against it runs without iopath. Handlers for other prefixes can be registered (iopath's
PathHandler protocol: _get_supported_prefixes, _open, _get_local_path, _exists, ...); a URL
with no handler is an error naming it. detectron2://, http:// and https:// are read as
Detectron2's handlers read them: get_local_path and open give the cached copy, downloaded first
where absent by detkit's C++ (what `detkit train` does with a MODEL.WEIGHTS URL: the same cache,
lock and errors naming the URL)."""
import os
import shutil

__all__ = ["PathManager"]


class _DownloadedURLHandler:
    """detectron2://P (Detectron2's model zoo), http:// and https://: a local cached copy."""

    def _get_supported_prefixes(self):
        return ["detectron2://", "http://", "https://"]

    def _get_local_path(self, path, **kwargs):
        from .._C import local_weights_path
        return local_weights_path(path)

    def _open(self, path, mode="r", buffering=-1, **kwargs):
        if any(flag in mode for flag in "wax+"):
            raise ValueError(f"PathManager: '{path}' is a URL, opened for reading only "
                             f"(mode '{mode}')")
        return open(self._get_local_path(path), mode, buffering)


class _PathManager:
    def __init__(self):
        self._handlers = {}
        self.register_handler(_DownloadedURLHandler())

    def register_handler(self, handler, allow_override=False):
        for prefix in handler._get_supported_prefixes():
            if prefix in self._handlers and not allow_override:
                raise KeyError(f"PathManager: a handler for '{prefix}' is already registered")
            self._handlers[prefix] = handler

    def _handler(self, path):
        path = os.fspath(path)
        for prefix in sorted(self._handlers, key=len, reverse=True):
            if path.startswith(prefix):
                return self._handlers[prefix]
        if "://" in path:
            raise ValueError(f"PathManager: no handler for '{path}' (detkit reads local files; "
                             f"download it first, or register a handler)")
        return None

    def _call(self, method, path, *args, local, **kwargs):
        handler = self._handler(path)
        if handler is not None:
            return getattr(handler, "_" + method)(os.fspath(path), *args, **kwargs)
        return local(os.fspath(path), *args, **kwargs)

    def open(self, path, mode="r", buffering=-1, **kwargs):
        return self._call("open", path, mode, buffering, local=open, **kwargs)

    def get_local_path(self, path, **kwargs):
        return self._call("get_local_path", path, local=lambda p, **_: p, **kwargs)

    def exists(self, path, **kwargs):
        return self._call("exists", path, local=lambda p, **_: os.path.exists(p), **kwargs)

    def isfile(self, path, **kwargs):
        return self._call("isfile", path, local=lambda p, **_: os.path.isfile(p), **kwargs)

    def isdir(self, path, **kwargs):
        return self._call("isdir", path, local=lambda p, **_: os.path.isdir(p), **kwargs)

    def ls(self, path, **kwargs):
        return self._call("ls", path, local=lambda p, **_: os.listdir(p), **kwargs)

    def mkdirs(self, path, **kwargs):
        return self._call("mkdirs", path, local=lambda p, **_: os.makedirs(p, exist_ok=True),
                          **kwargs)

    def rm(self, path, **kwargs):
        return self._call("rm", path, local=lambda p, **_: os.remove(p), **kwargs)

    def copy(self, src_path, dst_path, overwrite=False, **kwargs):
        if not overwrite and self.exists(dst_path):
            return False
        with self.open(src_path, "rb") as src, self.open(dst_path, "wb") as dst:
            shutil.copyfileobj(src, dst)
        return True


PathManager = _PathManager()
