"""Parameter schedules as fvcore's (which Detectron2's LR schedules are made of), without
fvcore: a schedule is a callable from `where`, the fraction of training done in [0, 1], to a
value (an LR multiplier in detkit.solver). Detectron2's users pass fvcore's own schedulers to
WarmupParamScheduler and LRMultiplier; any such callable works there."""
import bisect
import math
from typing import List, Optional, Sequence

__all__ = ["CompositeParamScheduler", "ConstantParamScheduler", "CosineParamScheduler",
           "LinearParamScheduler", "MultiStepParamScheduler", "ParamScheduler",
           "StepParamScheduler", "StepWithFixedGammaParamScheduler"]


class ParamScheduler:
    """A value for each point of training: __call__(where), where in [0, 1]."""

    # added to `where` before it is turned into a step, so 0.3 * 10 lands on step 3
    WHERE_EPSILON = 1e-6

    def __call__(self, where: float) -> float:
        raise NotImplementedError(f"{type(self).__name__} must implement __call__(where)")


class ConstantParamScheduler(ParamScheduler):
    def __init__(self, value: float):
        self._value = value

    def __call__(self, where: float) -> float:
        if where >= 1.0:
            raise RuntimeError(f"ConstantParamScheduler: where must be in [0, 1), got {where}")
        return self._value


class LinearParamScheduler(ParamScheduler):
    """From start_value at where = 0 to end_value at where = 1, linearly."""

    def __init__(self, start_value: float, end_value: float):
        self._start_value = start_value
        self._end_value = end_value

    def __call__(self, where: float) -> float:
        return self._start_value + (self._end_value - self._start_value) * where


class CosineParamScheduler(ParamScheduler):
    """Half a cosine from start_value (where = 0) to end_value (where = 1)."""

    def __init__(self, start_value: float, end_value: float):
        self._start_value = start_value
        self._end_value = end_value

    def __call__(self, where: float) -> float:
        return self._end_value + (self._start_value - self._end_value) * \
            (1 + math.cos(math.pi * where)) / 2


class MultiStepParamScheduler(ParamScheduler):
    """values[i] from milestones[i - 1] (0 for i = 0) to milestones[i] of num_updates steps.
    Without milestones: num_updates split evenly (rounded up); without num_updates: the last
    milestone is num_updates."""

    def __init__(self, values: List[float], num_updates: Optional[int] = None,
                 milestones: Optional[List[int]] = None):
        if num_updates is None and milestones is None:
            raise ValueError("MultiStepParamScheduler: give num_updates or milestones (or both)")
        if milestones is None:
            width = math.ceil(num_updates / len(values))
            milestones = [width * (i + 1) for i in range(len(values) - 1)]
        else:
            expected = len(values) - (num_updates is not None)
            if not isinstance(milestones, Sequence) or len(milestones) != expected:
                raise ValueError(f"MultiStepParamScheduler: {len(values)} values need {expected} "
                                 f"milestones{'' if num_updates is None else ' with num_updates'},"
                                 f" got {milestones!r}")
            milestones = list(milestones)
            if num_updates is None:
                num_updates, milestones = milestones[-1], milestones[:-1]
        if num_updates < len(values):
            raise ValueError(f"MultiStepParamScheduler: num_updates ({num_updates}) must be at "
                             f"least the number of values ({len(values)})")
        previous = 0
        for milestone in milestones:
            if not previous < milestone < num_updates:
                raise ValueError(f"MultiStepParamScheduler: milestones must increase from above 0 "
                                 f"to below num_updates ({num_updates}), got {milestones}")
            previous = milestone
        self._values = list(values)
        self._num_updates = num_updates
        self._milestones = milestones

    def __call__(self, where: float) -> float:
        if where > 1.0:
            raise RuntimeError(f"MultiStepParamScheduler: where must be in [0, 1], got {where}")
        step = int((where + self.WHERE_EPSILON) * self._num_updates)
        return self._values[bisect.bisect_right(self._milestones, step)]


class StepParamScheduler(ParamScheduler):
    """values in equal parts of training: values[int(where * len(values))]."""

    def __init__(self, num_updates: int, values: List[float]):
        if num_updates <= 0:
            raise ValueError(f"StepParamScheduler: num_updates must be above 0, got {num_updates}")
        if not isinstance(values, Sequence) or not values:
            raise ValueError(f"StepParamScheduler: values must be a non-empty list, got {values!r}")
        self._values = list(values)

    def __call__(self, where: float) -> float:
        index = int((where + self.WHERE_EPSILON) * len(self._values))
        if not 0 <= index < len(self._values):
            raise IndexError(f"StepParamScheduler: where={where} is past its {len(self._values)} "
                             "values (stepped after the last iteration)")
        return self._values[index]


class StepWithFixedGammaParamScheduler(ParamScheduler):
    """base_value, then times gamma num_decays times, in num_decays + 1 equal parts."""

    def __init__(self, base_value: float, num_decays: int, gamma: float, num_updates: int):
        for name, value in (("base_value", base_value), ("gamma", gamma)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"StepWithFixedGammaParamScheduler: {name} must be a positive "
                                 f"number, got {value!r}")
        for name, value in (("num_decays", num_decays), ("num_updates", num_updates)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"StepWithFixedGammaParamScheduler: {name} must be a positive "
                                 f"int, got {value!r}")
        self._steps = StepParamScheduler(
            num_updates, [base_value * gamma**k for k in range(num_decays + 1)])

    def __call__(self, where: float) -> float:
        return self._steps(where)


class CompositeParamScheduler(ParamScheduler):
    """schedulers one after the other, scheduler i for a fraction lengths[i] of training (the
    lengths sum to 1). interval_scaling[i]: "rescaled" runs scheduler i over its whole [0, 1]
    within its part; "fixed" gives it the global `where`."""

    def __init__(self, schedulers: Sequence, lengths: List[float],
                 interval_scaling: Sequence[str]):
        if not schedulers:
            raise ValueError("CompositeParamScheduler: needs at least one scheduler")
        if not len(schedulers) == len(lengths) == len(interval_scaling):
            raise ValueError(f"CompositeParamScheduler: {len(schedulers)} schedulers, "
                             f"{len(lengths)} lengths, {len(interval_scaling)} interval_scaling")
        if abs(sum(lengths) - 1.0) >= 1e-3:
            raise ValueError(f"CompositeParamScheduler: lengths must sum to 1, got {lengths}")
        for scaling in interval_scaling:
            if scaling not in ("rescaled", "fixed"):
                raise ValueError(f"CompositeParamScheduler: interval_scaling must be 'rescaled' "
                                 f"or 'fixed', got {scaling!r}")
        lengths = list(lengths)
        lengths[-1] = 1.0 - sum(lengths[:-1])
        self._schedulers = list(schedulers)
        self._lengths = lengths
        self._interval_scaling = list(interval_scaling)

    def __call__(self, where: float) -> float:
        start, i = 0.0, 0
        last = len(self._schedulers) - 1
        while i < last and where + self.WHERE_EPSILON > start + self._lengths[i]:
            start += self._lengths[i]
            i += 1
        if self._interval_scaling[i] == "rescaled":
            where = (where - start) / self._lengths[i]
        return self._schedulers[i](where)
