"""Counters that only grow from boot (`netstat -s`, `nstat -a`, `/proc/vmstat`), read in one or
more samples: the one home for telling a total since boot from what happens now.

One sample is a total over the uptime: the values are kept as printed and `since_boot` says so
(signatures never compare such totals with a threshold). Two or more samples give the growth
between the first and the last, and a rate per second when their times are known (OSWatcher
`zzz ***date` markers, `date` lines between the outputs). A new sample starts at a marker, at
a tool's own header, or when a counter already seen in the current sample comes again. Tools
that print increments themselves (`nstat` without -a) are summed instead. Gauges (current
values such as TcpCurrEstab or nr_free_pages) keep their last value.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class CounterSamples:
    max_keys: int = 2000
    gauges: frozenset[str] = frozenset()
    increments: bool = False  # the tool printed increments, not totals
    first: dict[str, float] = field(default_factory=dict)
    last: dict[str, float] = field(default_factory=dict)
    summed: dict[str, float] = field(default_factory=dict)
    samples: int = 1
    seen_in_sample: set[str] = field(default_factory=set)
    times: dict[int, float] = field(default_factory=dict)  # sample number -> epoch seconds

    def new_sample(self) -> None:
        """A boundary (a marker, a tool header): the next values belong to a new sample, if the
        current one has any."""
        if self.seen_in_sample:
            self.samples += 1
            self.seen_in_sample = set()

    def mark(self, when: float | None) -> None:
        """A timed boundary: `when` is the time of the sample that follows."""
        self.new_sample()
        if when is not None:
            self.times[self.samples] = when

    def set(self, name: str, value: float) -> None:
        if name in self.seen_in_sample:
            self.new_sample()
        self.seen_in_sample.add(name)
        if name not in self.last and len(self.last) >= self.max_keys:
            return
        self.first.setdefault(name, value)
        self.last[name] = value
        self.summed[name] = self.summed.get(name, 0.0) + value

    @property
    def since_boot(self) -> bool:
        return bool(self.last) and not self.increments and self.samples == 1

    @property
    def mode(self) -> str:
        if self.increments:
            return "increments"
        return "difference" if self.samples > 1 else "totals"

    def values(self) -> dict[str, float]:
        """Totals since boot (one sample), growth first -> last (several), or summed increments.
        A counter that went down was reset (reboot, wrap): its last value is the growth."""
        if self.increments:
            return dict(self.summed)
        if self.samples == 1:
            return dict(self.last)
        return {
            k: (v if k in self.gauges or v < self.first[k] else v - self.first[k])
            for k, v in self.last.items()
        }

    def rate(self, values: dict[str, float]) -> tuple[float, dict[str, float]] | None:
        """(seconds between the first and last timed sample, growth per second), or None."""
        start, end = self.times.get(1), self.times.get(self.samples)
        if self.samples < 2 or self.increments or start is None or end is None or end <= start:
            return None
        seconds = end - start
        per_s = {k: round(v / seconds, 4) for k, v in values.items() if k not in self.gauges}
        return seconds, per_s
