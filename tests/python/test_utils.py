"""detkit.utils' small modules: collect_env_info (the versions and paths it reports are the ones
imported); PathManager's URL handler, against a server on 127.0.0.1 (a file downloaded once into
$FVCORE_CACHE and read back byte for byte, a detectron2:// path through $DETKIT_MODEL_ZOO_URL,
the errors). Usage: test_utils.py [SHARED SOURCE DETKIT] (unused)."""
import os
import sys

import numpy as np
import torch

import detkit
from checks import check, finish
from detkit.utils.collect_env import collect_env_info

info = collect_env_info()
rows = {}
for line in info.splitlines():
    key, _, value = line.partition("  ")
    if value.strip() and not key.startswith("-"):
        rows[key.strip()] = value.strip()
check(rows.get("PyTorch") == f"{torch.__version__} @{os.path.dirname(torch.__file__)}",
      f"collect_env: PyTorch {rows.get('PyTorch')}")
check(rows.get("numpy") == np.__version__ and rows.get("sys.platform") == sys.platform,
      "collect_env: numpy and platform")
check(rows.get("detkit") == f"@{os.path.dirname(detkit.__file__)}" and
      rows.get("detkit._C") == detkit._C.__file__, f"collect_env: detkit {rows.get('detkit')}")
check(rows.get("GPU available", "").startswith("Yes" if torch.cuda.is_available() else "No"),
      f"collect_env: GPU available {rows.get('GPU available')}")
check(info.endswith(torch.__config__.show()), "collect_env: torch's build configuration last")

# PathManager: detectron2:// and http(s):// through detkit's downloader, on loopback only.
import functools
import http.server
import tempfile
import threading

from detkit.utils.file_io import PathManager

served = tempfile.mkdtemp(prefix="detkit_served_")
cache = tempfile.mkdtemp(prefix="detkit_cache_")
os.makedirs(os.path.join(served, "zoo", "assets"))
payload = os.urandom(5000)
with open(os.path.join(served, "zoo", "assets", "w.pkl"), "wb") as f:
    f.write(payload)
requests = []


class Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        requests.append(self.path)


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                         functools.partial(Handler, directory=served))
threading.Thread(target=server.serve_forever, daemon=True).start()
base = f"http://127.0.0.1:{server.server_address[1]}"
os.environ["FVCORE_CACHE"] = cache
os.environ["DETKIT_MODEL_ZOO_URL"] = base + "/zoo"
try:
    local = PathManager.get_local_path(base + "/zoo/assets/w.pkl")
    check(local.startswith(cache) and open(local, "rb").read() == payload,
          f"get_local_path(http://...): {local}, the served bytes")
    with PathManager.open(base + "/zoo/assets/w.pkl", "rb") as f:
        check(f.read() == payload, "open(http://..., 'rb'): the served bytes")
    zoo_local = PathManager.get_local_path("detectron2://assets/w.pkl")
    check(open(zoo_local, "rb").read() == payload,
          f"get_local_path(detectron2://assets/w.pkl) through the mirror: {zoo_local}")
    fetched = len([r for r in requests if r.endswith("w.pkl")])
    PathManager.get_local_path(base + "/zoo/assets/w.pkl")
    check(len([r for r in requests if r.endswith("w.pkl")]) == fetched,
          f"a cached URL is not fetched again ({fetched} requests)")
    try:
        PathManager.get_local_path(base + "/zoo/missing.pkl")
        check(False, "a missing URL raises")
    except detkit.Error as e:
        check("missing.pkl" in str(e), f"a missing URL names it: {str(e)[:120]}")
    try:
        PathManager.open(base + "/zoo/assets/w.pkl", "wb")
        check(False, "writing a URL raises")
    except ValueError as e:
        check("reading only" in str(e), f"open(url, 'wb'): {e}")
finally:
    server.shutdown()
finish()
