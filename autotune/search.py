"""Search strategies: which candidates to evaluate, within a budget of evaluations and seconds.

A strategy is a function ``strategy(space, objective, rng)`` that calls ``objective(configs)``
with batches of configs (a batch is compiled in parallel, then timed one by one) and reads the
times it returns. The objective counts evaluations and raises `Exhausted` when the budget is
spent; a config evaluated before costs nothing. Strategies:

- ``exhaustive``: every config, in the space's order.
- ``random``: configs drawn uniformly without replacement (seeded), in batches.
- ``pattern``: pattern search (as Helion's): a random initial population with the default, then
  from the best few configs, every neighbour one step along one axis (or a cube shape with the
  same units), moving while that improves, doubling the step when a centre has no better
  neighbour; when every centre has converged, a fresh random population, until the budget ends
  or a restart finds nothing better.
- ``auto``: exhaustive when the space fits the evaluation budget (or has at most 64 configs),
  else pattern.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable

from .space import Config, Space

Objective = Callable[[list[Config]], list[float]]


class Exhausted(Exception):
    """The budget of evaluations or seconds is spent."""


class Budget:
    """Evaluations and seconds left; ``None`` is no limit. A budget of 0 is an error."""

    def __init__(self, kernel_name: str, max_evals: int | None, max_seconds: float | None):
        for name, value in (("max_evals", max_evals), ("max_seconds", max_seconds)):
            if value is not None and not value > 0:
                raise ValueError(f"autotune '{kernel_name}': {name}={value!r} leaves nothing to evaluate: give a "
                                 "positive number, or None for no limit")
        if max_evals is not None and int(max_evals) != max_evals:
            raise ValueError(f"autotune '{kernel_name}': max_evals={max_evals!r} must be a whole number")
        self.max_evals, self.max_seconds = max_evals, max_seconds
        self.began = time.perf_counter()

    def evals_left(self, used: int) -> float:
        return math.inf if self.max_evals is None else self.max_evals - used

    def out_of_time(self) -> bool:
        return self.max_seconds is not None and time.perf_counter() - self.began >= self.max_seconds


class Evaluations:
    """The objective a strategy calls: ``evaluate(batch)`` measures configs not seen before, within
    the budget; ``values`` holds every time so far (``inf`` for a config that failed or was wrong)."""

    def __init__(self, evaluate: Callable[[list[Config], Callable[[], bool]], dict[Config, float]], budget: Budget):
        self.evaluate, self.budget = evaluate, budget
        self.values: dict[Config, float] = {}

    def __call__(self, configs: list[Config]) -> list[float]:
        new = [c for c in dict.fromkeys(configs) if c not in self.values]
        if new:
            left = self.budget.evals_left(len(self.values))
            if left <= 0 or self.budget.out_of_time():
                raise Exhausted
            cut = len(new) > left
            done = self.evaluate(new[:int(min(left, len(new)))], self.budget.out_of_time)
            self.values.update(done)
            if cut or len(done) < min(left, len(new)):
                raise Exhausted
        return [self.values[c] for c in configs]

    def best(self) -> Config | None:
        return min(self.values, key=self.values.__getitem__) if self.values else None


def exhaustive(space: Space, objective: Evaluations, rng: random.Random, batch: int = 16) -> None:
    configs = space.configs
    for start in range(0, len(configs), batch):
        objective(configs[start:start + batch])


def random_sampling(space: Space, objective: Evaluations, rng: random.Random, batch: int = 16) -> None:
    order = list(range(len(space)))
    rng.shuffle(order)
    if space.index[space.default] in order:       # the default first: it is measured anyway (the reference)
        order.remove(space.index[space.default])
        order.insert(0, space.index[space.default])
    for start in range(0, len(order), batch):
        objective([space.configs[i] for i in order[start:start + batch]])


def pattern(space: Space, objective: Evaluations, rng: random.Random, population: int | None = None,
            centres: int = 3, improvement: float = 0.001) -> None:
    size = len(space)
    population = population or max(4, min(32, size // 200))
    start = [space.default, *_sample(space, rng, population - 1, objective.values)]
    objective(start)
    expanded: set[tuple[Config, int]] = set()
    steps: dict[Config, int] = {}
    # Without a budget, stop after a restart that finds nothing better; with one, use it all.
    patience = 1 if objective.budget.max_evals is None and objective.budget.max_seconds is None else math.inf
    best, fruitless = min(objective.values.values()), 0
    while True:
        _descend(space, objective, start, centres, improvement, expanded, steps)
        now = min(objective.values.values())
        if now < best * (1 - improvement):
            best, fruitless = now, 0
        elif len(objective.values) > population:
            fruitless += 1
            if fruitless > patience:
                return
        start = _sample(space, rng, population, objective.values)
        if not start:
            return
        objective(start)


def _descend(space: Space, objective: Evaluations, start: list[Config], centres: int, improvement: float,
             expanded: set, steps: dict) -> None:
    """From the configs of ``start``, expand the best few of those reached until each has no
    better neighbour at any step."""
    longest = max(len(a) for a in (*space.extents, *space.axes))
    reached = set(start)
    while True:
        ranked = sorted(reached, key=objective.values.__getitem__)[:centres]
        chosen = [c for c in ranked if objective.values[c] < math.inf and steps.get(c, 1) < longest
                  and (c, steps.get(c, 1)) not in expanded]
        if not chosen:
            return
        batch = []
        for c in chosen:
            expanded.add((c, steps.get(c, 1)))
            batch += space.neighbours(c, steps.get(c, 1))
        objective(batch)
        reached.update(batch)
        for c in chosen:
            step = steps.get(c, 1)
            if not any(objective.values[n] < objective.values[c] * (1 - improvement)
                       for n in space.neighbours(c, step)):
                steps[c] = step * 2         # nothing better this close: look farther


def _sample(space: Space, rng: random.Random, count: int, seen: dict) -> list[Config]:
    count = min(count, len(space) - len(seen))
    left = [i for i in range(len(space)) if space.configs[i] not in seen] if len(seen) > len(space) // 2 else None
    if left is not None:
        return [space.configs[i] for i in rng.sample(left, min(count, len(left)))]
    out: dict[Config, None] = {}
    while len(out) < count:
        c = space.configs[rng.randrange(len(space))]
        if c not in seen:
            out[c] = None
    return list(out)


STRATEGIES: dict[str, Callable] = {"exhaustive": exhaustive, "random": random_sampling, "pattern": pattern}


def choose(name: str, space: Space, budget: Budget, kernel_name: str) -> Callable:
    """The strategy function for ``name`` (``auto`` picks one for the space and budget)."""
    if name == "auto":
        fits = budget.max_evals is None or len(space) <= budget.max_evals
        name = "exhaustive" if len(space) <= 64 or (fits and budget.max_seconds is None and len(space) <= 256) \
            else "pattern"
    found = STRATEGIES.get(name)
    if found is None:
        raise ValueError(f"autotune '{kernel_name}': unknown strategy {name!r}; choose one of auto, "
                         f"{', '.join(STRATEGIES)}")
    return found


def run(strategy: Callable, space: Space, objective: Evaluations, seed: int) -> None:
    """Run a strategy until it ends or the budget does."""
    try:
        strategy(space, objective, random.Random(seed))
    except Exhausted:
        pass
