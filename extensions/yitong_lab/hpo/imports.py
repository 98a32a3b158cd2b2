"""The packages an NNI trial's code imports (pure, stdlib only), for the importer's notes.

``yt hpo create --from config.yml`` reads ``trialCodeDirectory`` here, on the person's side: the
top-level names its ``.py`` files import, less the standard library and the directory's own
modules, go to the service with the config (``yitong.trial_imports``), which says in a note which
of them the trials' environment lacks (``No module named 'lightgbm'`` before the first trial, not
after it). Bounded: at most ``MAX_FILES`` files of at most ``MAX_BYTES`` each, ``MAX_DEPTH``
folders down; a file that does not parse is skipped.
"""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

MAX_FILES = 300
MAX_BYTES = 1 << 20
MAX_DEPTH = 3
MAX_NAMES = 100
SKIP_DIRS = {".git", "__pycache__", "node_modules", ".venv", "venv", ".tox", "build", "dist", ".ipynb_checkpoints"}


def _names(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module.split(".")[0])
    return out


def trial_imports(directory: str | os.PathLike[str]) -> list[str]:
    """The third-party top-level modules the code under ``directory`` imports, sorted."""
    root = Path(directory)
    if not root.is_dir():
        return []
    found: set[str] = set()
    local: set[str] = set()
    files = 0
    for here, dirs, names in os.walk(root):
        depth = len(Path(here).relative_to(root).parts)
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith(".")) if depth < MAX_DEPTH else []
        local.update(dirs)
        for name in sorted(names):
            if not name.endswith(".py") or files >= MAX_FILES:
                continue
            local.add(name[:-3])
            path = Path(here) / name
            try:
                if path.stat().st_size > MAX_BYTES:
                    continue
                files += 1
                found |= _names(path.read_text(errors="replace"))
            except OSError:
                continue
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    return sorted(n for n in found - local - stdlib if n.isidentifier())[:MAX_NAMES]
