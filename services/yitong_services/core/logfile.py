"""The service's own log file (``<data_dir>/logs/yitong-service.log``), which survives a full disk."""

from __future__ import annotations

import logging
import logging.handlers
import sys


class LogFile(logging.handlers.RotatingFileHandler):
    """A rotated log file that, when it cannot be written (a full disk), says so once on stderr
    (the hub's log, which has every line too) instead of a traceback per line, and once more
    when it can be again."""

    failing = False  # the file could not take the last line
    _error: BaseException | None = None

    def emit(self, record: logging.LogRecord) -> None:
        self._error = None
        super().emit(record)  # a write's OSError reaches handleError, a flush's our flush
        if self._error is not None and not self.failing:
            self.failing = True
            sys.stderr.write(
                f"yitong-service: cannot write {self.baseFilename} ({self._error}); its lines go to this log only"
                " until it can\n"
            )
        elif self._error is None and self.failing:
            self.failing = False
            sys.stderr.write(f"yitong-service: {self.baseFilename} can be written again\n")

    def flush(self) -> None:
        try:
            super().flush()
        except OSError as error:
            self._error = error

    def handleError(self, record: logging.LogRecord) -> None:
        self._error = sys.exc_info()[1]

    def close(self) -> None:
        try:
            super().close()
        except OSError:  # the lines a full disk did not take (stderr's log has them)
            pass
