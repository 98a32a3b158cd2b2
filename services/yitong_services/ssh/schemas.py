"""Request/response models of the SSH capability and its settings section (``ssh``)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

#: the longest public key line accepted (an RSA 16384-bit key is about 2,800 characters)
MAX_KEY_CHARS = 8192


class SSHSettings(BaseModel):
    """The SSH gateway (``ssh``): where it listens and how many keys a person may hold."""

    model_config = ConfigDict(extra="forbid")

    ip: str = Field("127.0.0.1", description="address the gateway listens on")
    port: int = Field(
        0, ge=0, le=65535, description="the gateway's port; 0 disables it (the example settings use 8022)"
    )
    max_keys: int = Field(20, ge=1, le=1000, description="public keys one person may register")
    max_sessions: int = Field(16, ge=1, le=10_000, description="SSH sessions one person may have open at once")
    token_lifetime: int = Field(
        3600, ge=60, description="seconds the hub token minted for one SSH session into a notebook server lives at most"
    )
    hub_url: str | None = Field(
        None,
        description="the hub's public URL the gateway reaches notebook servers through; null: $YITONG_HUB_URL",
    )
    public_host: str | None = Field(
        None, description="the host name `yt ssh` prints and connects to; null: the ip (this host's name for 0.0.0.0)"
    )

    def connect_host(self, hostname: Callable[[], str]) -> str:
        """Where people connect: ``public_host``, else ``ip`` unless it is a wildcard (then ``hostname()``)."""
        if self.public_host:
            return self.public_host
        return hostname() if self.ip in ("", "0.0.0.0", "::") else self.ip


class SSHKeyIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str = Field(
        ...,
        min_length=1,
        max_length=MAX_KEY_CHARS,
        description="one OpenSSH public key line: `ssh-ed25519 AAAA... comment` (ed25519, ecdsa, rsa >= 2048 bits)",
    )


class SSHKeyOut(BaseModel):
    id: int
    algorithm: str
    bits: int
    fingerprint: str = Field(..., description="`SHA256:<base64>`, as `ssh-keygen -lf` prints it")
    comment: str
    created: datetime


class SSHInfo(BaseModel):
    enabled: bool = Field(..., description="whether this platform runs the SSH gateway")
    host: str = Field(..., description="the host to connect to")
    port: int
    host_key: str = Field("", description="the gateway's public host key (`ssh-ed25519 AAAA...`), for known_hosts")
    login: str = Field(..., description="the caller's login for their default server (`alice`; `alice+job.12` a job)")
