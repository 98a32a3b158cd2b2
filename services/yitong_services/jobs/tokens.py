"""A job's own short-lived hub token: minted per attempt for the job's owner, revoked when it ends.

Every attempt gets a JupyterHub API token *of its owner* (``POST /hub/api/users/{name}/tokens``,
with the service's ``tokens`` scope), limited to ``SCOPES`` (call the platform service as the
owner, read the owner's name and groups) and expiring after the job's ``max_run_time`` plus
``jobs.token_grace``, or ``jobs.token_lifetime`` without one. The job sees it as
``JUPYTERHUB_API_TOKEN`` and ``YT_TOKEN`` (what the SDK, the CLI and ``%yt`` read), so code in a
job acts as its owner, never as the platform.

The token's id (not the token) is recorded in ``<data_dir>/job-tokens/<job>-<attempt>.json``
(0600, in a 0700 directory) before the job starts; ``sweep`` revokes every recorded token whose
attempt is no longer running (succeeded, failed, cancelled, retried, or ended while the service
was down) and deletes its record only once the hub confirmed. A hub that cannot be reached
leaves the record for the next sweep; the token still expires on its own.

**Spares.** A hub call per attempt costs 35-190 ms on the launch's critical path. When an owner's
attempts come in a burst (a second token of the same expiry asked for within ``spare_age``
seconds: an experiment's trials, a job array, a retry loop), the next ones are minted ahead, in
the background, and an attempt takes one at launch. A spare is the same token a launch would mint
(the owner's, the same scopes, the same expiry, less the seconds it waited: at most
``spare_age``); only its note differs ("yitong job token (spare)", the hub cannot rename a note):
the record ``<job>-<attempt>.json`` says which attempt took which token id. Spares live in the
service's memory only; their ids are recorded in ``spare-<id>.json`` so a sweep revokes one that
waited longer than ``spare_age`` or that a restarted service no longer holds. ``spare_age`` 0
turns spares off.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

from anyio import to_thread

from ..core.hub import HubClient, HubError
from .spec import JobSpec

log = logging.getLogger(__name__)

SCOPES = ("access:services!service={service}", "read:users:name!user", "read:users:groups!user")
ENV_NAMES = ("JUPYTERHUB_API_TOKEN", "YT_TOKEN")
SPARE_NOTE = "yitong job token (spare)"
MAX_SPARES = 4  # per owner and expiry


def expires_in(spec: JobSpec, lifetime: int, grace: int) -> int:
    """Seconds the token lives: the job's longest run plus ``grace`` (time queued in the engine),
    else ``lifetime``."""
    return int(spec.max_run_time + grace) if spec.max_run_time else int(lifetime)


def token_scopes(service: str) -> list[str]:
    return [s.format(service=service) for s in SCOPES]


class Spare:
    __slots__ = ("minted", "token", "id")

    def __init__(self, minted: float, token: str, token_id: str) -> None:
        self.minted, self.token, self.id = minted, token, token_id


class JobTokens:
    def __init__(
        self, hub: HubClient, data_dir: Path, service: str, lifetime: int, grace: int, spare_age: float = 30.0
    ) -> None:
        self.hub, self.service, self.lifetime, self.grace = hub, service, lifetime, grace
        self.dir = Path(data_dir).absolute() / "job-tokens"
        self.spare_age = spare_age
        self._spares: dict[tuple[str, int], list[Spare]] = {}  # (owner, expires_in) -> oldest first
        self._asked: dict[tuple[str, int], list[float]] = {}  # when tokens of that key were asked for
        self._filling: dict[tuple[str, int], asyncio.Task] = {}
        self._recording: set[str] = set()  # spares minted whose record is being written
        self._stale: list[tuple[str, str]] = []  # (owner, token id) of spares too old to hand out
        # records written by this process, and that count when a sweep last found none: a sweep
        # with nothing written since skips its look at the directory (jobs without hub tokens)
        self._written = 0
        self._empty_at = -1

    def _path(self, job_id: int, attempt: int) -> Path:
        return self.dir / f"{int(job_id)}-{int(attempt)}.json"

    def _spare_path(self, token_id: str) -> Path:
        safe = "".join(c for c in str(token_id) if c.isascii() and c.isalnum())[:64]
        return self.dir / f"spare-{safe}.json"

    def _write(self, job_id: int, attempt: int, user: str, token_id: str, path: Path | None = None) -> None:
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = path or self._path(job_id, attempt)
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"user": user, "id": token_id}, f)
        os.replace(tmp, path)
        self._written += 1  # after the file is there: a sweep listing meanwhile does not skip it later

    def _take_spare(self, job_id: int, attempt: int, user: str, spare: Spare) -> None:
        """The attempt's record first, then the spare's dropped: a crash between leaves the token
        recorded twice (revoked twice: harmless), never not at all."""
        self._write(job_id, attempt, user, spare.id)
        self._spare_path(spare.id).unlink(missing_ok=True)

    def _records(self) -> dict[tuple[int, int], dict[str, str]]:
        out = {}
        for path in self.dir.glob("*-*.json") if self.dir.is_dir() else []:
            if path.name.startswith("spare-"):
                continue
            job, _, attempt = path.stem.partition("-")
            try:
                out[(int(job), int(attempt))] = json.loads(path.read_text())
            except (ValueError, OSError):
                log.warning("unreadable job token record %s", path)
        return out

    async def mint(self, job_id: int, attempt: int, user: str, spec: JobSpec) -> dict[str, str]:
        """A fresh token for this attempt (a token minted for it before a restart is revoked first):
        a spare when one waits, else one minted now."""
        old = await to_thread.run_sync(lambda: self._records().get((job_id, attempt)))
        if old:
            await self._revoke(job_id, attempt, old)
        key = (user, expires_in(spec, self.lifetime, self.grace))
        spare = self._spare(key)
        self._ask(key)
        if spare is not None:
            try:
                await to_thread.run_sync(self._take_spare, job_id, attempt, user, spare)
            except OSError:
                await self.hub.revoke_token(user, spare.id)
                raise
            return {name: spare.token for name in ENV_NAMES}
        token, token_id = await self.hub.create_token(
            user,
            token_scopes(self.service),
            expires_in(spec, self.lifetime, self.grace),
            f"yitong job {job_id} attempt {attempt}",
        )
        try:
            await to_thread.run_sync(self._write, job_id, attempt, user, token_id)
        except OSError:
            await self.hub.revoke_token(user, token_id)
            raise
        return {name: token for name in ENV_NAMES}

    def _spare(self, key: tuple[str, int]) -> Spare | None:
        """The oldest spare of ``key`` still young enough (older ones are left for the sweep)."""
        spares = self._spares.get(key) or []
        now = time.monotonic()
        while spares:
            spare = spares.pop(0)
            if now - spare.minted < self.spare_age:
                return spare
            self._stale.append((key[0], spare.id))
        return None

    def _ask(self, key: tuple[str, int]) -> None:
        """Note a token asked for; in a burst, mint as many spares ahead as were asked for in the
        last ``spare_age`` seconds (at most ``MAX_SPARES``)."""
        if self.spare_age <= 0:
            return
        now = time.monotonic()
        asked = [t for t in self._asked.get(key, []) if now - t < self.spare_age]
        asked.append(now)
        self._asked[key] = asked[-MAX_SPARES:]
        want = min(len(asked) - 1, MAX_SPARES)
        if want > len(self._spares.get(key, [])) and key not in self._filling:
            task = asyncio.get_running_loop().create_task(self._fill(key, want))
            self._filling[key] = task
            task.add_done_callback(lambda _t: self._filling.pop(key, None))

    async def _fill(self, key: tuple[str, int], want: int) -> None:
        user, expires = key
        try:
            while len(self._spares.setdefault(key, [])) < want:
                token, token_id = await self.hub.create_token(user, token_scopes(self.service), expires, SPARE_NOTE)
                self._recording.add(token_id)  # a sweep meanwhile must not take it for a lost one
                try:
                    await to_thread.run_sync(self._write, 0, 0, user, token_id, self._spare_path(token_id))
                except BaseException:
                    await self.hub.revoke_token(user, token_id)
                    raise
                finally:
                    self._recording.discard(token_id)
                self._spares.setdefault(key, []).append(Spare(time.monotonic(), token, token_id))
        except Exception as e:  # an attempt then mints its own, as without spares
            log.warning("spare job tokens for %s not minted: %s", user, e)

    def _spare_records(self) -> dict[str, dict[str, str]]:
        out = {}
        for path in self.dir.glob("spare-*.json") if self.dir.is_dir() else []:
            try:
                record = json.loads(path.read_text())
                out[str(record["id"])] = record
            except (ValueError, OSError, KeyError, TypeError):
                log.warning("unreadable spare token record %s", path)
        return out

    async def _sweep_spares(self, records: dict[str, dict[str, str]]) -> int:
        """Revoke spares that waited too long, and recorded ones this process does not hold."""
        now = time.monotonic()
        for key, spares in self._spares.items():
            while spares and now - spares[0].minted >= self.spare_age:
                self._stale.append((key[0], spares.pop(0).id))
        if not records:
            self._stale.clear()  # nothing recorded: nothing of theirs left to revoke
            return 0
        held = {s.id for spares in self._spares.values() for s in spares} | self._recording
        doomed = {token_id: r["user"] for token_id, r in records.items() if token_id not in held}
        doomed.update({token_id: user for user, token_id in self._stale if token_id in records})
        self._stale.clear()
        done = 0
        for token_id, user in doomed.items():
            try:
                await self.hub.revoke_token(user, token_id)
            except HubError as e:
                log.warning("spare token %s of %s: not revoked yet (%s)", token_id, user, e)
                continue
            await to_thread.run_sync(partial(self._spare_path(token_id).unlink, missing_ok=True))
            done += 1
        return done

    def spares_waiting(self) -> bool:
        return any(self._spares.values()) or bool(self._filling)

    async def _revoke(self, job_id: int, attempt: int, record: dict[str, str]) -> bool:
        try:
            await self.hub.revoke_token(record["user"], record["id"])
        except HubError as e:
            log.warning("job %s attempt %s: token not revoked yet (%s)", job_id, attempt, e)
            return False
        await to_thread.run_sync(lambda: self._path(job_id, attempt).unlink(missing_ok=True))
        log.info("job %s attempt %s: token %s of %s revoked", job_id, attempt, record["id"], record["user"])
        return True

    async def sweep(self, running: Callable[[], Awaitable[set[tuple[int, int]]]]) -> int:
        """Revoke the token of every recorded attempt not in ``running()`` ({(job id, attempt)},
        asked only when some token is recorded)."""
        written = self._written
        if self._empty_at == written:
            return 0  # nothing recorded when last looked, and nothing written since
        records, spares = await to_thread.run_sync(lambda: (self._records(), self._spare_records()))
        if not records and not spares:
            self._empty_at = written
        done = 0
        if records:
            live = await running()
            for key, record in records.items():
                if key not in live:
                    done += await self._revoke(*key, record)
        return done + await self._sweep_spares(spares)
