"""The local side of a dataset: walk a directory (``os.scandir``), hash what the stat cache does
not know (BLAKE3 in a thread pool, streaming, never a whole big file in memory).

A scanned file is a plain tuple ``(path, size, mtime_ns, inode)`` (``path`` relative to the
root, ``/``-separated): 70,000 of them must cost little more than the 70,000 ``stat`` calls.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from yitong_lab.datasets.statcache import Stat

SMALL = 1 << 20  # read in one call up to this size; mmap in 64 MiB windows above
WINDOW = 64 << 20
SINK_FILES = 8192  # freshly hashed small files are handed on in batches of this many
SINK_BYTES = 32 << 20  # ... or of this many bytes
PARTIAL_MARKERS = (".yt-tmp-", ".yt-part-")  # our own temporary files (pull): never content

Scanned = tuple[str, int, int, int]  # (path, size, mtime_ns, inode)
LINK = -1  # the size of a symbolic link in a scan that lists links (never an object's size)
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class LinkRefused(ValueError):
    """A commit met a symbolic link: links are never followed (nor stored) in a commit."""

    def __init__(self, path: str, target: str) -> None:
        self.path = path
        super().__init__(
            f"{path} is a symbolic link (to {target}): a commit never follows links; copy what it "
            "points to into the directory, or remove the link"
        )


def _target(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def base_dir(root: str) -> str:
    """The directory manifest paths are relative to: ``root`` itself, or a single file's folder."""
    root = os.path.abspath(root)
    return os.path.dirname(root) if os.path.isfile(root) else root


def scan(root: str, links: str = "refuse") -> list[Scanned]:
    """Every regular file under ``root``, sorted by path (= UTF-8 byte order). A symbolic link
    under ``root`` is never followed: ``links="refuse"`` (commits) raises :class:`LinkRefused`
    naming it, ``links="list"`` (pull) lists it with size :data:`LINK`, which matches no file of
    a version, so a pull replaces the link itself and never writes through it. Other special
    files (FIFOs, sockets, devices) are skipped. ``root`` itself is what the caller named and
    may be a link. A single file is a tree of one: its name, relative to :func:`base_dir`."""
    root = os.path.abspath(root)
    if os.path.isfile(root):
        st = os.stat(root)
        return [(os.path.basename(root), st.st_size, st.st_mtime_ns, st.st_ino)]
    if not os.path.isdir(root):
        raise NotADirectoryError(f"{root} is neither a directory nor a file")
    files: list[Scanned] = []
    add = files.append
    stack = [(root, "")]
    while stack:
        directory, prefix = stack.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.is_symlink():
                    if links == "refuse":
                        raise LinkRefused(prefix + entry.name, _target(entry.path))
                    st = entry.stat(follow_symlinks=False)
                    add((prefix + entry.name, LINK, st.st_mtime_ns, st.st_ino))
                elif entry.is_dir(follow_symlinks=False):
                    stack.append((entry.path, f"{prefix}{entry.name}/"))
                elif entry.is_file(follow_symlinks=False):
                    st = entry.stat(follow_symlinks=False)
                    add((prefix + entry.name, st.st_size, st.st_mtime_ns, st.st_ino))
    files.sort()
    return files


def local_path(root: str, path: str) -> str:
    """The local file of manifest path ``path`` under ``root``."""
    return f"{root}/{path}" if os.sep == "/" else os.path.join(root, *path.split("/"))


def stat_of(path: str) -> Stat:
    """The file's own stat (a link's, never its target's)."""
    st = os.lstat(path)
    return Stat(st.st_size, st.st_mtime_ns, st.st_ino)


def open_nofollow(path: str) -> int:
    """A read descriptor of ``path``; a file replaced by a symbolic link since the scan is
    refused (:class:`LinkRefused`), never followed."""
    try:
        return os.open(path, os.O_RDONLY | NOFOLLOW | getattr(os, "O_BINARY", 0))
    except OSError:
        if os.path.islink(path):
            raise LinkRefused(path, _target(path)) from None
        raise


def hash_path(path: str, size: int, progress: Callable[[int], None] | None = None) -> str:
    """BLAKE3 hex of one file: small ones in one read, big ones through mmap windows with all
    cores (``max_threads=AUTO``)."""
    import blake3

    if size <= SMALL:
        with open(open_nofollow(path), "rb") as f:
            data = f.read()
        if progress:
            progress(len(data))
        return blake3.blake3(data).hexdigest()
    import mmap

    hasher = blake3.blake3(max_threads=blake3.blake3.AUTO)
    with open(open_nofollow(path), "rb") as f:
        length = os.fstat(f.fileno()).st_size
        if length == 0:
            return hasher.hexdigest()
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            view = memoryview(mm)
            try:
                for offset in range(0, length, WINDOW):
                    block = view[offset : offset + WINDOW]
                    hasher.update(block)
                    block.release()
                    if progress:
                        progress(min(WINDOW, length - offset))
            finally:
                view.release()
    return hasher.hexdigest()


def _hash_small(path: str, stat: tuple[int, int, int]) -> tuple[str, tuple[int, int, int], bytes] | None:
    """One read, then ``fstat`` of the same descriptor: ``None`` when the file is not the one
    that was scanned any more (the caller hashes it again the careful way). Plain ``os`` calls:
    a Python file object costs as much as the read and the hash of a 4 KiB file together."""
    from blake3 import blake3

    size = stat[0]
    fd = open_nofollow(path)
    try:
        data = os.read(fd, size + 1)  # one byte more: a file that grew is noticed
        while len(data) < size:  # a short read (network filesystems): go on to the end
            more = os.read(fd, size + 1 - len(data))
            if not more:
                break
            data += more
        st = os.fstat(fd)
    finally:
        os.close(fd)
    after = (st.st_size, st.st_mtime_ns, st.st_ino)
    if after != stat or len(data) != st.st_size:
        return None
    return blake3(data).hexdigest(), after, data


