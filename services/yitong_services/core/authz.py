"""Pure authorisation rules: who may see and do what. No I/O; tested against literals."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True)
class Identity:
    """Who is calling: a hub user, or a hub service (``trusted`` for this service's own token)."""

    kind: Literal["user", "service"]
    name: str
    admin: bool = False
    groups: tuple[str, ...] = field(default_factory=tuple)
    trusted: bool = False

    @property
    def privileged(self) -> bool:
        """Admins and this service itself see and change everything."""
        return self.admin or self.trusted


@dataclass(frozen=True)
class Person:
    """A hub user that a request is about (``?user=`` / ``user``)."""

    name: str
    admin: bool = False
    groups: tuple[str, ...] = ()


def is_member(person: Person, vc_groups: Iterable[str]) -> bool:
    """Admins belong to every VC; others through one of the VC's hub groups."""
    return person.admin or bool(set(person.groups) & set(vc_groups))


def act_for_refusal(caller: Identity, user: str) -> str | None:
    """Why ``caller`` may not act for ``user`` (None: it may). The sentence never depends on
    whether ``user`` exists."""
    if caller.privileged or (caller.kind == "user" and caller.name == user):
        return None
    return f"{caller.name} acts only as themself: only admins and the platform itself may act for another user"


def admin_refusal(caller: Identity, what: str) -> str | None:
    if caller.privileged:
        return None
    return f"only admins may {what}"


def member_refusal(person: Person, vc: str, vc_groups: Iterable[str]) -> str | None:
    if is_member(person, vc_groups):
        return None
    return f"{person.name} is not a member of VC {vc}"


def release_refusal(caller: Identity, kind: str, ref: str, running: bool) -> str | None:
    """Why ``caller`` may not release an allocation it owns (ownership is checked by lookup).

    Allocations belong to the platform: a job's is released when the job ends, a server's when
    the server stops. A person may drop only a server allocation whose server is gone.
    """
    if caller.privileged:
        return None
    if kind == "job":
        return f"allocation of job {ref} is released when the job ends: cancel the job instead"
    if running:
        return f"server {ref} is still running: stop the server instead, which releases its allocation"
    return None


def create_allocation_refusal(caller: Identity, kind: str) -> str | None:
    """Only the platform itself books job allocations (admission); people book servers."""
    if kind == "job" and not caller.trusted:
        return "allocations of kind job are made by the platform's admission queue; submit a job instead"
    return None


def sees_dataset(person: Person, owner: str, visibility: str, vc_groups: Iterable[str]) -> bool:
    """Admins see every dataset; the owner a private one; members of its VC a ``vc`` one."""
    if person.admin:
        return True
    if visibility == "private":
        return person.name == owner
    return is_member(person, vc_groups)


def dataset_owner_refusal(person: Person, owner: str, dataset: str, what: str) -> str | None:
    """Changing or deleting a dataset (or a version): its owner and admins."""
    if person.admin or person.name == owner:
        return None
    return f"{person.name} may not {what} dataset {dataset} of {owner}"
