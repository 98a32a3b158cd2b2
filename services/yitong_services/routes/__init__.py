"""REST routes under ``<prefix>api/v1``: one module per resource, each with a module-level ``router``."""

from fastapi import APIRouter

from . import allocations, health, me, profiles, spawn_options, usage, vcs

ROUTERS: list[APIRouter] = [
    health.router,
    me.router,
    vcs.router,
    profiles.router,
    spawn_options.router,
    allocations.router,
    usage.router,
]
