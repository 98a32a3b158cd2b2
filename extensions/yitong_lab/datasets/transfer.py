"""Moving objects between this machine and the store (docs/architecture.md, "Datasets").

Up: ``POST /objects/missing`` in chunks, small objects as streamed packs (≤ 64 MiB each),
big ones with the resumable ``HEAD``/``PATCH .../upload`` protocol, retrying from the
service's ``Upload-Offset`` after a dropped connection. Down: small objects as pack streams
from ``.../fetch``, big ones from ``.../objects/{hash}`` with ``Range`` resume. A few
requests run in parallel in a small thread pool (one shared, thread-safe httpx client).
"""

from __future__ import annotations

import itertools
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from functools import partial
from typing import Any

from yitong_lab.client import YitongError
from yitong_lab.datasets.packs import HEADER, Item, PackDecoder, body_length, pack_body

LARGE = 1 << 20  # bigger objects go up loose (the service's default pack_threshold)
PACK_LIMIT = 64 << 20
PATCH_BLOCK = 128 << 20  # one PATCH (and one fsync on the service) per this many bytes
MISSING_CHUNK = 100_000
FETCH_HASHES = 10_000
RETRIES = 6
WORKERS = 4
BLOCK = 1 << 20
SEND_BLOCK = 4 << 20  # reads of a big file for its PATCH bodies
HELD = 256 << 20  # bytes read while hashing that may wait in memory for their upload


def plan_packs(items: list[Item], limit: int = PACK_LIMIT) -> list[list[Item]]:
    """Group small objects into packs whose body (records included) stays ≤ ``limit``."""
    packs: list[list[Item]] = []
    current: list[Item] = []
    size = 0
    for item in items:
        record = HEADER + item.size
        if current and size + record > limit:
            packs.append(current)
            current, size = [], 0
        current.append(item)
        size += record
    if current:
        packs.append(current)
    return packs


def _timeout() -> Any:
    import httpx

    return httpx.Timeout(60.0, read=600.0, write=600.0)


def _retrying(what: str, attempt: Callable[[], Any]) -> Any:
    """Call ``attempt`` again after a dropped connection (backoff), up to RETRIES times."""
    import httpx

    for tries in range(RETRIES + 1):
        try:
            return attempt()
        except httpx.TransportError as error:
            if tries == RETRIES:
                raise YitongError(0, f"{what} failed after {RETRIES} retries: {error}") from None
            time.sleep(min(0.2 * 2**tries, 5.0))


def _ask_missing(client: Any, hashes: list[str]) -> Any:
    return client.request("POST", "/objects/missing", json={"hashes": hashes})


def missing(client: Any, hashes: list[str]) -> set[str]:
    out: set[str] = set()
    for i in range(0, len(hashes), MISSING_CHUNK):
        chunk = hashes[i : i + MISSING_CHUNK]
        out.update(_retrying("asking for missing objects", partial(_ask_missing, client, chunk))["missing"])
    return out


def _for_vc(vc: str | None) -> dict[str, str]:
    """The ``?vc=`` an upload names: the service checks it against the VC's storage quota
    before any byte is written (413 with its sentence) and charges the VC for the bytes."""
    return {"vc": vc} if vc else {}


def upload_pack(client: Any, items: list[Item], progress: Any, vc: str | None = None) -> None:
    http, sent = client.http(), [0]

    def counted(n: int) -> None:
        sent[0] += n
        progress.update(n)

    def attempt() -> None:
        progress.update(-sent[0])
        sent[0] = 0
        response = http.post(
            client.url + "/objects/pack",
            content=pack_body(items, counted),
            headers={"Content-Type": "application/octet-stream", "Content-Length": str(body_length(items))},
            params=_for_vc(vc),
            timeout=_timeout(),
        )
        client.check(response)

    _retrying(f"uploading a pack of {len(items)} files", attempt)


def _file_range(path: str, start: int, end: int, advance: Callable[[int], None]) -> Iterator[bytes]:
    from yitong_lab.datasets.local import open_nofollow

    with open(open_nofollow(path), "rb") as f:
        f.seek(start)
        left = end - start
        while left > 0:
            block = f.read(min(SEND_BLOCK, left))
            if not block:
                raise OSError(f"{path} shrank while it was being uploaded: commit again")
            left -= len(block)
            advance(len(block))
            yield block


