"""TrainerStorage: a detkit trainer's event storage (trainer.storage) as Detectron2's hooks read
it. The scalars live in detkit's C++ EventStorage (detkit/engine/event_storage.h: the losses, lr,
time, data_time detkit's trainer puts each iteration, and writes to metrics.json itself with
Detectron2's keys); this object reads them with detkit.utils.events.EventStorage's names. While
DefaultTrainer.train() runs, it is what get_event_storage() returns."""


class TrainerStorage:
    def __init__(self, trainer):
        self._trainer = trainer

    @property
    def iter(self):
        """The iteration running (in a hook: the step just run), as EventStorage.iter."""
        return self._trainer.iter

    @property
    def iteration(self):
        return self._trainer.iter

    def latest(self):
        """{name: (latest value, the iteration it was recorded at)}, as EventStorage.latest()."""
        return self._trainer.storage_latest()
