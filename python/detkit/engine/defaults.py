import weakref

from .. import _C
from ..data.catalog import materialize_datasets
from ..modeling.meta_arch import META_ARCH_REGISTRY
from ..structures import Boxes, Instances
from ..utils.events import _entered
from .trainer_storage import TrainerStorage


class DefaultPredictor:
    """Detectron2's DefaultPredictor: the config's model with cfg.MODEL.WEIGHTS loaded, in eval
    mode, with the test-time resize. Call it on one BGR image, a numpy.ndarray (H, W, 3) of uint8
    as cv2.imread gives; it returns {"instances": Instances} in the image's own pixels (an RPN-only
    model, as Detectron2's ProposalNetwork: {"proposals": Instances} with proposal_boxes and
    objectness_logits; a SemanticSegmentor: {"sem_seg": (C, H, W) logits}; a PanopticFPN:
    "instances", "sem_seg" and "panoptic_seg", the (H, W) int32 id map and its segments_info).
    detkit's engine runs with the GIL released. A strided view (image[:, :, ::-1]) is copied first, as
    Detectron2 accepts it; another dtype or shape is a detkit.Error naming it."""

    def __init__(self, cfg):
        self.cfg = cfg.clone()
        self.input_format = cfg.INPUT.FORMAT
        self._predictor = _C.Predictor(self.cfg._tree)

    @property
    def model(self):
        """The predictor's model, for inference_on_dataset."""
        return _ModelOf(lambda *a: _C.evaluate_predictor(self._predictor, *a))

    def __call__(self, original_image):
        outputs = self._predictor(original_image)
        fields = outputs.pop("instances", None)
        if fields is not None:
            instances = Instances(fields.pop("image_size"))
            for name, value in fields.items():
                instances.set(name, Boxes(value) if name in ("pred_boxes", "proposal_boxes") else value)
            outputs["proposals" if "proposal_boxes" in fields else "instances"] = instances
        return outputs


class DefaultTrainer:
    """Detectron2's DefaultTrainer: what `detkit train` runs for cfg (model, optimizer, LR
    schedule, loader, checkpoints every SOLVER.CHECKPOINT_PERIOD, metrics.json, evaluation on
    DATASETS.TEST at the end). Datasets registered as Python functions are read when it is made.
    As `detkit train` (and Detectron2's default_setup) it writes OUTPUT_DIR/config.yaml and
    log.txt and seeds from SEED. train() runs with the GIL released."""

    def __init__(self, cfg):
        _refuse_python_architecture(cfg.MODEL.META_ARCHITECTURE)
        materialize_datasets(cfg)
        self.cfg = cfg.clone()
        self.cfg.freeze()
        self._trainer = _C.Trainer(self.cfg._tree, _C.default_setup(self.cfg._tree))
        self._storage = TrainerStorage(self._trainer)

    def resume_or_load(self, resume=True):
        """resume: continue from OUTPUT_DIR/last_checkpoint when there is one; else (or with
        resume=False) load cfg.MODEL.WEIGHTS when set and start at iteration 0."""
        self._trainer.resume_or_load(resume)

    def register_hooks(self, hooks):
        """Hooks (HookBase) that run after detkit's own (the metrics writers included), in order.
        An exception one raises ends train() and reaches its caller."""
        for hook in hooks:
            if hook is None:
                continue
            hook.trainer = weakref.proxy(self)
            self._trainer.register_hook(hook)

    @property
    def model(self):
        """The trained model, for inference_on_dataset."""
        return _ModelOf(lambda *a: _C.evaluate_trainer(self._trainer, *a))

    @property
    def iter(self):
        """The iteration running (during train(): in a hook, the step just run)."""
        return self._trainer.iter

    @property
    def storage(self):
        """The trainer's event storage (TrainerStorage: latest(), iter), get_event_storage()'s
        during train()."""
        return self._storage

    def train(self):
        """Trains to SOLVER.MAX_ITER. Ctrl-C (SIGINT) or SIGTERM lets the step finish, saves a
        checkpoint and raises detkit.Preempted, a KeyboardInterrupt naming it (`detkit train`
        exits 75 there); resume_or_load(resume=True) continues from it."""
        with _entered(self._storage):
            self._trainer.train()


def _refuse_python_architecture(name):
    from ..modeling.meta_arch.native import _NativeModel
    if name in META_ARCH_REGISTRY and not issubclass(META_ARCH_REGISTRY.get(name), _NativeModel):
        raise _C.Error(f"DefaultTrainer: MODEL.META_ARCHITECTURE '{name}' is registered from "
                       "Python; detkit's DefaultTrainer trains its C++ models only. Train a Python "
                       "model with SimpleTrainer (build_model, build_optimizer, your loader and "
                       "detkit.engine.hooks)")


class _ModelOf:
    """A predictor's or trainer's model, as far as inference_on_dataset uses it."""

    def __init__(self, evaluate):
        self._evaluate = evaluate
