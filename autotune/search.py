"""Search strategies: which candidates to evaluate, within a budget of evaluations and seconds.

A strategy is a function ``strategy(space, objective, rng)`` that calls ``objective(configs)``
with batches of configs (a batch is compiled in parallel, then timed one by one) and reads the
times it returns. The objective counts evaluations and raises `Exhausted` when the budget is
spent; a config evaluated before costs nothing. Strategies:

- ``exhaustive``: every config, in the space's order.
- ``random``: configs drawn uniformly without replacement (seeded), in batches.
- ``pattern``: pattern search (after Helion's): a random initial population with the default,
  then from the best two configs reached, every config one move away (any other value of one
  axis, or a cube of the same units in another shape), moving on while that finds better ones;
  when the best two are expanded, a new population of random jumps of two or three axes from
  the best configs (random configs where those run out), until the budget ends or, without a
  budget, a restart finds nothing better.
- ``bayes``: Bayesian optimisation (`bayes.py`): a Gaussian process on the log times over the
  configs' positions, batches by expected improvement.
- ``auto``: exhaustive when the space fits the evaluation budget (or has at most 64 configs),
  else bayes up to 2,048 configs (where the model ranks every unseen config each round), else
  pattern. On measured landscapes of 1,200 configs bayes reached 2% of the best in 10% of the
  evaluations where pattern search did not; pattern search meets that on the larger synthetic
  spaces, and its rounds cost nothing where the model's grow with the measurements.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable

from .bayes import POOL as BAYES_POOL
from .bayes import bayes
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
            if left <= 0 or (self.values and self.budget.out_of_time()):     # the first batch always runs
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
            centres: int = 2, improvement: float = 0.001, perturbed: float = 1.0) -> None:
    size = len(space)
    population = population or max(8, min(32, size // 100))
    start = [space.default, *_sample(space, rng, population - 1, objective.values)]
    objective(start)
    expanded: set[Config] = set()
    # Without a budget, stop after a restart that finds nothing better; with one, use it all.
    patience = 1 if objective.budget.max_evals is None and objective.budget.max_seconds is None else math.inf
    best, fruitless = min(objective.values.values()), 0
    while True:
        _descend(space, objective, start, centres, improvement, expanded)
        now = min(objective.values.values())
        if now < best * (1 - improvement):
            best, fruitless = now, 0
        elif len(objective.values) > population:
            fruitless += 1
            if fruitless > patience:
                return
        # The next population: random jumps of a few axes from the best configs found (the basin
        # near an optimum is often narrow: measured landscapes have few configs within 2%), and
        # random configs for the rest (``perturbed`` is the share of jumps).
        near = _perturb(space, rng, sorted(objective.values, key=objective.values.__getitem__)[:centres],
                        int(population * perturbed), objective.values)
        start = near + _sample(space, rng, population - len(near), {**objective.values, **dict.fromkeys(near)})
        if not start:
            return
        objective(start)


def _descend(space: Space, objective: Evaluations, start: list[Config], centres: int, improvement: float,
             expanded: set) -> None:
    """From the configs of ``start``: evaluate every config one move away (`Space.lines_through`)
    from the best few reached, until the best few have all been expanded."""
    reached = set(start)
    while True:
        ranked = sorted(reached, key=objective.values.__getitem__)[:centres]
        chosen = [c for c in ranked if objective.values[c] < math.inf and c not in expanded]
        if not chosen:
            return
        batch = []
        for c in chosen:
            expanded.add(c)
            batch += space.lines_through(c)
        objective(batch)
        reached.update(batch)


def _perturb(space: Space, rng: random.Random, around: list[Config], count: int, seen: dict) -> list[Config]:
    """Up to ``count`` unseen configs, each a copy of one of ``around`` with two or three axes moved
    by one or two steps."""
    out: dict[Config, None] = {}
    for _ in range(count * 20):
        if len(out) >= count or not around:
            break
        coords = list(space.coords(rng.choice(around)))
        for axis in rng.sample(range(len(coords)), min(len(coords), rng.choice((2, 3)))):
            coords[axis] += rng.choice((-2, -1, 1, 2))
        found = space.at(tuple(coords))
        if found is not None and found not in seen:
            out[found] = None
    return list(out)


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


STRATEGIES: dict[str, Callable] = {"exhaustive": exhaustive, "random": random_sampling, "pattern": pattern,
                                   "bayes": bayes}


def choose(name: str, space: Space, budget: Budget, kernel_name: str) -> Callable:
    """The strategy function for ``name`` (``auto`` picks one for the space and budget)."""
    if name == "auto":
        fits = budget.max_evals is None or len(space) <= budget.max_evals
        if len(space) <= 64 or (fits and budget.max_seconds is None and len(space) <= 256):
            name = "exhaustive"
        else:     # the model ranks every unseen config of a space this size; pattern search scales
            name = "bayes" if len(space) <= BAYES_POOL else "pattern"
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
