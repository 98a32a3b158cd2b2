"""Parts of the job spec: framework, environment, dataset inputs, durations (docs/jobs-spec.md)."""

from __future__ import annotations

import re
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..vcs.schemas import Name

ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
IMAGE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@-]{0,254}$")
KERNEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
DATASET_RE = re.compile(
    r"^(?P<vc>[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?)/(?P<name>[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?)"
    r"(@(?P<ref>[A-Za-z0-9][A-Za-z0-9._-]{0,63}))?$"
)
DURATION_RE = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
PRIORITIES = {"low": -100, "normal": 0, "high": 100}
RESERVED_ENV_PREFIX = "YITONG_"
MAX_NODES = 1024


class Framework(StrEnum):
    pytorch = "pytorch"
    tensorflow = "tensorflow"
    mpi = "mpi"
    mindspore = "mindspore"
    plain = "plain"


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Environment(StrictModel):
    image: str | None = None
    kernel: str | None = None

    @field_validator("image")
    @classmethod
    def _image(cls, v: str | None) -> str | None:
        if v is not None and not IMAGE_RE.match(v):
            raise ValueError(f"{v!r} is not an image reference like registry/name:tag")
        return v

    @field_validator("kernel")
    @classmethod
    def _kernel(cls, v: str | None) -> str | None:
        if v is not None and not KERNEL_RE.match(v):
            raise ValueError(f"{v!r} is not a kernel name (letters, digits, '.', '_', '-')")
        return v

    @model_validator(mode="after")
    def _one(self) -> Environment:
        if not self.image and not self.kernel:
            raise ValueError("give an image, a kernel, or both")
        return self


class Input(StrictModel):
    dataset: str = Field(description="vc/name@ref; ref defaults to latest")
    mount: Name | None = None

    @field_validator("dataset")
    @classmethod
    def _dataset(cls, v: str) -> str:
        if not isinstance(v, str) or not DATASET_RE.match(v):
            raise ValueError(
                f"{v!r} is not a dataset version like vision/mnist@3, vision/mnist@v3 or vision/mnist@latest"
            )
        return v if "@" in v else f"{v}@latest"

    @model_validator(mode="after")
    def _default_mount(self) -> Input:
        if self.mount is None:
            self.mount = self.parts()[1]
        return self

    def parts(self) -> tuple[str, str, str]:
        """``("vision", "mnist", "3")``."""
        m = DATASET_RE.match(self.dataset)
        assert m is not None
        return m["vc"], m["name"], m["ref"] or "latest"


def parse_duration(value: object) -> int:
    """Seconds from ``3600``, ``"90m"``, ``"2h"``, ``"1h30m"``, ``"1d"``."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration")
    if isinstance(value, int):
        seconds = value
    elif isinstance(value, str) and value.strip().isdigit():
        seconds = int(value)
    elif isinstance(value, str) and value.strip() and (m := DURATION_RE.match(value.strip())):
        d, h, mi, s = (int(g or 0) for g in m.groups())
        seconds = ((d * 24 + h) * 60 + mi) * 60 + s
    else:
        raise ValueError(f"{value!r} is not a duration: use seconds or e.g. 90m, 2h, 1h30m, 1d")
    if seconds < 1:
        raise ValueError("must be at least 1 second")
    return seconds
