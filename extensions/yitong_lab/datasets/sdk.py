"""The datasets SDK: :class:`Datasets` wraps the REST routes of docs/architecture.md and adds
``commit`` (directory -> new version) and ``pull`` (version -> directory).

>>> from yitong_lab.datasets import Datasets
>>> ds = Datasets()                                                   # doctest: +SKIP
>>> ds.commit("./imgs", "vision/mnist", message="cleaned labels")["number"]  # doctest: +SKIP
3
>>> ds.open("vision/mnist@v3")                                        # doctest: +SKIP
'/srv/yitong/materialized/6f1c.../'

Names: a dataset is ``vc/name``; a version is ``vc/name@ref`` where ``ref`` is a number,
``v<number>``, a tag or ``latest`` (the default).
"""

from __future__ import annotations

import builtins
import os
import shutil
from typing import Any
from urllib.parse import quote

from yitong_lab.client import Client, YitongError
from yitong_lab.datasets.manifest import Ref, canonical, changes, commit_body, manifest_bytes, parse_ref
from yitong_lab.datasets.manifest import diff as diff_files


def _q(text: str | int) -> str:
    return quote(str(text), safe="")


def open_cache(enabled: bool = True) -> Any:
    """The stat cache, or a no-op one when disabled or when the cache file cannot be opened."""
    from yitong_lab.datasets.statcache import NoCache, StatCache

    if not enabled:
        return NoCache()
    try:
        return StatCache()
    except Exception:  # a read-only home, a corrupt file: hash everything instead
        return NoCache()


