"""A progress bar through tqdm or rich when one is installed (both optional), plain lines otherwise."""

from __future__ import annotations

import sys


class PlainProgress:
    def __init__(self, total: int, stream=None):
        # sys.stderr looked up now, not at import: a test may have replaced it since
        self.total, self.done, self.stream = total, 0, stream if stream is not None else sys.stderr

    def step(self, label: str) -> None:
        self.done += 1
        print(f"[{self.done}/{self.total}] {label}", file=self.stream, flush=True)

    def write(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def close(self) -> None:
        pass


class TqdmProgress:
    def __init__(self, total: int, tqdm):
        self.bar = tqdm(total=total, unit="kernel", dynamic_ncols=True, file=sys.stderr)
        self.tqdm = tqdm

    def step(self, label: str) -> None:
        self.bar.set_postfix_str(label)
        self.bar.update(1)

    def write(self, text: str) -> None:
        self.tqdm.write(text, file=sys.stderr)

    def close(self) -> None:
        self.bar.close()


class RichProgress:
    def __init__(self, total: int, rich_progress):
        self.progress = rich_progress.Progress(transient=False)
        self.progress.start()
        self.task = self.progress.add_task("rajaperf", total=total)

    def step(self, label: str) -> None:
        self.progress.update(self.task, advance=1, description=label)

    def write(self, text: str) -> None:
        self.progress.console.print(text, markup=False, highlight=False)

    def close(self) -> None:
        self.progress.stop()


def progress(total: int, kind: str = "auto"):
    """``kind``: "auto" (tqdm, else rich, else plain lines), "tqdm", "rich" or "plain"."""
    if kind in ("auto", "tqdm"):
        try:
            from tqdm import tqdm
            return TqdmProgress(total, tqdm)
        except ImportError:
            if kind == "tqdm":
                raise
    if kind in ("auto", "rich"):
        try:
            import rich.progress
            return RichProgress(total, rich.progress)
        except ImportError:
            if kind == "rich":
                raise
    return PlainProgress(total)
