"""What a tuning says while it runs.

- Log lines through the ``cubepy`` logger: the start and the outcome at INFO, each config at
  DEBUG, a config computing a wrong answer at WARNING.
- ``CUBEPY_PRINT_AUTOTUNING=1``: every config and its time printed to stderr, and the choice.
- A progress display on tunings of more than a few configs, when stderr is a terminal (or
  ``progress=True``): a tqdm bar where tqdm is installed, otherwise a plain line every 2 seconds.
"""

from __future__ import annotations

import sys
import time

from cubepy import settings
from cubepy.log import logger

PLAIN_EVERY_S = 2.0


class Reporter:
    """Reports one tuning of ``kernel`` on ``device`` for ``key`` over ``total`` configs at most."""

    def __init__(self, kernel: str, device: str, key: str, total: int, strategy: str, progress: bool | None):
        self.kernel, self.device, self.key, self.total, self.strategy = kernel, device, key, total, strategy
        self.print = settings.print_autotuning()
        show = progress if progress is not None else (total > 8 and sys.stderr.isatty())
        self.bar = _tqdm(total, f"autotune {kernel}") if show else None
        self.plain = show and self.bar is None
        self.done, self.best, self.best_label = 0, float("inf"), ""
        self.began = self.last_line = time.perf_counter()
        logger.info("autotune '%s' on %s, key %s: %s search over %d configs", kernel, device, key, strategy, total)

    def config(self, label: str, ms: float, status: str, detail: str = "", cached: bool = False) -> None:
        self.done += 1
        if ms < self.best:
            self.best, self.best_label = ms, label
        where = " (cached)" if cached else ""
        text = f"{ms:.4f} ms{where}" if status == "ok" else f"{status}{where}: {detail}"
        if status == "wrong" and not cached:
            logger.warning("autotune '%s' on %s: config %s computes another answer than the default config: %s; "
                           "skipped", self.kernel, self.device, label, detail)
        else:
            logger.debug("autotune '%s' on %s: %s: %s", self.kernel, self.device, label, text)
        if self.print:
            print(f"autotune {self.kernel} [{self.done}] {label}: {text}", file=sys.stderr, flush=True)
        if self.bar is not None:
            self.bar.update(1)
            if self.best < float("inf"):
                self.bar.set_postfix_str(f"best {self.best:.4f} ms {self.best_label}", refresh=False)
        elif self.plain and time.perf_counter() - self.last_line >= PLAIN_EVERY_S:
            self.last_line = time.perf_counter()
            print(f"autotune {self.kernel}: {self.done} configs evaluated, best {self.best:.4f} ms "
                  f"({self.best_label}), {self.last_line - self.began:.1f} s", file=sys.stderr, flush=True)

    def confirmed(self, label: str, ms: float) -> None:
        logger.debug("autotune '%s' on %s: %s: %.4f ms timed again, interleaved", self.kernel, self.device, label, ms)
        if self.print:
            print(f"autotune {self.kernel} [again] {label}: {ms:.4f} ms (interleaved)", file=sys.stderr, flush=True)

    def finish(self, label: str, ms: float, evaluations: int, measured: int, seconds: float, compiles: str) -> None:
        if self.bar is not None:
            self.bar.close()
        text = (f"autotune '{self.kernel}' on {self.device}, key {self.key}: {label} at {ms:.4f} ms ({self.strategy}: "
                f"{evaluations} of {self.total} configs evaluated, {measured} measured now, the rest cached; "
                f"{seconds:.2f} s; {compiles})")
        logger.info("%s", text)
        if self.print:
            print(text, file=sys.stderr, flush=True)


def _tqdm(total: int, description: str):
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=description, unit="config", leave=False, file=sys.stderr)