def upload_large(client: Any, item: Item, progress: Any, block: int | None = None, vc: str | None = None) -> None:
    """Resumable upload: ask the service where it stands (HEAD), append from there (PATCH)."""
    import httpx

    block = block or PATCH_BLOCK
    http, url = client.http(), f"{client.url}/objects/{item.hash}/upload"
    credited = [0]  # bytes shown in the progress bar so far

    def advance(n: int) -> None:
        credited[0] += n
        progress.update(n)

    offset, failures = None, 0
    while True:
        try:
            if offset is None:
                head = http.head(url, timeout=_timeout())
                client.check(head)
                if head.headers.get("Upload-Complete") == "1":
                    advance(item.size - credited[0])
                    return
                offset = int(head.headers.get("Upload-Offset") or 0)
                advance(offset - credited[0])
            end = min(item.size, offset + block)
            response = http.patch(
                url,
                content=_file_range(item.path, offset, end, advance),
                params=_for_vc(vc),
                timeout=_timeout(),
                headers={
                    "Upload-Offset": str(offset),
                    "Upload-Length": str(item.size),
                    "Content-Length": str(end - offset),
                    "Content-Type": "application/offset+octet-stream",
                },
            )
            if response.status_code == 409:  # another offset, or our dropped PATCH still runs there
                offset = None
                failures += 1
                if failures > RETRIES:
                    client.check(response)
                time.sleep(min(0.2 * 2**failures, 5.0))
                continue
            body = client.check(response)
            if body.get("complete"):
                advance(item.size - credited[0])
                return
            offset, failures = int(body["offset"]), 0
        except httpx.TransportError as error:
            failures += 1
            if failures > RETRIES:
                raise YitongError(0, f"uploading {item.path} failed after {RETRIES} retries: {error}") from None
            time.sleep(min(0.2 * 2**failures, 5.0))
            offset = None  # the service kept what arrived: resume from its Upload-Offset


def run_parallel(tasks: Sequence[Callable[[], None]], workers: int = WORKERS) -> None:
    """Run ``tasks`` in a small pool; the first failure cancels what has not started and raises."""
    if len(tasks) == 1:
        tasks[0]()
        return
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="yt-transfer") as pool:
        futures = [pool.submit(task) for task in tasks]
        done, pending = wait(futures, return_when=FIRST_EXCEPTION)
        for future in pending:
            future.cancel()
        for future in futures:
            error = future.exception() if future.done() and not future.cancelled() else None
            if error is not None:
                raise error


