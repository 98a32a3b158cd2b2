"""NNI v2 experiment config (``config.yml``) -> our experiment document (pure).

Maps experimentName, searchSpace (a client inlines ``searchSpaceFile``), trialCommand,
trialCodeDirectory, trialConcurrency, maxTrialNumber, maxExperimentDuration, trialGpuNumber,
tuner / assessor with classArgs (``optimize_mode`` becomes the objective's direction) and
trainingService (the platform's backend runs the trials; the platform name is noted).
"""

from __future__ import annotations

import re
from typing import Any

from ..jobs.fields import parse_duration

KNOWN = {
    "experimentName",
    "searchSpace",
    "searchSpaceFile",
    "trialCommand",
    "trialCodeDirectory",
    "trialConcurrency",
    "trialGpuNumber",
    "maxTrialNumber",
    "maxExperimentDuration",
    "tuner",
    "assessor",
    "trainingService",
    "useAnnotation",
    "debug",
    "logLevel",
    "experimentWorkingDirectory",
    "nniManagerIp",
    "yitong",
}
DEFAULT_TEMPLATE = {"environment": {"kernel": "python3"}, "cpu": 1, "memory": "1Gi"}


class NniConfigError(ValueError):
    pass


def _name(text: Any) -> str:
    slug = re.sub(r"[^a-z0-9-]+", "-", str(text or "experiment").lower()).strip("-")[:32].strip("-")
    return slug or "experiment"


def _algorithm(section: Any, what: str) -> tuple[dict[str, Any] | None, str | None]:
    if section is None:
        return None, None
    if not isinstance(section, dict) or not isinstance(section.get("name"), str):
        raise NniConfigError(f"{what}: must be a map with name (and classArgs)")
    for key in ("codeDirectory", "className"):
        if key in section:
            raise NniConfigError(f"{what}.{key}: customized {what}s run NNI's own dispatcher; use a built-in name")
    args = dict(section.get("classArgs") or {})
    mode = args.pop("optimize_mode", None)
    if mode not in (None, "maximize", "minimize"):
        raise NniConfigError(f"{what}.classArgs.optimize_mode: maximize or minimize, not {mode!r}")
    return {"name": section["name"], "args": args}, mode


def from_nni(doc: Any, vc: str, name: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """``(experiment document, notes)``; NniConfigError names what cannot be used."""
    if not isinstance(doc, dict):
        raise NniConfigError("config: must be a map of NNI v2 fields")
    notes = [f"{k}: not an NNI v2 field we know; ignored" for k in doc if k not in KNOWN]
    if "searchSpace" not in doc:
        if "searchSpaceFile" in doc:
            raise NniConfigError("searchSpaceFile: the client reads the file; send its content as searchSpace")
        raise NniConfigError("searchSpace: required (or searchSpaceFile)")
    command = doc.get("trialCommand")
    if not isinstance(command, str) or not command.strip():
        raise NniConfigError("trialCommand: required, the shell command that runs one trial")
    if doc.get("useAnnotation"):
        raise NniConfigError(
            "useAnnotation: NNI annotations need NNI's code rewriter; call nni.get_next_parameter() instead"
        )
    tuner, mode = _algorithm(doc.get("tuner") or {"name": "TPE"}, "tuner")
    assessor, amode = _algorithm(doc.get("assessor"), "assessor")
    direction = mode or amode or "maximize"
    extra = doc.get("yitong") or {}
    if not isinstance(extra, dict):
        raise NniConfigError("yitong: must be a map (template: a job spec's fields for the trials)")
    template = {**DEFAULT_TEMPLATE, **(extra.get("template") or {}), "command": command}
    gpus = doc.get("trialGpuNumber") or 0
    if gpus:
        if not isinstance(gpus, int) or gpus < 0:
            raise NniConfigError("trialGpuNumber: must be a whole number")
        template.setdefault("accelerator", {"type": "gpu", "count": gpus})
    service = doc.get("trainingService") or {"platform": "local"}
    platform = service.get("platform") if isinstance(service, dict) else None
    if isinstance(service, list) or platform not in (None, "local"):
        notes.append(f"trainingService: {platform or 'hybrid'} is replaced by the platform's own job backend")
    out: dict[str, Any] = {
        "name": name or _name(doc.get("experimentName")),
        "vc": vc,
        "space": doc["searchSpace"],
        "tuner": tuner,
        "assessor": assessor,
        "objective": {"metric": "default", "direction": direction},
        "concurrency": doc.get("trialConcurrency", 1),
        "max_trials": doc.get("maxTrialNumber", 10),
        "template": template,
    }
    if doc.get("trialCodeDirectory"):
        out["code"] = {"path": str(doc["trialCodeDirectory"])}
    if doc.get("maxExperimentDuration") is not None:
        try:
            out["max_duration"] = parse_duration(doc["maxExperimentDuration"])
        except ValueError as e:
            raise NniConfigError(f"maxExperimentDuration: {e}") from None
    if "seed" in (tuner or {}).get("args", {}):
        out["seed"] = tuner["args"].pop("seed")  # type: ignore[index]
    return out, notes
