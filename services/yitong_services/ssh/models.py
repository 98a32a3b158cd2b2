"""Tables of the SSH capability: people's public keys."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from ..core.models import Base, UTCDateTime, utcnow


class SSHKey(Base):
    """One OpenSSH public key of a hub user; ``fingerprint`` is ``SHA256:<base64>`` of its blob."""

    __tablename__ = "ssh_keys"
    __table_args__ = (UniqueConstraint("user", "fingerprint", name="uq_ssh_keys_user_fingerprint"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user: Mapped[str] = mapped_column(String(255), index=True)
    algorithm: Mapped[str] = mapped_column(String(64))
    bits: Mapped[int] = mapped_column(Integer)
    fingerprint: Mapped[str] = mapped_column(String(64))
    public_key: Mapped[str] = mapped_column(Text)  # "<algorithm> <base64 blob>", without the comment
    comment: Mapped[str] = mapped_column(String(255), default="")
    created: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