class _Relay:
    """Counts bytes sent before the upload bar is shown; forwards them once it is."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0
        self._target: Any = None

    def update(self, n: int) -> None:
        with self._lock:
            if self._target is None:
                self._count += n
                return
        self._target.update(n)

    def attach(self, target: Any) -> None:
        with self._lock:
            self._target = target
            target.update(self._count)


class Uploader:
    """Uploads in the background while the caller still hashes: ``offer(items)`` as hashes
    become known (the service is asked which it lacks, and those go up), ``finish(items)``
    offers the rest, shows the upload bar, waits, and returns ``(objects, bytes)`` sent. The
    first failure is raised by the next ``offer`` or by ``finish``; leaving the ``with``
    block cancels what has not started and waits for what has.

    Items may bring their bytes (small files, read while hashing): those are sent without
    reading the file again, and ``offer`` waits while more than ``held`` bytes of them are
    still on their way."""

    def __init__(
        self, client: Any, progress: Any, workers: int = WORKERS, held: int = HELD, vc: str | None = None
    ) -> None:
        self.client = client
        self.progress = progress
        # the VC the bytes are for (its storage quota); in a job, the job's own by default
        self.vc = vc or os.environ.get("YITONG_VC") or None
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="yt-transfer")
        self._lock = threading.Condition()
        self._offered: set[str] = set()
        self._asks: list[Future] = []
        self._sends: list[Future] = []
        self._todo: list[Item] = []
        self._relay = _Relay()
        self._limit = held
        self._held = 0  # bytes of items' data not yet sent or dropped

    def __enter__(self) -> Uploader:
        return self

    def __exit__(self, *exc: object) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def offer(self, items: Iterable[Item]) -> None:
        self._raise_failure()
        fresh: dict[str, Item] = {}
        for item in items:
            if item.hash not in self._offered:
                fresh.setdefault(item.hash, item)
        if not fresh:
            return
        self._offered.update(fresh)
        batch = list(fresh.values())
        size = sum(len(i.data) for i in batch if i.data is not None)
        with self._lock:
            while self._held and self._held + size > self._limit:
                self._lock.wait(0.5)
                self._raise_failure()  # the lock is re-entrant
            self._held += size
        self._asks.append(self._pool.submit(self._ask_and_send, batch))

    def _release(self, items: Iterable[Item]) -> None:
        size = sum(len(i.data) for i in items if i.data is not None)
        if size:
            with self._lock:
                self._held -= size
                self._lock.notify_all()

    def _ask_and_send(self, items: list[Item]) -> None:
        try:
            absent = missing(self.client, [item.hash for item in items])
        except BaseException:
            self._release(items)
            raise
        todo = [item for item in items if item.hash in absent]
        self._release(item for item in items if item.hash not in absent)
        large = sorted((i for i in todo if i.size > LARGE), key=lambda i: -i.size)
        tasks = [lambda i=i: upload_large(self.client, i, self._relay, vc=self.vc) for i in large]
        tasks += [lambda p=p: self._send_pack(p) for p in plan_packs([i for i in todo if i.size <= LARGE])]
        with self._lock:
            self._todo += [Item(i.hash, i.size, i.path) for i in todo]  # the bytes stay with the sends
            self._sends += [self._pool.submit(task) for task in tasks]

    def _send_pack(self, items: list[Item]) -> None:
        try:
            upload_pack(self.client, items, self._relay, vc=self.vc)
        finally:
            self._release(items)

    def _raise_failure(self) -> None:
        with self._lock:
            futures = self._asks + self._sends
        for future in futures:
            if future.done() and not future.cancelled() and future.exception():
                raise future.exception()  # type: ignore[misc]

    def finish(self, items: Iterable[Item] = ()) -> tuple[int, int]:
        self.offer(items)
        for future in self._asks:  # every answer is in: the bar's total is known
            future.result()
        with self._lock:
            todo, sends = list(self._todo), list(self._sends)
        if not todo:
            return 0, 0
        small = [i for i in todo if i.size <= LARGE]
        self.progress.start("upload", sum(i.size for i in todo if i.size > LARGE) + body_length(small))
        self._relay.attach(self.progress)
        wait(sends, return_when=FIRST_EXCEPTION)
        for future in sends:
            if future.done() and future.exception():
                raise future.exception()  # type: ignore[misc]
        return len(todo), sum(i.size for i in todo)


# -- download ----------------------------------------------------------------------------------


_TEMP = itertools.count()


def temp_beside(path: str) -> str:
    head, tail = os.path.split(path)
    return os.path.join(head, f".{tail}.yt-tmp-{os.getpid()}-{next(_TEMP)}")


def place(tmp: str, targets: list[str]) -> None:
    """Rename ``tmp`` onto the first target; copy it (temp + rename) onto the others. The
    targets' directories exist (``download`` makes them once)."""
    first, *others = targets
    for target in others:
        copy = temp_beside(target)
        shutil.copyfile(tmp, copy)
        os.replace(copy, target)
    os.replace(tmp, first)


