"""The Yitong job spec (docs/jobs-spec.md): a pydantic model, the YAML parser, quota totals.

``command`` is either a list (an argv, executed without a shell) or a string (the user's own
shell text, run as ``bash -c <text>``). Platform values (job id, names, paths) are never pasted
into that text: they reach the program as ``YITONG_*`` environment variables.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from ..core.limits import MAX_ARGS, MAX_COMMAND, MAX_ITEMS, MAX_TEXT, load_yaml
from ..vcs.quantities import Resources, tidy
from ..vcs.schemas import Accelerator, Cpu, Memory
from .fields import (
    ENV_NAME_RE,
    MAX_NODES,
    PRIORITIES,
    RESERVED_ENV_PREFIX,
    Environment,
    Framework,
    Input,
    Name,
    StrictModel,
    parse_duration,
)
from .spec_errors import JobSpecError, describe

Argv = Annotated[list[Annotated[str, Field(max_length=MAX_COMMAND)]], Field(min_length=1, max_length=MAX_ARGS)]

__all__ = ["JobSpec", "JobSpecError", "parse_job_yaml", "per_job_resources", "per_node_resources", "spec_from_dict"]


class JobSpec(StrictModel):
    name: Name
    vc: Name
    environment: Environment
    command: Argv | Annotated[str, Field(min_length=1, max_length=MAX_COMMAND)] = Field(
        description="an argv list (no shell) or a shell command string (bash -c)"
    )
    framework: Framework = Framework.plain
    nodes: int = Field(1, ge=1, le=MAX_NODES)
    accelerator: Accelerator | None = None
    cpu: Cpu = 1.0
    memory: Memory = 2 * 2**30
    procs_per_node: int | None = Field(None, ge=1, le=256)
    inputs: list[Input] = Field([], max_length=MAX_ITEMS)
    outputs: str = Field("outputs", min_length=1, max_length=MAX_TEXT)
    env: dict[str, Annotated[str, Field(max_length=MAX_COMMAND)]] = Field({}, max_length=MAX_ITEMS)
    retries: int = Field(0, ge=0, le=100)
    priority: int | str = "normal"
    max_run_time: int | None = None
    hub_token: bool = Field(
        True,
        description="give the job a short-lived hub token of its owner (JUPYTERHUB_API_TOKEN, YT_TOKEN) so "
        "yt, %yt and the SDK act as the owner inside it; false for a job that never calls the platform "
        "(a model server): its code then cannot act as the owner",
    )

    @field_validator("command", mode="before")
    @classmethod
    def _command(cls, v: Any) -> list[str] | str:
        if isinstance(v, str):
            if len(v) > MAX_COMMAND:
                raise ValueError(f"is longer than {MAX_COMMAND} characters")
            if not v.strip():
                raise ValueError("is empty")
            if "\0" in v:
                raise ValueError("contains a NUL character")
            return v
        if isinstance(v, list) and v:
            if len(v) > MAX_ARGS or any(isinstance(a, str) and len(a) > MAX_COMMAND for a in v):
                raise ValueError(f"at most {MAX_ARGS} arguments of at most {MAX_COMMAND} characters each")
            if not all(isinstance(a, str) for a in v):
                raise ValueError("every argument must be a string (quote numbers in YAML)")
            if any("\0" in a for a in v) or not v[0]:
                raise ValueError("the program name is empty or an argument contains a NUL character")
            return v
        raise ValueError("give a list of arguments or a shell command string")

    @field_validator("cpu")
    @classmethod
    def _cpu(cls, v: float) -> float:
        if v <= 0:
            raise ValueError("must be more than 0")
        return v

    @field_validator("memory")
    @classmethod
    def _memory(cls, v: int) -> int:
        if v < 2**20:
            raise ValueError("must be at least 1Mi")
        return v

    @field_validator("outputs")
    @classmethod
    def _outputs(cls, v: str) -> str:
        parts = v.split("/")
        if not v or v.startswith("/") or any(p in ("", ".", "..") for p in parts) or re.search(r"[\0-\x1f\\]", v):
            raise ValueError(f"{v!r} must be a relative path inside the job's directory (no '..', no leading '/')")
        return v

    @field_validator("env", mode="before")
    @classmethod
    def _env(cls, v: Any) -> dict[str, str]:
        if not isinstance(v, dict):
            raise ValueError("must be a map of NAME: value")
        if len(v) > MAX_ITEMS:
            raise ValueError(f"has {len(v)} variables; at most {MAX_ITEMS}")
        out: dict[str, str] = {}
        for key, value in v.items():
            if not isinstance(key, str) or not ENV_NAME_RE.match(key):
                raise ValueError(f"{key!r} is not a variable name (letters, digits, '_', not starting with a digit)")
            if key.startswith(RESERVED_ENV_PREFIX):
                raise ValueError(f"{key}: names starting with {RESERVED_ENV_PREFIX} are set by the platform")
            if isinstance(value, bool):
                value = "true" if value else "false"
            if not isinstance(value, (str, int, float)):
                raise ValueError(f"{key}: the value must be a string or a number")
            if len(str(value)) > MAX_COMMAND:
                raise ValueError(f"{key}: the value is longer than {MAX_COMMAND} characters")
            if "\0" in str(value):
                raise ValueError(f"{key}: the value contains a NUL character")
            out[key] = str(value)
        return out

    @field_validator("priority", mode="before")
    @classmethod
    def _priority(cls, v: Any) -> int | str:
        if isinstance(v, str) and v.lower() in PRIORITIES:
            return v.lower()
        if isinstance(v, int) and not isinstance(v, bool) and -1000 <= v <= 1000:
            return v
        raise ValueError(f"{v!r} is not a priority: use low, normal, high or a number from -1000 to 1000")

    @field_validator("max_run_time", mode="before")
    @classmethod
    def _max_run_time(cls, v: Any) -> int | None:
        return None if v is None else parse_duration(v)

    @model_validator(mode="after")
    def _finish(self) -> JobSpec:
        mounts = [str(i.mount) for i in self.inputs]
        if dup := sorted({m for m in mounts if mounts.count(m) > 1}):
            raise ValueError(f"inputs: mount {dup[0]!r} is used twice; give each input its own mount")
        if self.procs_per_node is None:
            self.procs_per_node = self.accelerator.count if self.accelerator else 1
        return self

    @property
    def priority_value(self) -> int:
        return PRIORITIES[self.priority] if isinstance(self.priority, str) else self.priority

    @property
    def shell(self) -> bool:
        return isinstance(self.command, str)


def spec_from_dict(doc: Any) -> JobSpec:
    if not isinstance(doc, dict):
        raise JobSpecError([f"spec: must be a map of fields, got {type(doc).__name__}"])
    try:
        return JobSpec.model_validate(doc)
    except ValidationError as e:
        raise JobSpecError(describe(e)) from None


def parse_job_yaml(text: str) -> JobSpec:
    """The spec in ``text`` or JobSpecError naming each bad field."""
    try:
        doc = load_yaml(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or "cannot be parsed"
        raise JobSpecError([f"spec: not valid YAML{where}: {problem}"]) from None
    return spec_from_dict(doc)


def per_node_resources(spec: JobSpec) -> Resources:
    out: Resources = {"cpu": spec.cpu, "memory": spec.memory}
    if spec.accelerator:
        out[spec.accelerator.type] = spec.accelerator.count
    return out


def per_job_resources(spec: JobSpec) -> Resources:
    """What the whole job holds, for quota checks: per-node amounts times ``nodes``."""
    return {k: tidy(k, v * spec.nodes) for k, v in per_node_resources(spec).items()}


def request_of(spec: JobSpec) -> dict[str, Any]:
    """What admission needs of a spec, stored on the job at submit (``jobs.request``) so that a
    pass over a long queue neither re-validates specs nor recomputes their resources."""
    accelerator = {"type": spec.accelerator.type, "count": spec.accelerator.count} if spec.accelerator else None
    return {"resources": per_job_resources(spec), "accelerator": accelerator}
