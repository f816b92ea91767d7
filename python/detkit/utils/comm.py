"""Detectron2's comm functions over detkit's communicator: this process's place in the job that
detkit.engine.launch (or torchrun, or srun) started; a job of one outside it."""
from .. import _C

get_world_size = _C.get_world_size
get_rank = _C.get_rank
get_local_rank = _C.get_local_rank
get_local_size = _C.get_local_size
is_main_process = _C.is_main_process
synchronize = _C.synchronize  # a barrier across the ranks (the GIL released while it waits)


def gather(data, dst=0, group=None):
    """Detectron2's comm.gather: on rank dst, [data of rank 0, data of rank 1, ...]; on the
    others []. Over torch.distributed when it is initialized; a job of one: [data]. detkit's own
    communicator carries no Python objects, so a detkit job of several without torch.distributed
    is a detkit.Error."""
    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized():
        if dist.get_world_size(group) == 1:
            return [data]
        rank = dist.get_rank(group)
        out = [None] * dist.get_world_size(group) if rank == dst else None
        dist.gather_object(data, out, dst=dst, group=group)
        return out if rank == dst else []
    if get_world_size() == 1:
        return [data]
    raise _C.Error("comm.gather of Python objects needs torch.distributed initialized "
                   f"(this job has {get_world_size()} processes over detkit's communicator)")