def fetch_small(client: Any, base: str, wanted: dict[str, list[str]], sizes: dict[str, int], progress: Any) -> None:
    """``wanted``: hash -> local target paths. One pack stream per batch; a dropped stream is
    asked again for what did not arrive."""
    import blake3

    left = dict(wanted)

    def attempt() -> None:
        hashes = list(left)
        decoder = PackDecoder()
        out: Any = None  # the open temp file of the object being received
        hasher: Any = None
        tmp: str | None = None
        try:
            with client.http().stream(
                "POST", client.url + base + "/fetch", json={"hashes": hashes}, timeout=_timeout()
            ) as response:
                if response.is_error:
                    response.read()
                    client.check(response)
                for chunk in response.iter_bytes():
                    for record in decoder.feed(chunk):
                        if out is None:
                            if record.hash not in left:
                                raise YitongError(0, f"the service sent object {record.hash}, not asked for")
                            tmp = temp_beside(left[record.hash][0])
                            out, hasher = open(tmp, "wb"), blake3.blake3()
                        out.write(record.data)
                        hasher.update(record.data)
                        progress.update(len(record.data))
                        if record.end:
                            out.close()
                            out = None
                            assert tmp is not None
                            if hasher.hexdigest() != record.hash:
                                os.unlink(tmp)
                                raise YitongError(0, f"object {record.hash} arrived corrupt")
                            place(tmp, left.pop(record.hash))
                            tmp = None
                decoder.close()
        finally:
            if out is not None:
                out.close()
            if tmp is not None and os.path.exists(tmp):
                os.unlink(tmp)
        if left:
            raise YitongError(0, f"the service did not send {len(left)} objects, e.g. {next(iter(left))}")

    _retrying(f"downloading {len(wanted)} files", attempt)


def fetch_large(client: Any, base: str, digest: str, size: int, targets: list[str], progress: Any) -> None:
    """One object with ``Range`` resume into ``<target>.yt-part-<hash>``, checked, then placed."""
    import httpx

    from yitong_lab.datasets.local import hash_path

    part = os.path.join(os.path.dirname(targets[0]), f".{os.path.basename(targets[0])}.yt-part-{digest[:16]}")
    os.makedirs(os.path.dirname(part), exist_ok=True)
    have = os.path.getsize(part) if os.path.exists(part) else 0
    progress.update(have)
    failures = 0
    while have < size:
        try:
            headers = {"Range": f"bytes={have}-"} if have else {}
            with client.http().stream(
                "GET", f"{client.url}{base}/objects/{digest}", headers=headers, timeout=_timeout()
            ) as response:
                if response.is_error:
                    response.read()
                    client.check(response)
                mode = "ab" if response.status_code == 206 else "wb"
                if mode == "wb":
                    progress.update(-have)
                    have = 0
                with open(part, mode) as f:
                    for chunk in response.iter_bytes(BLOCK):
                        f.write(chunk)
                        have += len(chunk)
                        progress.update(len(chunk))
        except httpx.TransportError as error:
            failures += 1
            if failures > RETRIES:
                raise YitongError(0, f"downloading {targets[0]} failed after {RETRIES} retries: {error}") from None
            time.sleep(min(0.2 * 2**failures, 5.0))
    if hash_path(part, size) != digest:
        os.unlink(part)
        raise YitongError(0, f"object {digest} arrived corrupt (for {targets[0]}): pull again")
    place(part, targets)


def download(
    client: Any, base: str, wanted: dict[str, list[str]], sizes: dict[str, int], progress: Any, workers: int = WORKERS
) -> None:
    """Fetch every hash of ``wanted`` (hash -> local targets) of the version at ``base``."""
    if not wanted:
        return
    for directory in {os.path.dirname(t) for targets in wanted.values() for t in targets}:
        os.makedirs(directory, exist_ok=True)
    progress.start("download", sum(sizes[h] for h in wanted))
    large = [h for h in wanted if sizes[h] > LARGE]
    small = [h for h in wanted if sizes[h] <= LARGE]
    batches: list[list[str]] = []
    for pack in plan_packs([Item(h, sizes[h], "") for h in small]):
        hashes = [item.hash for item in pack]
        batches += [hashes[i : i + FETCH_HASHES] for i in range(0, len(hashes), FETCH_HASHES)]
    tasks = [lambda h=h: fetch_large(client, base, h, sizes[h], wanted[h], progress) for h in large]
    tasks += [lambda b=b: fetch_small(client, base, {h: wanted[h] for h in b}, sizes, progress) for b in batches]
    run_parallel(tasks, workers)
