"""Adding a person (``POST /people``, the console's "Add person"): the hub user, the password
and the VC groups in one request. Pure: the name rules (JupyterHub's) and which hub groups make
someone a member of the VCs asked for; the route does the hub calls (core/hub.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from ..core.errors import Refusal

Name = Annotated[
    str, Field(min_length=1, max_length=255, description="a hub user name (lower-cased as JupyterHub does)")
]


class PersonIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Name
    password: str | None = Field(
        None, min_length=8, max_length=1024, description="at least 8 characters; null: generate one (answered once)"
    )
    vcs: list[Annotated[str, Field(min_length=1, max_length=255)]] = Field(
        default_factory=list, max_length=100, description="VCs the person joins, through each VC's first group"
    )
    groups: list[Annotated[str, Field(min_length=1, max_length=255)]] = Field(
        default_factory=list, max_length=100, description="hub groups the person joins"
    )


class PersonOut(BaseModel):
    name: str
    created: bool = Field(description="false: the hub had this user already (the password is new, the groups added)")
    groups: list[str]
    vcs: list[str]
    password: str | None = Field(None, description="the generated password, shown this once; null when one was given")


def normalize_name(name: str) -> str:
    """JupyterHub's normalised name (lower-cased, as its Authenticator does), or a 422 naming the
    rule it breaks (its ``validate_username``: not empty, not only dots, no ``/``, no space at
    either end)."""
    normal = name.lower()
    if not normal or "/" in normal or set(normal) == {"."} or normal != normal.strip():
        raise Refusal(
            422,
            f"{name!r} is not a valid JupyterHub user name: it must not be empty, only dots, contain '/' "
            "or start or end with a space",
        )
    return normal


def groups_for(vc_groups: Mapping[str, list[str]], vcs: list[str], groups: list[str]) -> list[str]:
    """The hub groups that make someone a member of ``vcs`` (each VC's first group) plus
    ``groups``, in order, once each; 404 for an unknown VC, 422 for one that names no group."""
    out = list(dict.fromkeys(groups))
    for vc in vcs:
        if vc not in vc_groups:
            raise Refusal(404, f"there is no VC {vc}")
        if not vc_groups[vc]:
            raise Refusal(422, f"VC {vc} grants membership to no group: give it one (its form above), or name a group")
        if vc_groups[vc][0] not in out:
            out.append(vc_groups[vc][0])
    return out
