"""NNI v2 experiment config (``config.yml``) -> our experiment document (pure).

Maps experimentName, searchSpace (a client inlines ``searchSpaceFile``), trialCommand,
trialCodeDirectory, trialConcurrency, maxTrialNumber, maxExperimentDuration, trialGpuNumber,
tuner / assessor with classArgs (``optimize_mode`` becomes the objective's direction) and
trainingService (the platform's backend runs the trials; the platform name is noted).

``yitong.trial_imports`` (what the trial code imports, listed by the client: yitong_lab/hpo/imports.py)
is checked against the trials' environment where the caller can tell (``importable``: the
platform's Python, which runs a ``kernel`` trial on the local and Slurm backends): each package
it lacks is named in a note, since every trial would fail with ``No module named ...``. A trial
in an image gets a note that the image must have them (nothing here can look inside it).
"""

from __future__ import annotations

import re
from collections.abc import Callable
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


def package_notes(imports: Any, template: dict[str, Any], importable: Callable[[str], bool] | None) -> list[str]:
    """Notes on the packages the trial code imports that its environment lacks (or may lack)."""
    if not isinstance(imports, list) or not all(isinstance(m, str) and m.isidentifier() for m in imports):
        raise NniConfigError("yitong.trial_imports: a list of module names")
    imports = imports[:100]
    env: dict[str, Any] = template["environment"] if isinstance(template.get("environment"), dict) else {}
    if not imports:
        return []
    words = str(template.get("command") or "").split()
    own = next((w for w in words if "=" not in w), "")  # the program, after any NAME=value
    pythonpath = any(w.startswith("PYTHONPATH=") for w in words) or "PYTHONPATH" in (template.get("env") or {})
    if env.get("image") or importable is None or "/" in own or pythonpath:
        where = f"the image {env['image']}" if env.get("image") else "the trials' image"
        if not env.get("image") and "/" in own:
            where = f"{own}, which trialCommand runs,"
        elif not env.get("image") and pythonpath:
            where = "the PYTHONPATH the trial sets (beside the platform's Python)"
        return [
            f"trialCodeDirectory: the trial code imports {', '.join(imports)}; {where} must have them "
            "(Yitong cannot look inside it), or every trial fails with No module named ..."
        ]
    missing = [m for m in imports if not importable(m)]
    if not missing:
        return []
    kernel = env.get("kernel") or "python3"
    notes = [
        f"trialCodeDirectory: the trial code imports {', '.join(missing)}, which the trials' environment "
        f"(kernel {kernel}: the platform's Python on this backend) does not have; every trial would fail with "
        f"No module named '{missing[0]}'. Install them there, or name an image that has them in "
        'yitong.template.environment.image (docs/hpo.md, "Packages")'
    ]
    if "nni" in missing:
        notes.append(
            "trialCodeDirectory: without the nni package, change the trial's three NNI calls to yitong_lab.hpo's "
            "(nni.get_next_parameter -> hpo.get_params, report_intermediate_result -> hpo.report, "
            "report_final_result -> hpo.report_final), which the platform's Python has"
        )
    return notes


def from_nni(
    doc: Any, vc: str, name: str | None = None, importable: Callable[[str], bool] | None = None
) -> tuple[dict[str, Any], list[str]]:
    """``(experiment document, notes)``; NniConfigError names what cannot be used. ``importable``:
    whether the trials' environment has a module, where the caller can tell (else None)."""
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
    notes += package_notes(extra.get("trial_imports") or [], template, importable)
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
