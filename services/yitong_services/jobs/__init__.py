"""Distributed training jobs: the job spec, importers (OpenPAI v2, Kubeflow PyTorchJob), the pure
per-backend builders (local processes, Slurm batch scripts, Kubernetes manifests) and the runners.

The spec reference is docs/jobs-spec.md. Nothing is imported eagerly: the process wrappers
(``wrapper``, ``rankshim``) run as ``python -m yitong_services.jobs.<module>`` in front of every
job process and must start fast, without pydantic.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the job wrapper ~5 ms to import; it needs none of this
    from typing import Any

_SPEC_NAMES = ("JobSpec", "JobSpecError", "parse_job_yaml", "per_job_resources", "per_node_resources")
__all__ = list(_SPEC_NAMES)


def __getattr__(name: str) -> Any:
    if name in _SPEC_NAMES:
        return getattr(importlib.import_module(".spec", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
