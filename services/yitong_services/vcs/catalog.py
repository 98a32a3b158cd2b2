"""VC and profile CRUD on a session; refusals name what is in the way."""

from __future__ import annotations

from typing import Any, NamedTuple, TypeVar

from sqlalchemy import column, select, table
from sqlalchemy.orm import Session

from ..core.authz import Person, is_member
from ..core.errors import Refusal
from .models import VC, Allocation, Profile
from .schemas import ProfileIn, ProfilePatch, VCIn, VCPatch


def get_vc(session: Session, name: str) -> VC:
    vc = session.scalar(select(VC).where(VC.name == name))
    if vc is None:
        raise Refusal(404, f"there is no VC {name}")
    return vc


class VCFacts(NamedTuple):
    """What a submit checks of a VC (:func:`..jobs.records.check`), read as one row without the ORM."""

    name: str
    groups: list[str]
    quota: dict[str, Any]
    user_caps: dict[str, Any]


_V = TypeVar("_V", VC, VCFacts)


def member_vc(session: Session, person: Person, name: str) -> VC:
    """A VC ``person`` belongs to; a VC they do not belong to answers 404 like an unknown one."""
    return require_member(session.scalar(select(VC).where(VC.name == name)), person, name)


def require_member(vc: _V | None, person: Person, name: str) -> _V:
    """``vc`` (read by the caller, None if there is none) when ``person`` belongs to it; else the
    404 an unknown VC answers."""
    if vc is None or not is_member(person, vc.groups):
        raise Refusal(404, f"there is no VC {name}")
    return vc


def get_profile(session: Session, name: str) -> Profile:
    profile = session.scalar(select(Profile).where(Profile.name == name))
    if profile is None:
        raise Refusal(404, f"there is no profile {name}")
    return profile


def _check_profiles(session: Session, vc: str, names: list[str]) -> None:
    known = set(session.scalars(select(Profile.name).where(Profile.name.in_(names))))
    missing = [n for n in names if n not in known]
    if missing:
        raise Refusal(422, f"VC {vc} offers unknown profiles: {', '.join(missing)}")


def create_vc(session: Session, body: VCIn) -> VC:
    if session.scalar(select(VC.id).where(VC.name == body.name)) is not None:
        raise Refusal(409, f"VC {body.name} already exists")
    _check_profiles(session, body.name, body.profiles)
    vc = VC(**body.model_dump())
    session.add(vc)
    session.flush()
    return vc


def patch_vc(session: Session, name: str, patch: VCPatch) -> VC:
    vc = get_vc(session, name)
    changes = patch.model_dump(exclude_unset=True)
    for key, value in changes.items():
        if value is None and key not in ("idle_timeout", "storage_quota"):  # null: the hub's policy, no limit
            raise Refusal(422, f"{key}: may not be null")
    if "profiles" in changes:
        _check_profiles(session, name, changes["profiles"])
    for key, value in changes.items():
        setattr(vc, key, value)
    session.flush()
    return vc


def delete_vc(session: Session, name: str) -> None:
    vc = get_vc(session, name)
    live = session.scalars(select(Allocation).where(Allocation.vc == name).order_by(Allocation.id)).all()
    if live:
        names = ", ".join(f"{a.id} ({a.user}, {a.kind} {a.ref})" for a in live)
        raise Refusal(409, f"VC {name} still has allocations: {names}")
    # datasets build on VCs, not the other way round: name their table, not their model
    owned = table("datasets", column("name"), column("vc"))
    datasets = session.scalars(select(owned.c.name).where(owned.c.vc == name).order_by(owned.c.name)).all()
    if datasets:
        raise Refusal(409, f"VC {name} still has datasets: {', '.join(f'{name}/{d}' for d in datasets)}")
    session.delete(vc)


def create_profile(session: Session, body: ProfileIn) -> Profile:
    if session.scalar(select(Profile.id).where(Profile.name == body.name)) is not None:
        raise Refusal(409, f"profile {body.name} already exists")
    values = body.model_dump()
    values["display_name"] = values["display_name"] or body.name
    profile = Profile(**values)
    session.add(profile)
    session.flush()
    return profile


def patch_profile(session: Session, name: str, patch: ProfilePatch) -> Profile:
    profile = get_profile(session, name)
    changes = patch.model_dump(exclude_unset=True)
    for key, value in changes.items():
        if value is None and key not in ("accelerator", "arch"):
            raise Refusal(422, f"{key}: may not be null")
        setattr(profile, key, value)
    session.flush()
    return profile


def offering(session: Session, profile: str) -> list[str]:
    return [vc.name for vc in session.scalars(select(VC).order_by(VC.name)) if profile in vc.profiles]


def delete_profile(session: Session, name: str) -> None:
    profile = get_profile(session, name)
    vcs = offering(session, name)
    if vcs:
        raise Refusal(409, f"profile {name} is offered by VCs: {', '.join(vcs)}")
    session.delete(profile)
