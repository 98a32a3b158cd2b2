"""What a person reads when the disk refuses a dataset's tree (materialize.py: the object cache,
the materialised tree, a job's copy of its inputs): the dataset path they gave and which of the
platform's folders refused it, never the server's own paths, as a :class:`Refusal`: 507 when the
disk is full, 422 when the path cannot be written on that disk (a name or a path too long, a name
that is a file in one place and a folder in another), 409 for the rest (the folder's permissions:
an administrator's to fix).
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator

from ..core.errors import FULL_ERRNOS, Refusal

#: what a person calls the folders of materialize.py
CACHE = "the dataset cache"
TREES = "the folder datasets are materialised in"
JOB = "the job's folder"

#: errnos of a path the disk cannot hold as it is (the person's to change)
PATH_ERRNOS = {errno.ENAMETOOLONG, errno.ELOOP, errno.ENOTDIR, errno.EISDIR, errno.EEXIST}


class TreeError(Refusal):
    """An OS error while writing a dataset's tree, as a sentence without server paths."""


def shown(path: str, limit: int = 80) -> str:
    return path if len(path) <= limit else f"{path[: limit // 2]}...{path[-(limit // 2) :]}"


def refusal(exc: OSError, where: str, path: str = "") -> TreeError:
    """The refusal of ``exc`` (pure): ``path`` the dataset path being written (empty: the tree's
    own folder), ``where`` the folder's name (CACHE, TREES, JOB)."""
    what = f"dataset path '{shown(path)}'" if path else "the dataset's tree"
    cause = os.strerror(exc.errno) if exc.errno else "the disk refused it"
    if exc.errno in FULL_ERRNOS:
        return TreeError(507, f"{where} is full: {what} could not be written; an administrator must free space there")
    if exc.errno == errno.ENAMETOOLONG:
        return TreeError(
            422,
            f"{what} cannot be written in {where}: the path or one of its names is longer than that disk"
            " allows; commit a version with a shorter path",
        )
    if exc.errno in PATH_ERRNOS:
        return TreeError(
            422, f"{what} cannot be written in {where} ({cause.lower()}); commit a version with another path"
        )
    return TreeError(
        409, f"{what} could not be written in {where} ({cause.lower()}); an administrator must check that folder"
    )


@contextlib.contextmanager
def writing(where: str, path: str = "") -> Iterator[None]:
    """OS errors inside become :func:`refusal`'s (chained: the log keeps the server's path)."""
    try:
        yield
    except TreeError:
        raise
    except OSError as e:
        if e.errno is None:  # not the disk's (a corrupt object): as it is
            raise
        raise refusal(e, where, path) from e
