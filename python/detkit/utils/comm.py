"""Detectron2's comm functions over detkit's communicator: this process's place in the job that
detkit.engine.launch (or torchrun, or srun) started; a job of one outside it."""
from .. import _C

get_world_size = _C.get_world_size
get_rank = _C.get_rank
get_local_rank = _C.get_local_rank
get_local_size = _C.get_local_size
is_main_process = _C.is_main_process
synchronize = _C.synchronize  # a barrier across the ranks (the GIL released while it waits)
