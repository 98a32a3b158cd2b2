"""An interpreter every system account can run, for the multi-user tests.

Multi-user mode runs notebooks and jobs as ``yt-<name>`` accounts, so the platform's Python must
be installed where they can read it (docs/security.md). A developer machine or CI image may keep
it under ``/root`` (pyenv), which other accounts cannot enter. Then ``shared_bin()`` builds, once,
a copy of the base interpreter (standard library only) under ``/var/tmp`` whose ``site`` adds
this checkout's virtual environment, and console scripts (``jupyterhub``, ``jupyterhub-singleuser``,
``yitong-service``) pointing at it: the same packages, reachable by everyone. It changes no
permission on the machine. Where ``sys.executable`` is already reachable it is used as it is.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import sys
import sysconfig
import uuid
from pathlib import Path

VENV_BIN = Path(sys.executable).parent


def reachable(path: str | os.PathLike[str]) -> bool:
    real = Path(os.path.realpath(path))
    try:
        return bool(os.stat(real).st_mode & stat.S_IXOTH) and all(
            os.stat(p).st_mode & stat.S_IXOTH for p in real.parents
        )
    except OSError:
        return False


def _patch_runpath(binary: Path, old: str) -> None:
    """Point an absolute RUNPATH (``old``) at ``$ORIGIN/../lib`` in place (same length, NUL-padded)."""
    data = binary.read_bytes()
    new = b"$ORIGIN/../lib"
    needle = old.encode() + b"\0"
    if needle not in data or len(new) > len(old):
        return
    binary.write_bytes(data.replace(needle, new + b"\0" * (len(needle) - len(new))))


def shared_bin() -> Path:
    """A bin directory (python, jupyterhub, jupyterhub-singleuser, yitong-service, ...) that
    unprivileged accounts can execute."""
    if reachable(sys.executable):
        return VENV_BIN
    base = Path(os.path.realpath(sys.base_prefix))
    venv_site = Path(sysconfig.get_paths()["purelib"])
    key = hashlib.sha256(f"{base}|{sys.prefix}|{sys.version}".encode()).hexdigest()[:12]
    target = Path("/var/tmp") / f"yitong-shared-python-{key}"
    if (target / "ready").exists():
        return target / "bin"
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    tmp = target.with_name(f"{target.name}.tmp-{uuid.uuid4().hex}")
    (tmp / "bin").mkdir(parents=True)
    shutil.copy2(base / "bin" / version, tmp / "bin" / version)
    _patch_runpath(tmp / "bin" / version, str(base / "lib"))
    for name in ("python", "python3"):
        (tmp / "bin" / name).symlink_to(version)
    (tmp / "lib").mkdir()
    for lib in (base / "lib").glob("libpython*"):
        shutil.copy2(lib, tmp / "lib" / lib.name, follow_symlinks=False)
    shutil.copytree(
        base / "lib" / version,
        tmp / "lib" / version,
        symlinks=True,
        ignore=lambda d, names: [n for n in names if n in ("site-packages", "__pycache__", "test")],
    )
    site = tmp / "lib" / version / "site-packages"
    site.mkdir()
    (site / "yitong-venv.pth").write_text(f"import site; site.addsitedir({str(venv_site)!r})\n")
    shebang = f"#!{VENV_BIN}/python".encode()
    for script in VENV_BIN.iterdir():
        if script.is_file() and not script.is_symlink():
            head = script.read_bytes()
            if head.startswith(shebang):
                _first, _, rest = head.partition(b"\n")
                (tmp / "bin" / script.name).write_bytes(f"#!{target}/bin/{version}".encode() + b"\n" + rest)
                (tmp / "bin" / script.name).chmod(0o755)
    for root, _dirs, files in os.walk(tmp):
        os.chmod(root, 0o755)
        for f in files:
            p = os.path.join(root, f)
            if not os.path.islink(p):
                os.chmod(p, 0o755 if os.access(p, os.X_OK) else 0o644)
    (tmp / "ready").write_text("ok\n")
    try:
        os.rename(tmp, target)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)  # built at the same time by another run
    return target / "bin"
