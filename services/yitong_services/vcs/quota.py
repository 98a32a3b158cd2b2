"""Pure quota arithmetic: usage sums, free capacity and the admission check.

Nothing here touches the database or the network; every function takes plain values and
returns plain values, so the rules are tested against literals (tests/services/test_quota.py).

Rules (docs/architecture.md):

- a device (``vendor/name``) the backend's inventory lacks is refused first;
- a resource absent from a VC's quota is not granted by that VC;
- a VC's allocations never exceed its quota, and one user's never exceed ``user_caps``;
- devices are also limited by the backend inventory across all VCs (cpu and memory are
  over-committed on purpose: a notebook rarely uses what it asks for).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .quantities import Resources, human_amount, tidy


@dataclass(frozen=True)
class VCLimits:
    name: str
    quota: Resources
    user_caps: Resources = field(default_factory=dict)


@dataclass(frozen=True)
class Held:
    """What one existing allocation holds."""

    user: str
    resources: Resources


def is_device(resource: str) -> bool:
    return "/" in resource


def total(resources: Iterable[Resources]) -> Resources:
    out: dict[str, float] = {}
    for res in resources:
        for name, amount in res.items():
            out[name] = out.get(name, 0) + amount
    return {name: tidy(name, amount) for name, amount in out.items()}


def used(quota: Resources, held: Iterable[Held]) -> Resources:
    """Usage with every quota key present (0 when unused)."""
    out = {name: tidy(name, 0) for name in quota}
    out.update(total(h.resources for h in held))
    return out


def free(quota: Resources, usage: Resources) -> Resources:
    return {name: tidy(name, max(limit - usage.get(name, 0), 0)) for name, limit in quota.items()}


def vc_free(vc_quota: Resources, vc_used: Resources, inventory: Resources, cluster_used: Resources) -> Resources:
    """The one answer to "how much is free in this VC" (the picker, ``GET /vcs`` for the sidebar,
    the VC tab and ``yt vc ls``, the console): its quota left, each device capped by what the
    cluster has unused (its inventory less every VC's use): a quota of GPUs on a cluster without
    any frees none."""
    return free_now(free(vc_quota, vc_used), inventory, cluster_used)


def free_now(vc_free: Resources, inventory: Resources, cluster_used: Resources) -> Resources:
    """What the VC could start this moment: its free quota, and for devices no more than the
    cluster has unused (a VC may be granted 4 GPUs on a cluster that has none)."""
    out = dict(vc_free)
    for name, amount in vc_free.items():
        if is_device(name):
            left = max(inventory.get(name, 0) - cluster_used.get(name, 0), 0)
            out[name] = tidy(name, min(amount, left))
    return out


def at_once(request: Resources, vc: VCLimits, held: Resources, what: str = "trial") -> tuple[int, str] | None:
    """How many copies of ``request`` fit at once beside ``held`` (what the person's server
    holds) within the VC's quota and the per-user caps, and the sentence saying why (pure): the
    tightest resource, or None when nothing limits them."""
    tightest: tuple[int, str] | None = None
    for name, amount in sorted(request.items()):
        if amount <= 0:
            continue
        for limit, whose in (
            (vc.user_caps.get(name), "your per-user cap"),
            (vc.quota.get(name), f"VC {vc.name}'s quota"),
        ):
            if limit is None:
                continue
            have = held.get(name, 0)
            n = max(int((limit - have + 1e-9) // amount), 0)
            if tightest is None or n < tightest[0]:
                server = f", your server holds {human_amount(name, have)}" if have else ""
                head = f"at most {n} {what}{'s' if n != 1 else ''} can" if n else f"no {what} can"
                tightest = (
                    n,
                    f"{head} run at once: {whose} is {human_amount(name, limit)} {name}{server},"
                    f" each {what} asks {human_amount(name, amount)}",
                )
    return tightest


def _of(resource: str, have: float, limit: float) -> str:
    return f"{human_amount(resource, have)} of {human_amount(resource, limit)} {resource}"


def _asked(resource: str, have: float, asked: float, limit: float) -> str:
    """ ", N asked" when ``have`` alone leaves room: "1 of 2 in use" does not explain a refusal."""
    if have + 1e-9 >= limit:
        return ""
    return f", {human_amount(resource, asked)} asked"


def check(
    request: Resources,
    vc: VCLimits,
    held: Iterable[Held],
    user: str,
    inventory: Resources,
    cluster_used: Resources | None = None,
) -> str | None:
    """The reason ``user`` may not take ``request`` in ``vc``, or None when it fits.

    ``held`` are the VC's current allocations; ``cluster_used`` is the usage across all VCs
    (only devices are checked against the inventory).
    """
    held = list(held)
    vc_used = total(h.resources for h in held)
    user_used = total(h.resources for h in held if h.user == user)
    return check_usage(request, vc, vc_used, user_used, user, inventory, cluster_used)


def check_usage(
    request: Resources,
    vc: VCLimits,
    vc_used: Resources,
    user_used: Resources,
    user: str,
    inventory: Resources,
    cluster_used: Resources | None = None,
) -> str | None:
    """:func:`check` with the usage already summed (the admission pass keeps running totals)."""
    # devices first: when a GPU and memory both bind, the scarce device is the limit to name
    wanted = {
        name: amount for name, amount in sorted(request.items(), key=lambda kv: not is_device(kv[0])) if amount > 0
    }
    for name in wanted:
        if is_device(name) and inventory.get(name, 0) <= 0:
            return f"this cluster has no {name}"
    for name, amount in wanted.items():
        limit = vc.quota.get(name, 0)
        if limit <= 0:
            return f"VC {vc.name} has no {name} in its quota"
        in_use = vc_used.get(name, 0)
        if amount > limit + 1e-9:
            return f"VC {vc.name}: {human_amount(name, amount)} {name} asked, its quota is {human_amount(name, limit)}"
        if in_use + amount > limit + 1e-9:
            return f"VC {vc.name}: {_of(name, in_use, limit)} in use{_asked(name, in_use, amount, limit)}"
    for name, amount in wanted.items():
        if name not in vc.user_caps:
            continue
        cap = vc.user_caps[name]
        mine = user_used.get(name, 0)
        if amount > cap + 1e-9:
            return f"user cap in VC {vc.name}: {human_amount(name, amount)} {name} asked, the cap is {human_amount(name, cap)}"
        if mine + amount > cap + 1e-9:
            return f"user cap in VC {vc.name}: {user} uses {_of(name, mine, cap)}{_asked(name, mine, amount, cap)}"
    for name, amount in wanted.items():
        if not is_device(name) or cluster_used is None:
            continue
        in_use = cluster_used.get(name, 0)
        if amount > inventory[name]:
            return (
                f"this cluster: {human_amount(name, amount)} {name} asked, it has {human_amount(name, inventory[name])}"
            )
        if in_use + amount > inventory[name]:
            return f"this cluster: {_of(name, in_use, inventory[name])} in use{_asked(name, in_use, amount, inventory[name])}"
    return None
