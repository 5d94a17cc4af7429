"""Bayesian optimisation of a tuning space: a Gaussian process over the configs' positions.

Each config is a point of the space's axes (`Space.coords`: the rank of each cube extent, the
index of each Comptime value, Line width and fastmath mode), each axis scaled to [0, 1]. The
model is a Gaussian process on the log of the measured times with a squared-exponential kernel,
whose length scale and noise are chosen by the marginal likelihood over a small grid each round.
Log times make effects multiplicative and let one model hold a kernel that is 30x slower at one
end of an axis and a 2% difference near the optimum. A config that failed or computed a wrong
answer counts as twice the slowest time measured.

After a random initial sample (with the default config), each round measures a batch of the
configs with the highest *expected improvement* over the best time so far: the first by the
model, the others by the "kriging believer" rule (each pick is assumed to take the time the
model predicts, which leaves the mean where it is and shrinks the uncertainty around the pick,
so a batch spreads out instead of measuring eight copies of one guess). Batches are what the
tuner compiles in parallel.

On measured landscapes this finds near-optimal configs where pattern search stops in another
basin: a Line width that pays only at some cube sizes is a smooth ridge to the model and a
wall to one-axis moves (docs/design.md, "Autotuning", has the figures). Spaces larger than
`POOL` unseen configs are ranked on a random subset each round, plus every neighbour of the
best config so far; the model is fitted to the `FITTED` fastest configs measured.
"""

from __future__ import annotations

import math
import random

import numpy as np

from .space import Config, Space

POOL = 2048                                       # unseen configs ranked per round, at most
FITTED = 300                                      # measured configs the model is fitted to, at most
LENGTH_SCALES = (0.1, 0.2, 0.35, 0.6, 1.0)        # in units of an axis' whole range
NOISES = (1e-3, 1e-2, 1e-1)                       # relative to the variance of the log times
SETTLED = 1e-3                                    # without a budget: stop when no config is expected
                                                  # to gain 0.1% (twice in a row)


def bayes(space: Space, objective, rng: random.Random, batch: int = 8) -> None:
    positions = _positions(space)
    initial = max(8, min(20, len(space) // 50))
    first = [space.default, *(c for c in rng.sample(space.configs, min(len(space), initial + 1))
                              if c != space.default)][:initial]
    objective(first)
    unlimited = objective.budget.max_evals is None and objective.budget.max_seconds is None
    settled, fit = 0, _Fit()
    while len(objective.values) < len(space):
        picks, expected = _next_batch(space, positions, objective.values, rng, batch, fit)
        if not picks:
            return
        if unlimited:
            settled = settled + 1 if expected < SETTLED else 0
            if settled >= 2:
                return
        objective(picks)


def _positions(space: Space) -> np.ndarray:
    coords = np.array([space.coords(c) for c in space.configs], float)
    span = coords.max(axis=0) - coords.min(axis=0)
    return (coords - coords.min(axis=0)) / np.where(span > 0, span, 1.0)


class _Fit:
    """The length scale and noise last chosen, and for how many measurements: they are chosen again
    when the measurements have grown by a quarter (the choice is most of a round's cost)."""

    def __init__(self):
        self.length, self.noise, self.measured = LENGTH_SCALES[-1], NOISES[-1], 0

    def update(self, train: np.ndarray, z: np.ndarray) -> None:
        if len(z) >= self.measured * 1.25 or len(z) < 32:
            self.length, self.noise = _fit(train, z)
            self.measured = len(z)


def _next_batch(space: Space, positions: np.ndarray, values: dict[Config, float], rng: random.Random,
                batch: int, fit: _Fit) -> tuple[list[Config], float]:
    """Up to ``batch`` unseen configs by expected improvement, and the first one's expected
    improvement (in log time)."""
    seen = sorted(values, key=values.__getitem__)[:FITTED]      # the fastest, where the model matters
    times = np.array([values[c] for c in seen])
    finite = np.isfinite(times)
    if not finite.any():
        return [], 0.0
    logs = np.log(np.where(finite, times, 1.0))
    logs[~finite] = logs[finite].max() + math.log(2)
    candidates = _candidates(space, values, rng)
    if not candidates:
        return [], 0.0
    train = positions[[space.index[c] for c in seen]]
    cand = positions[[space.index[c] for c in candidates]]
    scale = logs.std() or 1.0
    z = (logs - logs.mean()) / scale
    fit.update(train, z)
    length, noise = fit.length, fit.noise
    chol = np.linalg.cholesky(_gram(train, train, length) + noise * np.eye(len(z)))
    cross = _gram(cand, train, length)                      # candidates x measured
    v = np.linalg.solve(chol, cross.T)                      # L^-1 k(measured, candidates)
    mean = v.T @ np.linalg.solve(chol, z)
    var = np.maximum(1.0 - (v * v).sum(axis=0), 1e-12)
    best = z.min()
    picks: list[int] = []
    first_gain = 0.0
    for _ in range(min(batch, len(candidates))):
        gain = _expected_improvement(best - mean, np.sqrt(var))
        gain[picks] = -1.0
        j = int(np.argmax(gain))
        if not picks:
            first_gain = float(gain[j]) * scale
        picks.append(j)
        # The believer's update: a measurement at j equal to its prediction leaves the mean as it
        # is and removes the variance explained by j (given the measured configs; the picks of one
        # batch are not conditioned on each other, a cheap approximation).
        cov = _gram(cand, cand[j:j + 1], length)[:, 0] - v.T @ v[:, j]
        var = np.maximum(var - cov * cov / (var[j] + noise), 1e-12)
    return [candidates[j] for j in picks], first_gain


def _candidates(space: Space, values: dict, rng: random.Random) -> list[Config]:
    if len(space) - len(values) <= POOL:
        return [c for c in space.configs if c not in values]
    found: dict[Config, None] = {}
    incumbent = min(values, key=values.__getitem__)
    for c in space.lines_through(incumbent):
        if c not in values:
            found[c] = None
    while len(found) < POOL:
        c = space.configs[rng.randrange(len(space))]
        if c not in values:
            found[c] = None
    return list(found)


def _gram(a: np.ndarray, b: np.ndarray, length: float) -> np.ndarray:
    d2 = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * a @ b.T
    return np.exp(-0.5 * np.maximum(d2, 0.0) / (length * length))


def _fit(train: np.ndarray, z: np.ndarray) -> tuple[float, float]:
    """The length scale and noise of the grid that maximise the marginal likelihood of ``z``."""
    best = (-math.inf, LENGTH_SCALES[-1], NOISES[-1])
    for length in LENGTH_SCALES:
        gram = _gram(train, train, length)
        for noise in NOISES:
            try:
                chol = np.linalg.cholesky(gram + noise * np.eye(len(z)))
            except np.linalg.LinAlgError:
                continue
            alpha = np.linalg.solve(chol, z)
            likelihood = -0.5 * alpha @ alpha - np.log(np.diag(chol)).sum()
            if likelihood > best[0]:
                best = (likelihood, length, noise)
    return best[1], best[2]


def _expected_improvement(margin: np.ndarray, sd: np.ndarray) -> np.ndarray:
    g = margin / sd
    cdf = 0.5 * (1.0 + _erf(g / math.sqrt(2.0)))
    return sd * (g * cdf + np.exp(-0.5 * g * g) / math.sqrt(2.0 * math.pi))


def _erf(x: np.ndarray) -> np.ndarray:
    """Abramowitz and Stegun 7.1.26 (error below 1.5e-7): NumPy has no erf."""
    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-x * x))
