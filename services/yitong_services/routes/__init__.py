"""REST routes under ``<prefix>api/v1``: one module per resource, each with a module-level ``router``."""

from fastapi import APIRouter

from . import (
    allocations,
    audit,
    datasets,
    endpoints,
    experiments,
    health,
    job_logs,
    jobs,
    me,
    models,
    objects,
    profiles,
    runs,
    spawn_options,
    ssh_keys,
    storage,
    usage,
    vcs,
    version_data,
    versions,
)

ROUTERS: list[APIRouter] = [
    health.router,
    me.router,
    ssh_keys.router,
    vcs.router,
    profiles.router,
    spawn_options.router,
    allocations.router,
    usage.router,
    datasets.router,
    versions.router,
    version_data.router,
    objects.router,
    storage.router,
    jobs.router,
    experiments.router,
    job_logs.router,
    runs.router,
    models.router,
    endpoints.router,
    audit.router,
]