def _hash_small_batch(
    root: str, batch: list[Scanned], keep: bool
) -> list[tuple[str, tuple[int, int, int], str, bytes | None]]:
    """``(path, stat, hash, bytes or None)`` of small files: :func:`_hash_small` unrolled into
    one loop (per file: ``open``, one ``read``, ``fstat``, ``close``, one BLAKE3 call, one
    tuple), as at 4 KiB a Python call or an object per file costs as much as the hash. A file
    that is not as scanned any more (or cannot be opened) goes the careful way
    (:func:`_hash_checked`), which also names a link that replaced it."""
    from blake3 import blake3

    flags = os.O_RDONLY | NOFOLLOW | getattr(os, "O_BINARY", 0)
    prefix = root + "/" if os.sep == "/" else None
    out: list[tuple[str, tuple[int, int, int], str, bytes | None]] = []
    add = out.append
    read, fstat, close, open_ = os.read, os.fstat, os.close, os.open
    for file in batch:
        path, size, mtime, inode = file
        st = None
        try:
            fd = open_(prefix + path if prefix is not None else local_path(root, path), flags)
        except OSError:
            pass
        else:
            try:
                data = read(fd, size + 1)  # one byte more: a file that grew is noticed
                if len(data) == size:
                    st = fstat(fd)
            finally:
                close(fd)
        if st is None or st.st_size != size or st.st_mtime_ns != mtime or st.st_ino != inode:
            digest, stat, got = _hash_checked(root, file, None)  # short reads, changes, links
            add((path, stat, digest, got if keep else None))
            continue
        add((path, (size, mtime, inode), blake3(data).hexdigest(), data if keep else None))
    return out


def _hash_checked(
    root: str, file: Scanned, progress: Callable[[int], None] | None
) -> tuple[str, tuple[int, int, int], bytes | None]:
    """Hash, then stat again: a file written meanwhile is hashed once more, then refused.
    ``(hash, stat, the bytes read)``; the bytes only for small files (read whole anyway)."""
    path = local_path(root, file[0])
    if file[1] <= SMALL:
        done = _hash_small(path, file[1:])
        if done is not None:
            if progress:
                progress(file[1])
            return done
    stat = stat_of(path)
    for _ in range(2):
        digest = hash_path(path, stat.size, progress)
        after = stat_of(path)
        if after == stat:
            return digest, after, None
        stat = after
    raise OSError(f"{path} keeps changing while it is being read: commit it once it is written")


def hash_files(
    root: str,
    files: list[Scanned],
    cache,
    progress=None,
    workers: int | None = None,
    sink: Callable[[list[tuple]], None] | None = None,
) -> dict[str, str]:
    """``{path: hash}`` for ``files`` (scanned under ``root``): stat-cache hits cost nothing, the
    rest are hashed and go into ``cache`` in one transaction. ``progress``: a
    :class:`~yitong_lab.datasets.progress.Progress` (phase ``hash``, in bytes). ``sink`` gets
    the freshly hashed ``(path, stat, hash, bytes or None)`` rows as they come, in batches of
    up to :data:`SINK_FILES` files or :data:`SINK_BYTES` (a commit uploads them meanwhile,
    small files from the bytes already read)."""
    if not files:
        return {}
    root = os.path.abspath(root)
    known = cache.load(root)
    hashes: dict[str, str] = {}
    todo: list[Scanned] = []
    for file in files:
        hit = known.get(file[0])
        if hit is not None and hit[:3] == file[1:]:
            hashes[file[0]] = hit[3]
        else:
            todo.append(file)
    if not todo:
        return hashes
    advance = None
    if progress is not None:
        progress.start("hash", sum(f[1] for f in todo))
        advance = progress.update

    def run(batch: list[Scanned]) -> list[tuple[str, tuple[int, int, int], str, bytes | None]]:
        out = []
        for file in batch:
            digest, stat, data = _hash_checked(root, file, advance)
            out.append((file[0], stat, digest, data if sink is not None else None))
        return out

    def run_small(batch: list[Scanned]) -> list[tuple[str, tuple[int, int, int], str, bytes | None]]:
        rows = _hash_small_batch(root, batch, keep=sink is not None)
        if advance is not None:
            advance(sum(f[1] for f in batch))
        return rows

    # Small files are hashed here, one after the other: with the GIL handed back and forth on
    # every read, two threads took 1.7 s and four 2.3 s for 70,000 files of 4 KiB where one took
    # 1.2 s (2 cores). Big files release the GIL for their whole hash and go to a small pool.
    fresh: list[tuple[str, tuple[int, int, int], str]] = []

    def done(rows: list[tuple[str, tuple[int, int, int], str, bytes | None]]) -> None:
        fresh.extend(row[:3] for row in rows)
        if sink is not None:
            sink(rows)

    batch: list[Scanned] = []
    size = 0
    for file in todo:
        if file[1] <= SMALL:
            batch.append(file)
            size += file[1]
            if len(batch) >= SINK_FILES or size >= SINK_BYTES:
                done(run_small(batch))
                batch, size = [], 0
    if batch:
        done(run_small(batch))
    big = [[f] for f in todo if f[1] > SMALL]
    if len(big) == 1:
        done(run(big[0]))
    elif big:
        workers = workers or min(4, os.cpu_count() or 1)
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="yt-hash") as pool:
            for rows in pool.map(run, big):
                done(rows)
    for path, _stat, digest in fresh:
        hashes[path] = digest
    cache.store(root, fresh)
    return hashes
