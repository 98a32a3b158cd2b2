"""Progress of a commit or pull, phase by phase (``hash``, ``upload``, ``download``): a tqdm bar
in a terminal, an ipywidgets bar in a notebook, a callback for the server extension's tasks.

``make(kind)``: ``"auto"`` (tqdm on a terminal's stderr, nothing otherwise), ``"tqdm"``,
``"widget"``, ``None``/``"none"``, a :class:`Progress`, or a callable
``f(phase, done, total)``. tqdm and ipywidgets are imported only when a bar is shown.
Updates may come from several threads.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any


class Progress:
    """No output; the base of the others. ``start(phase, total)``, ``update(n)``, ``close()``."""

    def __init__(self) -> None:
        self.phase, self.total, self.done = "", 0, 0
        self._lock = threading.Lock()

    def start(self, phase: str, total: int) -> None:
        with self._lock:
            self.phase, self.total, self.done = phase, total, 0
            self._started()

    def update(self, n: int) -> None:
        with self._lock:
            self.done += n
            self._advanced(n)

    def close(self) -> None:
        with self._lock:
            self._closed()

    def _started(self) -> None:
        pass

    def _advanced(self, n: int) -> None:
        pass

    def _closed(self) -> None:
        pass


LABELS = {"hash": "hashing", "upload": "uploading", "download": "downloading"}


class TqdmProgress(Progress):
    def __init__(self, force: bool = False) -> None:
        super().__init__()
        self._bar: Any = None
        self._force = force

    def _started(self) -> None:
        from tqdm import tqdm

        self._closed()
        self._bar = tqdm(
            total=self.total,
            desc=LABELS.get(self.phase, self.phase),
            unit="B",
            unit_scale=True,
            unit_divisor=1024,
            file=sys.stderr,
            leave=False,
            disable=None if not self._force else False,
            dynamic_ncols=True,
        )

    def _advanced(self, n: int) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def _closed(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


class WidgetProgress(Progress):
    """One ``IntProgress`` + label, displayed once, reused by each phase; redrawn at most 10x/s."""

    def __init__(self) -> None:
        super().__init__()
        self._box: Any = None
        self._last = 0.0

    def _started(self) -> None:
        import ipywidgets
        from IPython.display import display

        if self._box is None:
            self._bar = ipywidgets.IntProgress(min=0, max=1, value=0)
            self._label = ipywidgets.Label("")
            self._box = ipywidgets.HBox([self._bar, self._label])
            self._box.add_class("yt-progress")
            display(self._box)
        self._draw(force=True)

    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if self._box is None or (not force and now - self._last < 0.1 and self.done < self.total):
            return
        self._last = now
        self._bar.max = max(self.total, 1)
        self._bar.value = min(self.done, self.total)
        self._bar.description = LABELS.get(self.phase, self.phase)
        from yitong_lab.units import format_amount

        self._label.value = f"{format_amount('memory', self.done)} / {format_amount('memory', self.total)}"

    def _advanced(self, n: int) -> None:
        self._draw()

    def _closed(self) -> None:
        if self._box is not None:
            self._draw(force=True)
            self._bar.bar_style = "success"


class CallbackProgress(Progress):
    def __init__(self, callback: Callable[[str, int, int], None]) -> None:
        super().__init__()
        self._callback = callback

    def _started(self) -> None:
        self._callback(self.phase, 0, self.total)

    def _advanced(self, n: int) -> None:
        self._callback(self.phase, self.done, self.total)


def make(kind: Any = "auto") -> Progress:
    if isinstance(kind, Progress):
        return kind
    if callable(kind):
        return CallbackProgress(kind)
    if kind == "widget":
        return WidgetProgress()
    if kind == "tqdm":
        return TqdmProgress(force=True)
    if kind == "auto" and getattr(sys.stderr, "isatty", lambda: False)():
        return TqdmProgress()
    return Progress()
