"""A campaign that outlives one process: ``--state FILE`` keeps every finished kernel's outcome,
one JSON line each, so a run of N seeds split over several calls (a GPU machine lent ten
minutes at a time) ends with one tally of the whole run.

The first line holds the run: its first seed, its kernel count and its device list; a later call
with the same file takes them from there, skips the seeds already done and goes on. A line per
call records the seconds that call fuzzed.
"""

from __future__ import annotations

import json
from pathlib import Path

from .campaign import Tally


class RunState:
    """The state file of a resumable run."""

    def __init__(self, path: str | Path, first: int, kernels: int | None, devices: list[str], alternate: bool):
        self.path = Path(path)
        self.header = {"first": first, "kernels": kernels, "devices": devices, "alternate": alternate}
        self.done: set[int] = set()
        self.previous = Tally()
        self.calls = 0
        if self.path.exists():
            self._load()
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)     # a fresh machine lacks the folder
            with self.path.open("w") as f:
                f.write(json.dumps({"run": self.header}) + "\n")

    def _load(self) -> None:
        with self.path.open() as f:
            lines = [json.loads(line) for line in f if line.strip()]
        if not lines or "run" not in lines[0]:
            raise ValueError(f"{self.path} is not a fuzz run's state file (its first line names the run)")
        self.header = lines[0]["run"]
        for line in lines[1:]:
            if "call_seconds" in line:
                self.previous.seconds += line["call_seconds"]
                self.calls += 1
            elif line.get("seed") not in self.done:
                self.done.add(line["seed"])
                self.previous.add(line)

    @property
    def seeds(self):
        """The run's seeds not done yet, in order."""
        first, count = self.header["first"], self.header["kernels"]
        if count is None:
            raise ValueError("a resumable run needs --kernels: the number of seeds the whole run covers")
        return (s for s in range(first, first + count) if s not in self.done)

    def record(self, out: dict) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps(out, default=list) + "\n")

    def finish(self, tally: Tally) -> Tally:
        """This call's tally added to the earlier calls'; the call's seconds recorded."""
        with self.path.open("a") as f:
            f.write(json.dumps({"call_seconds": tally.seconds}) + "\n")
        whole = self.previous
        for name in ("kernels", "lines", "seconds"):
            setattr(whole, name, getattr(whole, name) + getattr(tally, name))
        for target, per in tally.counts.items():
            mine = whole.counts.setdefault(target, {})
            for status, n in per.items():
                mine[status] = mine.get(status, 0) + n
        for key, n in tally.model.items():
            whole.model[key] = whole.model.get(key, 0) + n
        for target, (n, total) in tally.times.items():
            m, t = whole.times.get(target, (0, 0.0))
            whole.times[target] = (m + n, t + total)
        whole.failures += tally.failures
        whole.invalid += tally.invalid
        whole.interrupted = tally.interrupted
        self.calls += 1
        return whole
