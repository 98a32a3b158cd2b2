"""The experiment calls of :class:`yitong_lab.client.Client` (stdlib only here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from yitong_lab.calls import ClientCalls

Experiment = dict[str, Any]
TERMINAL = ("done", "stopped")


def nni_config_text(path: str | Path) -> str:
    """An NNI v2 config file as the service takes it: ``searchSpaceFile`` read and inlined as
    ``searchSpace``, ``trialCodeDirectory`` made absolute (both relative to the file, as NNI does),
    and the packages the trial code imports in ``yitong.trial_imports`` (hpo/imports.py)."""
    import yaml

    p = Path(path).expanduser()
    if not p.is_file():
        raise FileNotFoundError(f"{path}: no such NNI config file")
    doc = yaml.safe_load(p.read_text())
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: an NNI config is a map of fields")
    base = p.resolve().parent
    if "searchSpaceFile" in doc and "searchSpace" not in doc:
        space_path = base / str(doc.pop("searchSpaceFile"))
        if not space_path.is_file():
            raise FileNotFoundError(f"searchSpaceFile: {space_path} does not exist")
        doc["searchSpace"] = json.loads(space_path.read_text())
    doc["trialCodeDirectory"] = str((base / str(doc.get("trialCodeDirectory") or ".")).resolve())
    # what the trial code imports: the service notes those its environment lacks
    from yitong_lab.hpo.imports import trial_imports

    extra = doc.get("yitong")
    if extra is None or isinstance(extra, dict):
        doc["yitong"] = {**(extra or {}), "trial_imports": trial_imports(doc["trialCodeDirectory"])}
    return json.dumps(doc)


class HpoCalls(ClientCalls):
    """``create_experiment``, ``experiments``, ``experiment``, ``stop_experiment``,
    ``resume_experiment``, ``extend_experiment``, ``clone_experiment``, ``importance``."""

    def create_experiment(
        self,
        doc: dict[str, Any] | None = None,
        *,
        nni_config: str | Path | None = None,
        vc: str | None = None,
        name: str | None = None,
    ) -> Experiment:
        """Create from our document (a dict: name, vc, space, tuner, assessor, objective,
        concurrency, max_trials, max_duration, template), or from an NNI v2 config file."""
        if nni_config is not None:
            params = {k: v for k, v in (("from", "nni"), ("vc", vc), ("name", name)) if v}
            body = nni_config_text(nni_config).encode()
            return self.create_call(
                "POST", "/experiments", content=body, content_type="application/json", params=params
            )
        return self.create_call("POST", "/experiments", json=doc)

    def experiments(self, vc: str | None = None) -> list[Experiment]:
        return self.request("GET", "/experiments", params={"vc": vc} if vc else None)

    def experiment(self, experiment_id: int, trials: bool = True) -> Experiment:
        """One experiment with its trials, counts, best trial and best-so-far curve; ``trials=False``:
        the counts and the best trial only (cheap to poll)."""
        return self.request("GET", f"/experiments/{experiment_id}", params=None if trials else {"trials": "false"})

    def stop_experiment(self, experiment_id: int) -> Experiment:
        return self.request("POST", f"/experiments/{experiment_id}/stop")

    def resume_experiment(self, experiment_id: int) -> Experiment:
        return self.request("POST", f"/experiments/{experiment_id}/resume")

    def extend_experiment(self, experiment_id: int, trials: int) -> Experiment:
        return self.request("POST", f"/experiments/{experiment_id}/extend", json={"trials": trials})

    def clone_experiment(self, experiment_id: int, patch: dict[str, Any] | None = None) -> Experiment:
        return self.create_call("POST", f"/experiments/{experiment_id}/clone", json={"patch": patch or {}})

    def importance(self, experiment_id: int) -> dict[str, float]:
        return self.request("GET", f"/experiments/{experiment_id}/importance")["importance"]
