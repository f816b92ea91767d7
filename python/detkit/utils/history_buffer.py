"""HistoryBuffer: one scalar's recorded values with their iterations, as fvcore's (which
Detectron2's EventStorage keeps per metric): the latest value, the median or mean of the last N,
and the mean over everything ever recorded (kept exact after old values are dropped)."""
import statistics


class HistoryBuffer:
    def __init__(self, max_length: int = 1000000):
        """max_length: how many (value, iteration) pairs are kept; older ones are dropped."""
        if not isinstance(max_length, int) or max_length < 1:
            raise ValueError(f"HistoryBuffer(max_length=) must be a positive int, got "
                             f"{max_length!r}")
        self._max_length = max_length
        self._data = []  # [(value, iteration)], oldest first
        self._count = 0
        self._global_sum = 0.0

    def update(self, value: float, iteration=None):
        """Records value at iteration (by default: one past the number of values so far)."""
        if iteration is None:
            iteration = self._count
        if len(self._data) == self._max_length:
            self._data.pop(0)
        self._data.append((value, iteration))
        self._count += 1
        self._global_sum += value

    def _last(self, window, what):
        if not self._data:
            raise IndexError(f"HistoryBuffer.{what}: no value has been recorded")
        if not isinstance(window, int) or window < 1:
            raise ValueError(f"HistoryBuffer.{what}(window=) must be a positive int, got "
                             f"{window!r}")
        return [v for v, _ in self._data[-window:]]

    def latest(self) -> float:
        if not self._data:
            raise IndexError("HistoryBuffer.latest: no value has been recorded")
        return self._data[-1][0]

    def median(self, window: int) -> float:
        """The median of the last `window` values (the mean of the middle two for an even count,
        as numpy's)."""
        return float(statistics.median(self._last(window, "median")))

    def avg(self, window: int) -> float:
        values = self._last(window, "avg")
        return sum(values) / len(values)

    def global_avg(self) -> float:
        """The mean of every value recorded, dropped ones included."""
        if not self._count:
            raise IndexError("HistoryBuffer.global_avg: no value has been recorded")
        return self._global_sum / self._count

    def values(self):
        """[(value, iteration)] kept, oldest first."""
        return self._data
