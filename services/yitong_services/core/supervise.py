"""``python -m yitong_services.core.supervise ARGS``: ``yitong-service ARGS`` as a child that is
started again within a second of dying of anything but a stop.

JupyterHub notices a managed service's exit only when it polls (every 30 s, JupyterHub's
``Spawner.poll_interval``, which its service spawner takes from no config), so a crash left the
API down for up to half a minute. The hub starts this supervisor instead (``hubconfig``): it
runs the service (``python -m yitong_services.core.app ARGS``) and, when the service ends without
being asked to, starts it again after :func:`delay` (0.5 s, doubling while it keeps dying young,
at most 10 s). A SIGTERM or SIGINT to the supervisor (the hub's stop, Ctrl-C) is passed on and
the supervisor ends with the service's status. The service dies with the supervisor
(``PR_SET_PDEATHSIG``: SIGTERM), so a kill -9 of the supervisor leaves no service behind.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence

log = logging.getLogger(__name__)

FIRST_DELAY = 0.5
MAX_DELAY = 10.0
#: a service that ran this long before dying is restarted after FIRST_DELAY again
HEALTHY_AFTER = 60.0
PR_SET_PDEATHSIG = 1


def delay(previous: float, ran_for: float) -> float:
    """Seconds to wait before the next start (pure): FIRST_DELAY after a run of HEALTHY_AFTER
    or more, else double the previous wait, at most MAX_DELAY."""
    if ran_for >= HEALTHY_AFTER or previous <= 0:
        return FIRST_DELAY
    return min(MAX_DELAY, previous * 2)


def child_command(argv: Sequence[str]) -> list[str]:
    """The service's own command: this interpreter, the same arguments."""
    return [sys.executable, "-m", "yitong_services.core.app", *argv]


def _die_with_parent() -> None:  # in the child, before exec
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() == 1:  # the supervisor died between fork and prctl
        os._exit(1)


def supervise(
    argv: Sequence[str],
    start: Callable[[list[str]], subprocess.Popen] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Run and restart the service (see module doc); returns its exit status once stopped."""
    command = child_command(argv)
    spawn = start or (lambda cmd: subprocess.Popen(cmd, preexec_fn=_die_with_parent))
    stopping: list[int] = []
    current: list[subprocess.Popen] = []

    def stop(signum: int, _frame: object) -> None:
        stopping.append(signum)
        for proc in current:
            if proc.poll() is None:
                proc.send_signal(signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    wait = 0.0
    while True:
        started = time.monotonic()
        proc = spawn(command)
        current[:] = [proc]
        if stopping:  # a stop arrived while it was being started
            proc.send_signal(stopping[0])
        code = proc.wait()
        if stopping:
            return code if code >= 0 else 128 - code
        ran_for = time.monotonic() - started
        wait = delay(wait, ran_for)
        how = f"signal {-code}" if code < 0 else f"status {code}"
        log.error("the service ended (%s) after %.1f s; starting it again in %.1f s", how, ran_for, wait)
        end = time.monotonic() + wait
        while not stopping and time.monotonic() < end:  # a stop meanwhile ends the wait
            sleep(min(0.1, wait))
        if stopping:
            return 0


def main(argv: list[str] | None = None) -> None:
    """Check the settings once (a mistake in them is said, not restarted), then supervise. The
    supervisor imports none of the service, so it stays small."""
    import argparse

    from .settings import SettingsError, load_settings

    argv = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=logging.INFO, format="[%(levelname)s %(asctime)s %(name)s] %(message)s")
    parser = argparse.ArgumentParser(prog="yitong-service (supervised)", add_help=False)
    parser.add_argument("--settings")
    parser.add_argument("--data-dir")
    known, _rest = parser.parse_known_args(argv)
    try:
        load_settings(known.settings, known.data_dir)
    except SettingsError as e:
        sys.exit(f"yitong-service: {e}")
    sys.exit(supervise(argv))


if __name__ == "__main__":  # pragma: no cover
    main()
