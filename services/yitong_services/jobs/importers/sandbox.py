"""What an imported job's commands expect that a Yitong job does not give: notes, not refusals.

Upstream jobs often run as root in a container with internet access: they ``apt-get install``
or ``pip install`` into the image, ``mkdir /data``, ``mount`` a share (``SYS_ADMIN``), download
their data with ``wget``, or name OpenPAI's host names (``-H master-0:4``). A Yitong job runs as
the person (never root, no added capabilities: Kubernetes pods drop every capability and set
``runAsNonRoot``), writes its working directory, its outputs and ``/tmp``, and on Kubernetes
reaches only the hub (the VC's NetworkPolicy; an admin may open a package mirror). Each command
line that would fail for one of these reasons gets one note saying which and what to do instead.
The job still imports: whether a line matters (an ``apt-get`` behind ``|| true``) is the person's
call.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

WRITABLE = ("/tmp", "/dev/shm", "/dev/null", "/home", "/work", "/scratch")

ROOT = re.compile(r"(^|[\s;&|(])(sudo|su\s+-|useradd|adduser|chown\s+root|chmod\s+[0-7]*\s+/(usr|etc|opt))\b")
INSTALL = re.compile(
    r"(^|[\s;&|(])((apt-get|apt|yum|dnf|apk|zypper)\s+(-\S+\s+)*(install|add)"
    r"|dpkg\s+-i|conda\s+install|mamba\s+install|make\s+install)\b"
)
PIP = re.compile(r"(^|[\s;&|(])(pip3?|python\S*\s+-m\s+pip)\s+install\b(?P<rest>[^;&|\n]*)")
CAPS = re.compile(r"(^|[\s;&|(])(mount|umount|modprobe|sysctl\s+-w|ip\s+link|iptables)\b")
DOWNLOAD = re.compile(
    r"(^|[\s;&|(])((wget|curl|aria2c|axel)\b[^;&|\n]*\b(https?|ftp)://\S+"
    r"|git\s+clone\s+\S*(https?://|git@)\S+|hf\s+download|huggingface-cli\s+download)"
)
MKDIR_ROOT = re.compile(r"(^|[\s;&|(])(mkdir|cd|cp|mv|ln|tar\s+\S*\s+-C)\s+(-\S+\s+)*(?P<path>/[A-Za-z][^\s;&|]*)")
PRIVILEGED_KEYS = ("privileged", "SYS_ADMIN", "CAP_SYS_ADMIN", "ALL")

ROOT_NOTE = "runs {what}, which needs root; a Yitong job runs as you, never as root: use an image that already has what it sets up"
INSTALL_NOTE = (
    "installs packages into the image ({what}), which needs root; a Yitong job runs as you: use an image "
    "(environment.image) that has them, or install them into a directory of yours on PYTHONPATH (docs/hpo.md, Packages)"
)
PIP_NOTE = (
    "pip install {what} downloads from PyPI, which jobs on Kubernetes cannot reach (a VC reaches only the hub "
    "unless an admin opens a package mirror) and writes into the image unless --user: use an image or "
    "environment that has the packages"
)
CAPS_NOTE = (
    "runs {what}, which needs SYS_ADMIN or another capability; a Yitong job has none (put the data in a "
    "Yitong dataset and list it in inputs instead of mounting it)"
)
DOWNLOAD_NOTE = (
    "downloads from the internet ({what}); jobs on Kubernetes reach only the hub (the VC's NetworkPolicy): "
    "put what it fetches in a Yitong dataset (inputs), the job's code directory or the image"
)
ROOT_PATH_NOTE = (
    "writes under {what}, which a job running as you cannot create; use a path under the working "
    "directory, $YITONG_OUTPUT_DIR or /tmp"
)


def _code(line: str) -> str:
    return line.split("#", 1)[0] if not line.lstrip().startswith("#!") else ""


def command_notes(text: str, where: str) -> list[str]:
    """One note per thing in ``text`` (shell commands) that needs root, a capability or the internet."""
    notes: list[str] = []

    def add(template: str, what: str) -> None:
        note = f"{where}: " + template.format(what=what)
        if note not in notes:
            notes.append(note)

    for line in text.splitlines():
        code = _code(line)
        if m := ROOT.search(code):
            add(ROOT_NOTE, m.group(2).split()[0])
        if m := INSTALL.search(code):
            add(INSTALL_NOTE, " ".join(m.group(2).split()[:1] + m.group(2).split()[-1:]))
        if (m := PIP.search(code)) and not re.search(r"(^|\s)(-e|--user|--no-index|-r|\.)(\s|$)", m["rest"]):
            add(PIP_NOTE, " ".join(m["rest"].split()[:3]) or "packages")
        if m := CAPS.search(code):
            add(CAPS_NOTE, m.group(2).split()[0])
        if m := DOWNLOAD.search(code):
            words = m.group(2).split()
            tool = words[:2] if words[0] in ("git", "hf", "huggingface-cli") else words[:1]
            add(DOWNLOAD_NOTE, " ".join(tool + [u for u in words if "://" in u or u.startswith("git@")][:1]))
        if (m := MKDIR_ROOT.search(code)) and not m["path"].startswith(WRITABLE):
            add(ROOT_PATH_NOTE, "/" + m["path"].strip("/").split("/")[0])
    return notes


def host_name_notes(text: str, roles: Iterable[str], instances: dict[str, int], where: str) -> list[str]:
    """OpenPAI names a task's host ``<role>-<index>`` (``horovodrun -H master-0:4``); no such name
    resolves here, so each one used gets a note with the variable that holds its address."""
    notes = []
    for role in roles:
        for m in re.finditer(rf"(?<![\w./-]){re.escape(role)}-(\d+)(?![\w.-])", text):
            name, index = m.group(0), int(m.group(1))
            if index >= instances.get(role, 1):
                continue
            note = (
                f"{where}: {name} is an OpenPAI host name, which does not resolve on Yitong: "
                f"use $PAI_HOST_IP_{role}_{index} (set on every node)"
            )
            if note not in notes:
                notes.append(note)
    return notes


def privilege_notes(value: Any, where: str) -> list[str]:
    """Notes for a container's ``securityContext`` (or an OpenPAI role's container options) that asks
    for root, privileged mode or added capabilities."""
    if not isinstance(value, dict):
        return []
    notes = []
    caps = (value.get("capabilities") or {}).get("add") or []
    if value.get("privileged") is True:
        notes.append(f"{where}.privileged: a Yitong job never runs privileged; it runs as you, without capabilities")
    if isinstance(caps, list) and caps:
        notes.append(
            f"{where}.capabilities.add: {', '.join(map(str, caps))} not granted; a Yitong job runs without capabilities"
        )
    if value.get("runAsUser") == 0 or value.get("runAsNonRoot") is False:
        notes.append(f"{where}: asks to run as root; a Yitong job runs as you, never as root")
    return notes
