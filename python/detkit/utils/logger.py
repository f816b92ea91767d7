"""Detectron2's detectron2.utils.logger: setup_logger (plain logging, no termcolor) and the
rate-limited helpers log_first_n, log_every_n and log_every_n_seconds."""
import atexit
import functools
import logging
import os
import sys
import time
from collections import Counter

__all__ = ["log_every_n", "log_every_n_seconds", "log_first_n", "setup_logger"]

_FORMAT = "[%(asctime)s] %(name)s %(levelname)s: %(message)s"
_DATE_FORMAT = "%m/%d %H:%M:%S"


@functools.lru_cache()  # the same call twice adds no second set of handlers
def setup_logger(output=None, distributed_rank=0, *, color=True, name="detkit",
                 abbrev_name=None, enable_propagation=False, configure_stdout=True):
    """Logger `name` at DEBUG: rank 0 logs to stdout (configure_stdout); every rank to a file:
    output itself when it ends in .txt or .log, else output/log.txt (rank r > 0: suffix .rank{r}).
    abbrev_name: the name shown on stdout ("d2" style); color is accepted and ignored."""
    logger = logging.getLogger(name)
    logger.setLevel(logging.DEBUG)
    logger.propagate = enable_propagation
    if abbrev_name is None:
        abbrev_name = "d2" if name == "detectron2" else name
    if configure_stdout and distributed_rank == 0:
        handler = logging.StreamHandler(stream=sys.stdout)
        handler.setLevel(logging.DEBUG)
        shown = _FORMAT.replace("%(name)s", abbrev_name) if abbrev_name != name else _FORMAT
        handler.setFormatter(logging.Formatter(shown, datefmt=_DATE_FORMAT))
        logger.addHandler(handler)
    if output is not None:
        filename = output if output.endswith((".txt", ".log")) else \
            os.path.join(output, "log.txt")
        if distributed_rank > 0:
            filename = filename + f".rank{distributed_rank}"
        os.makedirs(os.path.dirname(filename) or ".", exist_ok=True)
        handler = logging.StreamHandler(_cached_log_stream(filename))
        handler.setLevel(logging.DEBUG)
        handler.setFormatter(logging.Formatter(_FORMAT, datefmt=_DATE_FORMAT))
        logger.addHandler(handler)
    return logger


@functools.lru_cache(maxsize=None)  # one open stream per file, shared by the loggers
def _cached_log_stream(filename):
    """Line-buffered, so a crash loses no finished line; closed at exit."""
    stream = open(filename, "a", buffering=1)
    atexit.register(stream.close)
    return stream


def _find_caller():
    """(module name, (file, line, function)) of the first frame outside this file."""
    frame = sys._getframe(2)
    here = os.path.normcase(__file__)
    while frame is not None:
        code = frame.f_code
        if os.path.normcase(code.co_filename) != here:
            module = frame.f_globals.get("__name__", "__main__")
            if module == "__main__":
                module = "detkit"
            return module, (code.co_filename, frame.f_lineno, code.co_name)
        frame = frame.f_back
    return "detkit", ("", 0, "")


_LOG_COUNTER = Counter()
_LOG_TIMER = {}


def log_first_n(lvl, msg, n=1, *, name=None, key="caller"):
    """Logs msg the first n times for its key: "caller" (the calling line), "message" or both
    (a tuple or a string of them)."""
    if isinstance(key, str):
        key = (key,)
    unknown = set(key) - {"caller", "message"}
    if not key or unknown:
        raise ValueError(f"log_first_n: key must be 'caller' and/or 'message', got {key}")
    module, caller = _find_caller()
    hash_key = ()
    if "caller" in key:
        hash_key = hash_key + caller
    if "message" in key:
        hash_key = hash_key + (msg,)
    _LOG_COUNTER[hash_key] += 1
    if _LOG_COUNTER[hash_key] <= n:
        logging.getLogger(name or module).log(lvl, msg)


def log_every_n(lvl, msg, n=1, *, name=None):
    """Logs msg the 1st, (n+1)th, (2n+1)th ... time this line calls it."""
    module, caller = _find_caller()
    _LOG_COUNTER[caller] += 1
    if n == 1 or _LOG_COUNTER[caller] % n == 1:
        logging.getLogger(name or module).log(lvl, msg)


def log_every_n_seconds(lvl, msg, n=1, *, name=None):
    """Logs msg from this line at most once every n seconds."""
    module, caller = _find_caller()
    last = _LOG_TIMER.get(caller)
    now = time.time()
    if last is None or now - last >= n:
        logging.getLogger(name or module).log(lvl, msg)
        _LOG_TIMER[caller] = now
