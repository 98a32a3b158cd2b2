"""The experiment document (``POST /experiments``): pydantic models, checked whole at create."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..jobs.fields import Name
from .space import SpaceError, check
from .tuners import TunerError, canonical_assessor, canonical_tuner, check_args

MAX_TRIALS = 10_000
MAX_CONCURRENCY = 256
MAX_DURATION = 366 * 86400


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Objective(Strict):
    metric: str = Field("default", min_length=1, max_length=64, description="the key of a dict result (NNI: 'default')")
    direction: Literal["maximize", "minimize"] = "maximize"


class Algorithm(Strict):
    name: str = Field(min_length=1, max_length=64)
    args: dict[str, Any] = Field({}, max_length=32, description="NNI's classArgs")


class ExperimentSpec(Strict):
    name: Name
    vc: Name
    space: dict[str, Any] = Field(description="NNI search-space format (every NNI type)")
    tuner: Algorithm = Algorithm(name="TPE")
    assessor: Algorithm | None = None
    objective: Objective = Objective()
    concurrency: int = Field(1, ge=1, le=MAX_CONCURRENCY)
    max_trials: int = Field(10, ge=1, le=MAX_TRIALS)
    max_duration: int | None = Field(None, ge=1, le=MAX_DURATION, description="seconds")
    seed: int = Field(0, ge=0, le=2**31 - 1)
    template: dict[str, Any] = Field(description="a job spec without name and vc (jobs-spec.md)")
    code: dict[str, Any] = Field({}, description="as a job's code: {commit, dirty_hash, path}")

    @model_validator(mode="after")
    def _finish(self) -> ExperimentSpec:
        try:
            check(self.space)
            self.tuner.name = canonical_tuner(self.tuner.name)
            if self.assessor is not None:
                self.assessor.name = canonical_assessor(self.assessor.name)
            check_args(
                self.tuner.name,
                self.assessor.name if self.assessor else None,
                self.tuner.args,
                self.assessor.args if self.assessor else {},
                self.space,
            )
        except (SpaceError, TunerError) as e:
            raise ValueError(str(e)) from None
        except (TypeError, ValueError) as e:  # an Optuna constructor's own refusal of an argument
            raise ValueError(f"tuner or assessor arguments: {e}") from None
        for key in ("name", "vc"):
            if key in self.template:
                raise ValueError(f"template.{key}: the experiment sets it; leave it out of the template")
        return self


def direction_sign(objective: dict[str, Any]) -> float:
    return 1.0 if objective.get("direction", "maximize") == "maximize" else -1.0
