"""Detectron2's launch(): main_func in num_gpus_per_machine worker processes of one job (on CPU,
processes sharing the cores, each with cores / N threads unless DETKIT_NUM_THREADS says), joined
over Gloo as `detkit train --num-gpus N` joins its workers: a DefaultTrainer made in main_func
trains data-parallel across them."""
import datetime
import os

import torch.multiprocessing as mp

from .. import _C

DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)


def launch(main_func, num_gpus_per_machine, num_machines=1, machine_rank=0, dist_url=None,
           args=(), timeout=DEFAULT_TIMEOUT):
    """Runs main_func(*args) in each worker (started with Python's "spawn": main_func and args
    must be picklable, as Detectron2's). One process in all: main_func runs here. dist_url:
    "auto" (or None) for 127.0.0.1 and a free port, on one machine; else "tcp://HOST:PORT" of
    machine 0. timeout: for the rendezvous and for any one collective. A worker that raises or
    dies stops the others, and this raises torch.multiprocessing's error naming its process."""
    world_size = num_machines * num_gpus_per_machine
    if world_size <= 1:
        main_func(*args)
        return
    environments = _C.launch_environments(num_gpus_per_machine, num_machines, machine_rank,
                                          dist_url or "auto")
    mp.start_processes(_distributed_worker, nprocs=num_gpus_per_machine,
                       args=(main_func, environments, timeout.total_seconds(), args),
                       daemon=False, start_method="spawn")


def _distributed_worker(local_rank, main_func, environments, timeout_s, args):
    os.environ.update(environments[local_rank])
    _C.configure_threads()  # this worker's share of the cores (DETKIT_NUM_THREADS)
    _C.join_job(timeout_s)
    main_func(*args)
