"""Distributed training jobs: the job spec, importers (OpenPAI v2, Kubeflow PyTorchJob) and the
pure per-backend builders (local processes, Slurm batch scripts, Kubernetes manifests).

Nothing here does I/O: the runners that submit and watch jobs gather settings and call these.
The spec reference is docs/jobs-spec.md.
"""

from .spec import JobSpec, JobSpecError, parse_job_yaml, per_job_resources, per_node_resources

__all__ = ["JobSpec", "JobSpecError", "parse_job_yaml", "per_job_resources", "per_node_resources"]
