"""The ``%yt`` line magic and ``%%yt`` cell magic: the ``yt`` grammar inside a kernel.

``%yt vc ls`` prints exactly what ``yt vc ls`` prints; refusals print the service's
sentence (no traceback); as in a shell, an unquoted ``#`` starts a comment (``%yt job ls  # mine``).
Only stdlib is imported here; the SDK imports httpx on first use.
In a notebook (a kernel with a frontend), ``%yt data commit|pull`` show an ipywidgets progress
bar instead of tqdm's text bar, ``%yt job logs --follow`` / ``job submit --follow`` show
the job's state in a widget, and ``%yt hpo show ID --follow`` / ``hpo create --follow`` an
experiment's progress, best value and trials (:mod:`yitong_lab.hpo.progress`).

``%%yt job submit [--vc VC] [--name NAME] [--procs N] ...`` runs the cell's body as a job
(:mod:`yitong_lab.jobs.cell`); ``%%yt`` with any other command is refused.
"""

from __future__ import annotations

import shlex


def yt(line: str, cell: str | None = None) -> None:
    """Run one ``yt`` command line, e.g. ``%yt vc ls`` or ``%yt vc show vision --json``;
    as a cell magic, ``%%yt job submit --vc vision`` submits the cell as a job."""
    from yitong_lab.cli.grammar import run

    try:
        argv = shlex.split(line, comments=True)
    except ValueError as error:
        import sys

        print(f"yt: {error}", file=sys.stderr)
        return
    run(argv, progress=progress_kind(), cell=cell)


def progress_kind() -> str:
    """``"widget"`` inside a Jupyter kernel (ipykernel's shell), ``"auto"`` elsewhere (IPython in
    a terminal shows tqdm, like ``yt``)."""
    import sys

    shell = sys.modules.get("IPython")
    ip = shell.get_ipython() if shell is not None and hasattr(shell, "get_ipython") else None
    if ip is not None and type(ip).__name__ == "ZMQInteractiveShell":
        try:
            import ipywidgets  # noqa: F401
        except ImportError:
            return "auto"
        return "widget"
    return "auto"


def register(ipython) -> None:
    ipython.register_magic_function(yt, magic_kind="line_cell", magic_name="yt")
