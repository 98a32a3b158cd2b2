"""Read-only trees of versions for jobs and kernels, hardlinked from a local object cache.

``<cache>/objects/<h[:2]>/<h>`` holds each object once (0444, filled from the store and
checked against its hash on the way; of two concurrent fillers, the first keeps its copy).
``<materialized>/<manifest-hash>/`` is built in a ``.tmp-<uuid>`` directory (hardlinks; copies
where the cache is on another filesystem), made read-only (files 0444, directories 0555) and
renamed into place, so a crash never leaves a half tree. Both roots are 0700 (the platform's
account only): in multi-user mode a job reaches its inputs only through ``link_trees``' copy of
links inside its own 0700 directory, owned by the platform, so it can neither write, chmod,
unlink nor rename the bytes another job reads.
Blocking: call from a worker thread.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

from blake3 import blake3

from .objindex import locate
from .storage import Storage
from .tree_errors import CACHE, JOB, TREES, writing

LINK_ERRORS = {errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EACCES}


def cache_path(cache_dir: Path, h: str) -> Path:
    return cache_dir / "objects" / h[:2] / h


def fill_cache(storage: Storage, hashes: list[str]) -> None:
    """Copy every object not yet cached from the store, checking its hash."""
    todo = [h for h in hashes if not cache_path(storage.cache_dir, h).exists()]
    if not todo:
        return
    with storage.db.session() as s:
        found = locate(s, todo)
    for h in todo:
        if h not in found:
            raise FileNotFoundError(f"object {h} is not in the store")
        target = cache_path(storage.cache_dir, h)
        tmp = target.with_name(f"{h}.tmp-{uuid.uuid4().hex}")
        hasher = blake3()
        try:
            with writing(CACHE):
                _private(storage.cache_dir)
                target.parent.mkdir(parents=True, exist_ok=True)
                with open(tmp, "wb") as f:
                    for chunk in storage.chunks(found[h]):
                        hasher.update(chunk)
                        f.write(chunk)
                if hasher.hexdigest() != h:
                    raise OSError(f"object {h} in the store is corrupt (BLAKE3 {hasher.hexdigest()})")
                os.chmod(tmp, 0o444)
                _install(tmp, target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


def _install(tmp: Path, target: Path) -> None:
    """Give ``tmp`` the name ``target`` unless another filler got there first. A copy already in
    place is never replaced: a tree being built may be linking to it this moment, and link(2)
    fails with ENOENT on a file whose last name a rename has just taken."""
    try:
        os.link(tmp, target)
    except FileExistsError:
        pass
    except OSError as e:
        if e.errno not in LINK_ERRORS:
            raise
        os.replace(tmp, target)  # no hardlinks here, so trees are copies and nothing links to it


def _private(root: Path) -> None:
    """A root of the platform's: created 0700, and kept 0700."""
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    if os.stat(root).st_mode & 0o077:
        os.chmod(root, 0o700)


def link_trees(sources: dict[str, Path], staging_root: Path, target: Path) -> dict[str, str]:
    """Put a copy (hardlinks) of each read-only tree ``sources[name]`` at ``target/<name>``, where
    ``target`` may lie in a directory the job's account owns; returns ``{name: path}``.

    The copy is built in a fresh platform-owned directory under ``staging_root`` (0700, on the
    same filesystem as ``target``), made read-only (files stay 0444 and the platform's,
    directories 0555) and renamed to ``target``: rename(2) never follows a symlink the job may
    have planted there, and an existing non-empty ``target`` is an error, not a merge.
    """
    with writing(JOB):
        _private(staging_root)
        tmp = staging_root / f".tmp-{uuid.uuid4().hex}"
        tmp.mkdir(mode=0o700)
    try:
        dirs = [tmp]
        for name, src in sources.items():
            if "/" in name or name.startswith("."):
                raise ValueError(f"input mount {name!r} is not a plain name")
            with writing(JOB):
                (tmp / name).mkdir(mode=0o700)
            dirs.append(tmp / name)
            for root, subdirs, files in os.walk(src):
                rel = os.path.relpath(root, src)
                here = tmp / name / rel
                for sub in subdirs:
                    with writing(JOB, _dataset_path(rel, sub)):
                        (here / sub).mkdir(mode=0o700)
                    dirs.append(here / sub)
                for f in files:
                    with writing(JOB, _dataset_path(rel, f)):
                        _place(Path(root) / f, here / f)
        with writing(JOB):
            for d in sorted(dirs, key=lambda p: len(p.parts), reverse=True):  # deepest first
                os.chmod(d, 0o555)
            os.rename(tmp, target)
    except BaseException:
        remove_tree(tmp)
        raise
    return {name: str(target / name) for name in sources}


def _dataset_path(rel: str, name: str) -> str:
    return name if rel == "." else f"{rel}/{name}"


def _place(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError as e:
        if e.errno not in LINK_ERRORS:
            raise
        shutil.copyfile(src, dst)
        os.chmod(dst, 0o444)


def remove_tree(path: Path) -> None:
    """Delete a read-only tree (directories are 0555)."""
    if not path.exists():
        return
    for root, dirs, _files in os.walk(path):
        os.chmod(root, 0o755)
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
    shutil.rmtree(path, ignore_errors=True)


def build_tree(cache_dir: Path, target: Path, manifest: dict[str, Any]) -> None:
    """The tree of ``manifest`` at ``target``; an OS error is a refusal naming the dataset path
    (tree_errors.py)."""
    with writing(TREES):
        target.mkdir(parents=True)
    dirs = {target}
    for f in manifest["files"]:
        with writing(TREES, f["path"]):
            dst = target.joinpath(*f["path"].split("/"))
            if dst.parent not in dirs:
                dst.parent.mkdir(parents=True, exist_ok=True)
                dirs.add(dst.parent)
            _place(cache_path(cache_dir, f["hash"]), dst)
    with writing(TREES):
        for d in sorted(dirs, key=lambda p: len(p.parts), reverse=True):
            os.chmod(d, 0o555)


def materialize(storage: Storage, manifest_hash: str) -> Path:
    """The read-only tree of a manifest, built once."""
    final = storage.materialize_dir / manifest_hash
    if final.exists():
        return final
    manifest = storage.manifest(manifest_hash)
    fill_cache(storage, sorted({f["hash"] for f in manifest["files"]}))
    with writing(TREES):
        _private(storage.materialize_dir)
    tmp = storage.materialize_dir / f".tmp-{uuid.uuid4().hex}"
    try:
        build_tree(storage.cache_dir, tmp, manifest)
        with writing(TREES):
            os.chmod(tmp, 0o755)  # renaming a directory needs it writable
            try:
                os.rename(tmp, final)
            except OSError as e:
                if e.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
            else:
                os.chmod(final, 0o555)
    finally:
        remove_tree(tmp)
    return final