class Datasets:
    """``Datasets(client=None)``: the dataset calls of one :class:`~yitong_lab.client.Client`."""

    def __init__(self, client: Client | None = None):
        self.client = client or Client()

    def _get(self, path: str, **params: Any) -> Any:
        return self.client.request("GET", path, params={k: v for k, v in params.items() if v} or None)

    @staticmethod
    def _base(ref: Ref) -> str:
        return f"/datasets/{_q(ref.vc)}/{_q(ref.name)}"

    def _version_base(self, ref: Ref) -> str:
        return f"{self._base(ref)}/versions/{_q(ref.ref or 'latest')}"

    # -- datasets ------------------------------------------------------------------------------

    def list(self, vc: str | None = None) -> list[dict[str, Any]]:
        return self._get("/datasets", vc=vc)

    def get(self, dataset: str) -> dict[str, Any]:
        return self._get(self._base(parse_ref(dataset, allow_version=False)))

    def create(self, dataset: str, description: str = "", private: bool = False) -> dict[str, Any]:
        ref = parse_ref(dataset, allow_version=False)
        return self.client.request(
            "POST",
            "/datasets",
            json={
                "vc": ref.vc,
                "name": ref.name,
                "description": description,
                "visibility": "private" if private else "vc",
            },
        )

    def update(self, dataset: str, **changes: Any) -> dict[str, Any]:
        body = {k: v for k, v in changes.items() if v is not None}
        return self.client.request("PATCH", self._base(parse_ref(dataset, allow_version=False)), json=body)

    def delete(self, ref: str) -> None:
        """``vc/name`` deletes the dataset, ``vc/name@ref`` one version (409 while referenced)."""
        parsed = parse_ref(ref)
        path = self._version_base(parsed) if parsed.ref else self._base(parsed)
        self.client.request("DELETE", path)

    # -- versions ------------------------------------------------------------------------------

    def versions(self, dataset: str) -> builtins.list[dict[str, Any]]:
        return self._get(self._base(parse_ref(dataset, allow_version=False)) + "/versions")

    def version(self, ref: str) -> dict[str, Any]:
        return self._get(self._version_base(parse_ref(ref)))

    def manifest(self, ref: str) -> dict[str, Any]:
        return self._get(self._version_base(parse_ref(ref)) + "/manifest")

    def diff(self, a: str, b: str | None = None) -> dict[str, Any]:
        """Changes from ``a`` to ``b`` (``vc/name@x``; ``b`` may be ``@y`` or ``y``); without
        ``b``, what version ``a`` changed against its parent."""
        ref = parse_ref(a)
        if b is None:
            version = self.version(a)
            if version.get("parent") is None:
                files = self.manifest(f"{ref.dataset}@{version['number']}")["files"]
                return {"from": None, "to": version["number"], **diff_files([], files)}
            old, new = version["parent"], version["number"]
        else:
            other = parse_ref(b) if "/" in b else Ref(ref.vc, ref.name, b.lstrip("@") or None)
            if other.dataset != ref.dataset:
                raise ValueError(f"diff compares two versions of one dataset, not {ref.dataset} and {other.dataset}")
            old, new = ref.ref or "latest", other.ref or "latest"
        result = self._get(self._base(ref) + "/diff", **{"from": str(old), "to": str(new)})
        return {"from": old, "to": new, **result}

    def tag(self, ref: str, tag: str) -> dict[str, Any]:
        """Point ``tag`` at the version ``ref`` names (tags move)."""
        parsed = parse_ref(ref)
        number = self.version(ref)["number"]
        return self.client.request("PUT", f"{self._base(parsed)}/tags/{_q(tag)}", json={"version": number})

    def untag(self, dataset: str, tag: str) -> None:
        self.client.request("DELETE", f"{self._base(parse_ref(dataset, allow_version=False))}/tags/{_q(tag)}")

    def open(self, ref: str) -> str:
        """The materialised, read-only directory of a version (made by the service on demand)."""
        return self.client.request("POST", self._version_base(parse_ref(ref)) + "/materialize")["path"]

    materialize = open

    # -- storage (admin) -----------------------------------------------------------------------

    def gc(self) -> dict[str, Any]:
        return self.client.request("POST", "/storage/gc")

    def verify(self) -> dict[str, Any]:
        return self.client.request("POST", "/storage/verify")

    # -- transfers -----------------------------------------------------------------------------

    def commit(
        self,
        path: str | os.PathLike,
        dataset: str,
        message: str = "",
        *,
        progress: Any = "auto",
        create: bool = True,
        description: str = "",
        private: bool = False,
        stat_cache: bool = True,
    ) -> dict[str, Any]:
        """Make the directory (or single file) ``path`` the next version of ``dataset``; returns the version model
        plus ``unchanged`` (nothing was sent when the content equals the latest version) and
        ``uploaded: {objects, bytes}``. Creates the dataset when missing (``create``)."""
        from yitong_lab.datasets.local import base_dir, local_path, scan
        from yitong_lab.datasets.packs import Item
        from yitong_lab.datasets.progress import make
        from yitong_lab.datasets.transfer import Uploader

        ref = parse_ref(dataset, allow_version=False)
        root = os.path.abspath(path)
        root_dir = base_dir(root)
        bar = make(progress)
        try:
            with open_cache(stat_cache) as cache, Uploader(self.client, bar, vc=ref.vc) as uploader:
                files = scan(root)  # a path that is not there fails before the dataset is created
                try:
                    info = self._get(self._base(ref))
                except YitongError as error:
                    if error.status != 404 or not create:
                        raise
                    info = self.create(dataset, description=description, private=private)
                latest = info.get("latest")  # the number of the latest version, or null
                number = latest.get("number") if isinstance(latest, dict) else latest
                parent = self.version(f"{ref.dataset}@{number}") if number is not None else None

                def hashed(rows: list) -> None:  # objects go up while the rest is hashed
                    uploader.offer([Item(h, stat[0], local_path(root_dir, p), data) for p, stat, h, data in rows])

                digest, built = self._local_manifest(root, files, cache, bar, sink=hashed)
                if parent is not None and parent.get("manifest") == digest:
                    return {**parent, "unchanged": True, "uploaded": {"objects": 0, "bytes": 0}}
                if built is None:  # the tree is as last committed, but that is not the latest
                    digest, built = self._local_manifest(root, files, cache, bar, memo=False, sink=hashed)
                manifest, data = built
                body: dict[str, Any] | None = None  # None: the whole manifest, spliced in as encoded
                base = cache.manifest(parent["manifest"]) if parent is not None else None
                sending = manifest["files"]
                if base is not None and parent is not None:  # committed from here: send only the changes
                    put, delete = changes(base, manifest)
                    body = {
                        "message": message,
                        "parent": number,
                        "base": parent["manifest"],
                        "put": put,
                        "delete": delete,
                        "manifest": digest,
                    }
                    sending = put
                objects, sent = uploader.finish(
                    Item(f["hash"], f["size"], local_path(root_dir, f["path"])) for f in sending
                )
                try:
                    # one key for this commit: a retry after a dropped connection gets the version
                    # the first try made instead of "parent is not the latest"
                    if body is None:
                        whole = commit_body({"message": message, "parent": number}, data)
                        version = self.client.create_call(
                            "POST", self._base(ref) + "/versions", content=whole, content_type="application/json"
                        )
                    else:
                        version = self.client.create_call("POST", self._base(ref) + "/versions", json=body)
                except YitongError as error:
                    if error.status == 409:
                        raise YitongError(
                            409,
                            f"someone committed to {ref.dataset} meanwhile (your parent was "
                            f"{'v' + str(number) if number else 'no version'}): commit again "
                            f"to build on the new version ({error.detail})",
                        ) from None
                    raise
                cache.remember_manifest(digest, data)
            return {
                **version,
                "unchanged": bool(version.get("unchanged")),
                "uploaded": {"objects": objects, "bytes": sent},
            }
        finally:
            bar.close()

    @staticmethod
    def _local_manifest(
        root: str, files: builtins.list, cache: Any, bar: Any, memo: bool = True, sink: Any = None
    ) -> tuple[str, Any]:
        """``(manifest hash, (manifest, its bytes))`` of the scanned tree ``files`` at ``root``.
        With ``memo``, a tree identical to the one last committed from here gives its hash and
        ``None`` (nothing is hashed or built). ``sink``: see :func:`~.local.hash_files`."""
        import marshal

        from blake3 import blake3

        from yitong_lab.datasets.local import base_dir, hash_files

        snapshot = marshal.dumps(files)
        remembered = cache.tree(root) if memo else None
        if remembered is not None and remembered[0] == snapshot:
            return remembered[1], None
        hashes = hash_files(base_dir(root), files, cache, bar, sink=sink)
        manifest = canonical({"path": f[0], "size": f[1], "hash": hashes[f[0]]} for f in files)
        data = manifest_bytes(manifest)
        digest = blake3(data).hexdigest()
        cache.remember_tree(root, snapshot, digest)
        return digest, (manifest, data)

    def pull(
        self,
        ref: str,
        directory: str | os.PathLike,
        *,
        delete: bool = False,
        progress: Any = "auto",
        stat_cache: bool = True,
    ) -> dict[str, Any]:
        """Make ``directory`` hold the version ``ref``: only missing or changed files are
        fetched (checked by size, then hash via the stat cache); ``delete`` removes files the
        version does not have. Returns ``{dataset, number, path, fetched, bytes, unchanged, deleted}``."""
        from yitong_lab.datasets.local import PARTIAL_MARKERS, hash_files, local_path, scan, stat_of
        from yitong_lab.datasets.progress import make
        from yitong_lab.datasets.transfer import download

        parsed = parse_ref(ref)
        version = self.version(ref)
        pinned = Ref(parsed.vc, parsed.name, str(version["number"]))
        base = self._version_base(pinned)
        files = canonical(self._get(base + "/manifest")["files"])["files"]
        root = os.path.abspath(directory)
        os.makedirs(root, exist_ok=True)
        bar = make(progress)
        try:
            local = []
            for f in scan(root, links="list"):  # a local link is replaced, never written through
                if any(marker in f[0] for marker in PARTIAL_MARKERS):
                    if ".yt-tmp-" in f[0]:  # left by an interrupted pull; .yt-part- resumes
                        os.unlink(local_path(root, f[0]))
                    continue
                local.append(f)
            by_path = {f[0]: f for f in local}
            wanted = {g["path"] for g in files}
            extras = [f[0] for f in local if f[0] not in wanted]
            blocking = self._blocking(root, files, by_path)
            if blocking and not delete:
                raise YitongError(409, f"{blocking} is in the way of {pinned}: move it or pull with --delete")
            same_size = [
                by_path[f["path"]] for f in files if f["path"] in by_path and by_path[f["path"]][1] == f["size"]
            ]
            with open_cache(stat_cache) as cache:
                local_hashes = hash_files(root, same_size, cache, bar)
                need: dict[str, list[str]] = {}
                sizes: dict[str, int] = {}
                for entry in files:
                    if local_hashes.get(entry["path"]) != entry["hash"]:
                        need.setdefault(entry["hash"], []).append(entry["path"])
                        sizes[entry["hash"]] = entry["size"]
                deleted = self._remove(root, extras, blocking) if delete else 0
                targets = {h: [local_path(root, p) for p in paths] for h, paths in need.items()}
                download(self.client, base, targets, sizes, bar)
                cache.store(root, [(p, stat_of(local_path(root, p)), h) for h, ps in need.items() for p in ps])
            fetched = sum(len(ps) for ps in need.values())
            return {
                "dataset": parsed.dataset,
                "number": version["number"],
                "path": root,
                "fetched": fetched,
                "bytes": sum(sizes[h] * len(need[h]) for h in need),
                "unchanged": len(files) - fetched,
                "deleted": deleted,
            }
        finally:
            bar.close()

    @staticmethod
    def _blocking(root: str, files: builtins.list[dict[str, Any]], by_path: dict[str, Any]) -> str | None:
        """A local file where the version has a directory, or a directory where it has a file."""
        for f in files:
            parts = f["path"].split("/")
            for i in range(1, len(parts)):
                if "/".join(parts[:i]) in by_path:
                    return "/".join(parts[:i])
            if os.path.isdir(os.path.join(root, *parts)):
                return f["path"]
        return None

    @staticmethod
    def _remove(root: str, extras: builtins.list[str], blocking: str | None) -> int:
        from yitong_lab.datasets.local import local_path

        for path in extras:
            os.unlink(local_path(root, path))
        if blocking and os.path.isdir(os.path.join(root, blocking)):
            shutil.rmtree(os.path.join(root, blocking))
        for directory, subdirs, names in os.walk(root, topdown=False):
            if directory != root and not subdirs and not names:
                os.rmdir(directory)
        return len(extras)
