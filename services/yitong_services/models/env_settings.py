"""The settings file's ``models`` section: where MLServer's environment is and how it is built."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


class ModelsSettings(BaseModel):
    """``models``: MLServer's own environment (models/mlserver_env.py builds it on first need)."""

    model_config = ConfigDict(extra="forbid")

    mlserver: Path | None = Field(
        None,
        description="MLServer's `mlserver` executable, in the environment replicas run in (its `python` beside it);"
        " null: $YITONG_MLSERVER, else <checkout>/.venv-mlserver/bin/mlserver. Missing at the first deploy:"
        " built by `build` (e.g. /opt/mlserver/bin/mlserver)",
    )
    build: list[str] | None = Field(
        None,
        description="the command that builds that environment when a deploy finds it missing, run by the service"
        " in the checkout with YITONG_MLSERVER_VENV (the folder two levels above `mlserver`) in its environment;"
        " its output goes to <data_dir>/logs/mlserver-install.log; null: `make mlserver MLSERVER_VENV=<that folder>`;"
        " [] : never build (a deploy then fails at once, saying so)",
    )
