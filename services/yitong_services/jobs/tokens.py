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
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from anyio import to_thread

from ..core.hub import HubClient, HubError
from .spec import JobSpec

log = logging.getLogger(__name__)

SCOPES = ("access:services!service={service}", "read:users:name!user", "read:users:groups!user")
ENV_NAMES = ("JUPYTERHUB_API_TOKEN", "YT_TOKEN")


def expires_in(spec: JobSpec, lifetime: int, grace: int) -> int:
    """Seconds the token lives: the job's longest run plus ``grace`` (time queued in the engine),
    else ``lifetime``."""
    return int(spec.max_run_time + grace) if spec.max_run_time else int(lifetime)


def token_scopes(service: str) -> list[str]:
    return [s.format(service=service) for s in SCOPES]


class JobTokens:
    def __init__(self, hub: HubClient, data_dir: Path, service: str, lifetime: int, grace: int) -> None:
        self.hub, self.service, self.lifetime, self.grace = hub, service, lifetime, grace
        self.dir = Path(data_dir).absolute() / "job-tokens"

    def _path(self, job_id: int, attempt: int) -> Path:
        return self.dir / f"{int(job_id)}-{int(attempt)}.json"

    def _write(self, job_id: int, attempt: int, user: str, token_id: str) -> None:
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self._path(job_id, attempt)
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"user": user, "id": token_id}, f)
        os.replace(tmp, path)

    def _records(self) -> dict[tuple[int, int], dict[str, str]]:
        out = {}
        for path in self.dir.glob("*-*.json") if self.dir.is_dir() else []:
            job, _, attempt = path.stem.partition("-")
            try:
                out[(int(job), int(attempt))] = json.loads(path.read_text())
            except (ValueError, OSError):
                log.warning("unreadable job token record %s", path)
        return out

    async def mint(self, job_id: int, attempt: int, user: str, spec: JobSpec) -> dict[str, str]:
        """A fresh token for this attempt (a token minted for it before a restart is revoked first)."""
        old = await to_thread.run_sync(lambda: self._records().get((job_id, attempt)))
        if old:
            await self._revoke(job_id, attempt, old)
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

    async def _revoke(self, job_id: int, attempt: int, record: dict[str, str]) -> bool:
        try:
            await self.hub.revoke_token(record["user"], record["id"])
        except HubError as e:
            log.warning("job %s attempt %s: token not revoked yet (%s)", job_id, attempt, e)
            return False
        await to_thread.run_sync(lambda: self._path(job_id, attempt).unlink(missing_ok=True))
        log.info("job %s attempt %s: token %s of %s revoked", job_id, attempt, record["id"], record["user"])
        return True

    async def sweep(self, running: set[tuple[int, int]]) -> int:
        """Revoke the token of every recorded attempt not in ``running`` ({(job id, attempt)})."""
        records = await to_thread.run_sync(self._records)
        done = 0
        for key, record in records.items():
            if key not in running:
                done += await self._revoke(*key, record)
        return done
