class HookBase:
    """Detectron2's HookBase: override before_train, after_train, before_step, after_step.
    DefaultTrainer.register_hooks sets self.trainer (a weak proxy), whose .iter is the iteration
    running and .storage.latest() every metric's {name: (value, iteration)}."""

    trainer = None

    def before_train(self):
        pass

    def after_train(self):
        pass

    def before_step(self):
        pass

    def after_step(self):
        pass
