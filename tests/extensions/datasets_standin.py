"""A STAND-IN for the platform service's dataset routes (docs/architecture.md, "Datasets"),
in memory, for the lab side's tests of the HTTP boundary. It is not the service: the lead's
end-to-end tests run the same clients against the real one.

``conftest.StandIn`` hands every ``/datasets``, ``/objects`` and ``/storage`` request to
:func:`handle`. State lives in :class:`DatasetState` (``platform_api.datasets``):

- ``objects`` (hash -> bytes), ``partials`` (hash -> bytearray), ``datasets``;
- ``refused_versions``: version POSTs refused for missing objects (a client that posts a
  version before its objects are up shows here);
- knobs: ``drop_patch_after = n`` (the next PATCH is cut after n body bytes, what arrived is
  kept as the partial upload, the socket closed without an answer), ``drop_get_after = n`` (the
  next object GET is cut after n bytes), ``slow = seconds`` (sleep per object request);
  ``refs[(dataset, number)] = "job 42"`` makes a version referenced.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field

from blake3 import blake3

NAME = r"[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?"


@dataclass
class DatasetState:
    objects: dict = field(default_factory=dict)
    partials: dict = field(default_factory=dict)
    datasets: dict = field(default_factory=dict)
    refs: dict = field(default_factory=dict)
    refused_versions: list = field(default_factory=list)
    cache_corrupt: list = field(default_factory=list)  # what verify reports of the service's cache
    commit_bodies: list = field(default_factory=list)
    drop_patch_after: int | None = None
    drop_get_after: int | None = None
    slow: float = 0.0
    patches: list = field(default_factory=list)  # (hash, Upload-Offset) of every PATCH
    lock: threading.Lock = field(default_factory=threading.Lock)
    root: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="yt-standin-"))

    def close(self) -> None:
        for directory, _subdirs, _files in os.walk(self.root):
            os.chmod(directory, 0o755)
        shutil.rmtree(self.root, ignore_errors=True)


def manifest_hash(files) -> str:
    data = json.dumps({"files": files}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return blake3(data.encode()).hexdigest()


def version_model(ds, v) -> dict:
    tags = sorted(t for t, n in ds["tags"].items() if n == v["number"])
    return {
        "dataset": f"{ds['vc']}/{ds['name']}",
        "number": v["number"],
        "manifest": v["manifest"],
        "parent": v["parent"],
        "author": v["author"],
        "message": v["message"],
        "created": v["created"],
        "files": len(v["files"]),
        "bytes": sum(f["size"] for f in v["files"]),
        "tags": tags,
        "lineage": {
            "parent": v["parent"],
            "job": None,
            "kind": None,
            "model": None,
            "model_manifest": None,
            "inputs": [],
        },
    }


def dataset_model(ds) -> dict:
    latest = ds["versions"][-1] if ds["versions"] else None
    return {
        "vc": ds["vc"],
        "name": ds["name"],
        "full_name": f"{ds['vc']}/{ds['name']}",
        "description": ds["description"],
        "visibility": ds["visibility"],
        "owner": ds["owner"],
        "created": ds["created"],
        "versions": len(ds["versions"]),
        "latest": latest["number"] if latest else None,
        "bytes": sum(f["size"] for f in latest["files"]) if latest else 0,
        "tags": dict(ds["tags"]),
    }


def read_body(h) -> bytes:
    length = int(h.headers.get("Content-Length") or 0)
    return h.rfile.read(length) if length else b""


def send_bytes(h, status, data, headers=()):
    h.send_response(status)
    for k, v in headers:
        h.send_header(k, v)
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)


def handle(h, user, member_of, path) -> None:
    """One request: ``h`` the BaseHTTPRequestHandler, ``user`` the caller, ``member_of`` VC names."""
    st: DatasetState = h.server.state.datasets
    method = h.command
    query = dict(p.split("=", 1) for p in h.path.partition("?")[2].split("&") if "=" in p)

    def visible(ds):
        return user["admin"] or (ds["vc"] in member_of and (ds["visibility"] == "vc" or ds["owner"] == user["name"]))

    def find(vc, name):
        ds = st.datasets.get(f"{vc}/{name}")
        if ds is None or not visible(ds):
            h.reply(404, {"detail": f"no dataset {vc}/{name}"})
            return None
        return ds

    def resolve(ds, ref):
        number = None
        if ref == "latest":
            number = ds["versions"][-1]["number"] if ds["versions"] else None
        elif re.fullmatch(r"v?\d+", ref):
            number = int(ref.lstrip("v"))
        elif ref in ds["tags"]:
            number = ds["tags"][ref]
        v = next((v for v in ds["versions"] if v["number"] == number), None)
        if v is None:
            h.reply(404, {"detail": f"{ds['vc']}/{ds['name']} has no version {ref}"})
        return v

    if st.slow and path.startswith("/objects"):
        time.sleep(st.slow)

    # -- objects ---------------------------------------------------------------------------------
    if (method, path) == ("POST", "/objects/missing"):
        hashes = json.loads(read_body(h))["hashes"]
        if len(hashes) > 200_000:
            return h.reply(422, {"detail": "at most 200000 hashes per call"})
        return h.reply(200, {"missing": [x for x in hashes if x not in st.objects]})
    if (method, path) == ("POST", "/objects/pack"):
        body, pos, stored, records = read_body(h), 0, 0, []
        while pos < len(body):
            digest, size = body[pos : pos + 32].hex(), int.from_bytes(body[pos + 32 : pos + 40], "big")
            data = body[pos + 40 : pos + 40 + size]
            pos += 40 + size
            if len(data) != size or blake3(data).hexdigest() != digest:
                return h.reply(422, {"detail": f"pack record {digest} does not match its bytes"})
            records.append((digest, data))
        with st.lock:
            for digest, data in records:
                st.objects[digest] = data
                stored += 1
        return h.reply(200, {"stored": stored, "bytes": len(body)})
    match = re.fullmatch(r"/objects/([0-9a-f]{64})/upload", path)
    if match:
        digest = match.group(1)
        if method == "HEAD":
            if digest in st.objects:
                return send_bytes(h, 200, b"", [("Upload-Complete", "1")])
            return send_bytes(h, 200, b"", [("Upload-Offset", str(len(st.partials.get(digest, b""))))])
        if method == "PATCH":
            offset, total = int(h.headers["Upload-Offset"]), int(h.headers["Upload-Length"])
            length = int(h.headers.get("Content-Length") or 0)
            st.patches.append((digest, offset))
            partial = st.partials.setdefault(digest, bytearray())
            if offset != len(partial):
                read_body(h)
                return send_bytes(
                    h,
                    409,
                    json.dumps({"detail": f"the upload is at {len(partial)}"}).encode(),
                    [("Upload-Offset", str(len(partial)))],
                )
            cut, st.drop_patch_after = st.drop_patch_after, None
            if cut is not None and cut < length:
                partial += h.rfile.read(cut)  # what arrived before the connection dropped is kept
                h.close_connection = True
                h.connection.shutdown(2)
                return None
            partial += h.rfile.read(length)
            if len(partial) < total:
                return h.reply(200, {"offset": len(partial), "complete": False})
            data = bytes(st.partials.pop(digest))
            if blake3(data).hexdigest() != digest:
                return h.reply(422, {"detail": f"the upload of {digest} does not match its hash"})
            st.objects[digest] = data
            return h.reply(200, {"offset": len(data), "complete": True})

    # -- storage (admin) -------------------------------------------------------------------------
    if path in ("/storage/gc", "/storage/verify") and method == "POST":
        if not user["admin"]:
            return h.reply(403, {"detail": f"{user['name']} is not an administrator"})
        if path.endswith("gc"):
            used = {f["hash"] for ds in st.datasets.values() for v in ds["versions"] for f in v["files"]}
            gone = [x for x in st.objects if x not in used]
            size = sum(len(st.objects.pop(x)) for x in gone)
            return h.reply(200, {"objects": len(gone), "bytes": size, "packs": 0})
        corrupt = [x for x, data in st.objects.items() if blake3(data).hexdigest() != x]
        return h.reply(
            200, {"checked": len(st.objects), "corrupt": corrupt, "missing": [], "cache_corrupt": st.cache_corrupt}
        )

    # -- datasets --------------------------------------------------------------------------------
    if (method, path) == ("GET", "/datasets"):
        rows = [
            dataset_model(ds)
            for ds in st.datasets.values()
            if visible(ds) and (not query.get("vc") or ds["vc"] == query["vc"])
        ]
        return h.reply(200, rows)
    if (method, path) == ("POST", "/datasets"):
        body = json.loads(read_body(h))
        key = f"{body['vc']}/{body['name']}"
        if body["vc"] not in member_of and not user["admin"]:
            return h.reply(403, {"detail": f"{user['name']} is not a member of VC {body['vc']}"})
        if key in st.datasets:
            return h.reply(409, {"detail": f"dataset {key} already exists"})
        st.datasets[key] = {
            "vc": body["vc"],
            "name": body["name"],
            "description": body.get("description", ""),
            "visibility": body.get("visibility", "vc"),
            "owner": user["name"],
            "created": "2025-01-01T00:00:00Z",
            "versions": [],
            "tags": {},
            "next": 1,
        }
        return h.reply(201, dataset_model(st.datasets[key]))
    match = re.fullmatch(rf"/datasets/({NAME})/({NAME})(/.*)?", path)
    if not match:
        return h.reply(404, {"detail": "Not Found"})
    ds = find(match.group(1), match.group(2))
    if ds is None:
        return None
    key, rest = f"{ds['vc']}/{ds['name']}", match.group(3) or ""
    if rest == "":
        if method == "GET":
            return h.reply(200, dataset_model(ds))
        if method == "DELETE":
            used = [f"{r} (v{n})" for (d, n), r in st.refs.items() if d == key]
            if used:
                return h.reply(409, {"detail": f"dataset {key} is used by {', '.join(used)}"})
            del st.datasets[key]
            return h.reply(204)
    if rest == "/versions" and method == "GET":
        return h.reply(200, [version_model(ds, v) for v in reversed(ds["versions"])])
    if rest == "/versions" and method == "POST":
        body = json.loads(read_body(h))
        latest = ds["versions"][-1] if ds["versions"] else None
        if body.get("parent") != (latest["number"] if latest else None):
            return h.reply(
                409, {"detail": f"{key} is at v{latest['number'] if latest else 0} now, not v{body.get('parent')}"}
            )
        st.commit_bodies.append(body)
        if "base" in body:  # the changes to the parent's manifest
            if latest is None or latest["manifest"] != body["base"]:
                return h.reply(409, {"detail": "base is not the latest manifest"})
            entries = {f["path"]: f for f in latest["files"]}
            for path in body["delete"]:
                del entries[path]
            entries.update({f["path"]: f for f in body["put"]})
            files = sorted(entries.values(), key=lambda f: f["path"].encode())
            if manifest_hash(files) != body["manifest"]:
                return h.reply(422, {"detail": "the changes do not give the manifest"})
        else:
            files = body["files"]
        if [f["path"] for f in files] != sorted((f["path"] for f in files), key=lambda p: p.encode()):
            return h.reply(422, {"detail": "files are not sorted by path"})
        absent = sorted({f["hash"] for f in files if f["hash"] not in st.objects})
        if absent:
            st.refused_versions.append(absent)
            return h.reply(422, {"detail": f"{len(absent)} objects are missing, e.g. {absent[0]}"})
        digest = manifest_hash(files)
        if latest and latest["manifest"] == digest:
            return h.reply(200, {**version_model(ds, latest), "unchanged": True})
        v = {
            "number": ds["next"],
            "manifest": digest,
            "parent": latest["number"] if latest else None,
            "author": user["name"],
            "message": body.get("message", ""),
            "created": "2025-01-02T00:00:00Z",
            "files": files,
        }
        ds["next"] += 1
        ds["versions"].append(v)
        return h.reply(201, version_model(ds, v))
    if rest == "/diff" and method == "GET":
        a, b = resolve(ds, query.get("from", "")), None
        if a is None:
            return None
        b = resolve(ds, query.get("to", "latest"))
        if b is None:
            return None
        old, new = {f["path"]: f for f in a["files"]}, {f["path"]: f for f in b["files"]}
        return h.reply(
            200,
            {
                "added": [{"path": p, "size": new[p]["size"]} for p in sorted(new.keys() - old.keys())],
                "removed": [{"path": p, "size": old[p]["size"]} for p in sorted(old.keys() - new.keys())],
                "changed": [
                    {"path": p, "old_size": old[p]["size"], "size": new[p]["size"]}
                    for p in sorted(old.keys() & new.keys())
                    if old[p]["hash"] != new[p]["hash"]
                ],
            },
        )
    match = re.fullmatch(r"/tags/([^/]+)", rest)
    if match:
        if method == "PUT":
            number = json.loads(read_body(h))["version"]
            if not any(v["number"] == number for v in ds["versions"]):
                return h.reply(404, {"detail": f"{key} has no version {number}"})
            ds["tags"][match.group(1)] = number
            v = next(v for v in ds["versions"] if v["number"] == number)
            return h.reply(200, version_model(ds, v))
        if method == "DELETE":
            if ds["tags"].pop(match.group(1), None) is None:
                return h.reply(404, {"detail": f"{key} has no tag {match.group(1)}"})
            return h.reply(204)
    match = re.fullmatch(r"/versions/([^/]+)(/.*)?", rest)
    if not match:
        return h.reply(404, {"detail": "Not Found"})
    v = resolve(ds, match.group(1))
    if v is None:
        return None
    sub = match.group(2) or ""
    if sub == "" and method == "GET":
        return h.reply(200, version_model(ds, v))
    if sub == "" and method == "DELETE":
        if (key, v["number"]) in st.refs:
            return h.reply(409, {"detail": f"{key} v{v['number']} is used by {st.refs[(key, v['number'])]}"})
        ds["versions"].remove(v)
        ds["tags"] = {t: n for t, n in ds["tags"].items() if n != v["number"]}
        return h.reply(204)
    if sub == "/manifest" and method == "GET":
        return h.reply(200, {"files": v["files"]})
    names = {f["hash"] for f in v["files"]}
    if sub == "/fetch" and method == "POST":
        hashes = json.loads(read_body(h))["hashes"]
        if any(x not in names for x in hashes):
            return h.reply(404, {"detail": "an object not in this version was asked for"})
        h.send_response(200)
        h.send_header("Content-Type", "application/octet-stream")
        h.end_headers()
        for x in hashes:
            data = st.objects[x]
            h.wfile.write(bytes.fromhex(x) + len(data).to_bytes(8, "big") + data)
        h.close_connection = True
        return None
    match = re.fullmatch(r"/objects/([0-9a-f]{64})", sub)
    if match and method == "GET":
        if match.group(1) not in names:
            return h.reply(404, {"detail": "no such object in this version"})
        data = st.objects[match.group(1)]
        start = 0
        ranged = re.fullmatch(r"bytes=(\d+)-", h.headers.get("Range", ""))
        if ranged:
            start = int(ranged.group(1))
        h.send_response(206 if ranged else 200)
        h.send_header("Content-Length", str(len(data) - start))
        h.end_headers()
        cut, st.drop_get_after = st.drop_get_after, None
        if cut is not None:
            h.wfile.write(data[start : start + cut])
            h.wfile.flush()
            h.close_connection = True
            h.connection.shutdown(2)
            return None
        h.wfile.write(data[start:])
        return None
    if sub == "/materialize" and method == "POST":
        target = os.path.join(st.root, "materialized", v["manifest"])
        if not os.path.isdir(target):
            staging = target + ".tmp"
            for f in v["files"]:
                dest = os.path.join(staging, *f["path"].split("/"))
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                with open(dest, "wb") as out:
                    out.write(st.objects[f["hash"]])
            os.makedirs(staging, exist_ok=True)
            os.replace(staging, target)
        return h.reply(200, {"path": target})
    return h.reply(405, {"detail": "Method Not Allowed"})
