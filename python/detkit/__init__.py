"""detkit: Detectron2's Python API over detkit's native engine. Rename `detectron2` to `detkit` in
a script that uses what is here (config, model_zoo, engine.DefaultPredictor, structures)."""
import torch  # noqa: F401  (loads libtorch_python, which detkit._C's tensors go through)

from ._C import Error  # detkit's errors: a RuntimeError whose message names what was wrong
from ._C import Preempted  # training stopped by Ctrl-C / SIGTERM: a KeyboardInterrupt
from ._C import configure_threads
from . import _C

# As the CLI: every core unless DETKIT_NUM_THREADS says.
configure_threads()

__all__ = ["Error", "Preempted"]
