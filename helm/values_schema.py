"""Write helm/yitong/values.schema.json from the definitions the hub and the service validate with.

    .venv/bin/python helm/values_schema.py           # write it
    .venv/bin/python helm/values_schema.py --check   # exit 1 when the file is stale (tests/helm runs this)

The settings keys come from the service's pydantic models (``core.settings.Settings``, the
Kubernetes backend's ``runner_kube.KubeSettings``, Slurm's ``SlurmSettings``) and from the hub's
JSON Schema (``yitong_spawner.settings_schema``); the chart's own keys (``platform``, ``jupyterhub``,
``global``) are described here. Sections the service reads leniently stay open (as the service
ignores unknown keys there); every other object is closed (``additionalProperties: false``).
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_FILE = ROOT / "helm" / "yitong" / "values.schema.json"
REF = "#/$defs/{model}"

#: the quantities people type (``500m``, ``16Gi``) or plain numbers, where the models parse them
#: with a before-validator whose JSON schema says only number/integer
QUANTITY = {
    "anyOf": [
        {"type": "number", "minimum": 0},
        {"type": "string", "pattern": r"^\s*([0-9]+(\.[0-9]*)?|\.[0-9]+)\s*(m|k|K|M|G|T|P|Ki|Mi|Gi|Ti|Pi)?\s*$"},
    ]
}
QUANTITY_FIELDS = {"ProfileSpec": ("cpu", "memory"), "StorageSettings": ("pack_threshold", "max_upload_bytes")}

IMAGE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "tag"],
    "properties": {
        "name": {"type": "string", "minLength": 1, "description": "image name without the tag"},
        "tag": {"type": "string", "minLength": 1},
        "pullPolicy": {"enum": ["IfNotPresent", "Always", "Never"]},
    },
}

PLATFORM = {
    "type": "object",
    "additionalProperties": False,
    "description": "The platform service's Deployment (only the chart has these keys).",
    "properties": {
        "image": {**IMAGE, "description": "the platform service's image (images/service)"},
        "imagePullSecrets": {"type": "array", "items": {"type": "string"}, "description": "Secret names"},
        "resources": {"type": "object", "description": "the container's ResourceRequirements"},
        "nodeSelector": {"type": "object", "additionalProperties": {"type": "string"}},
        "tolerations": {"type": "array", "items": {"type": "object"}},
        "dataDir": {
            "type": "string",
            "pattern": "^/",
            "description": "where backends.kubernetes.data_volume is mounted in the platform's pod (its data directory)",
        },
        "rbac": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "scope": {
                    "enum": ["vcs", "cluster"],
                    "description": "vcs: the platform and the hub may act in the namespaces of the VCs listed in"
                    " these values; cluster: in every namespace (VCs created later through the API)",
                }
            },
        },
        "resourceQuotas": {
            "type": "boolean",
            "description": "a ResourceQuota per VC namespace at its quota (only when backends.kubernetes.cohort is"
            " null: with a cohort, VCs borrow beyond their quota)",
        },
        "networkPolicy": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "enabled": {"type": "boolean", "description": "only the hub and the proxy reach the platform's port"},
                "extraIngress": {
                    "type": "array",
                    "items": {"type": "object"},
                    "description": "more NetworkPolicyIngressRules for the platform's pod (a Prometheus)",
                },
            },
        },
    },
}

#: a profile written as zero-to-jupyterhub's ``singleuser.profileList`` entries (KubeSpawner's
#: ``profile_list``), which the service expands into profiles (vcs/profile_list.py, docs/vcs.md)
OVERRIDE = {
    "type": "object",
    "description": "KubeSpawner traits (image, cpu_limit, mem_limit, extra_resource_limits, ...)",
}
Z2JH_PROFILE = {
    "type": "object",
    "additionalProperties": False,
    "description": "a z2jh profileList entry: one profile per combination of its options' choices, named <slug> or"
    " <slug>-<choice>...; a VC's profiles may name the slug (docs/vcs.md)",
    "properties": {
        "display_name": {"type": "string"},
        "description": {"type": "string"},
        "slug": {
            "type": "string",
            "minLength": 1,
            "maxLength": 32,
            "description": "default: the display name, slugified",
        },
        "default": {"type": "boolean"},
        "kubespawner_override": OVERRIDE,
        "profile_options": {
            "type": "object",
            "additionalProperties": {
                "type": ["object", "null"],
                "properties": {
                    "display_name": {"type": "string"},
                    "choices": {
                        "type": ["object", "null"],
                        "additionalProperties": {
                            "type": ["object", "null"],
                            "properties": {
                                "display_name": {"type": "string"},
                                "default": {"type": "boolean"},
                                "kubespawner_override": OVERRIDE,
                            },
                        },
                    },
                    "unlisted_choice": {
                        "type": ["object", "null"],
                        "properties": {"enabled": {"type": "boolean"}, "kubespawner_override": OVERRIDE},
                    },
                },
            },
        },
        "vcs": {"type": "array", "items": {"type": "string"}, "description": "the VCs that offer it (a Yitong key)"},
    },
}
#: how the service tells a z2jh entry from a Yitong profile in a map (profile_list.is_z2jh)
Z2JH_MARKS = ("kubespawner_override", "profile_options", "slug", "default")


def profiles_schema(profile: dict[str, Any], names: dict[str, Any]) -> dict[str, Any]:
    """``profiles``: a map of name -> a Yitong profile or a z2jh entry, or a z2jh ``profileList``."""
    from yitong_services.vcs.profile_list import ENTRY_KEYS

    if set(Z2JH_PROFILE["properties"]) != ENTRY_KEYS:
        raise ValueError("Z2JH_PROFILE's keys differ from vcs/profile_list.py ENTRY_KEYS")
    entry = {"$ref": REF.format(model="Z2JHProfile")}
    named = {"anyOf": [{"required": ["slug"]}, {"required": ["display_name"]}]}
    return {
        "description": "the notebook environments: a map of name -> a profile (cpu, memory, accelerator, image, ...)"
        " or a z2jh profileList entry (its slug defaults to the name), or a z2jh profileList (a list of entries"
        " with a slug or a display_name)",
        "if": {"type": "array"},
        "then": {"type": "array", "items": {"allOf": [entry, named]}},
        "else": {
            "type": "object",
            "propertyNames": names,
            "additionalProperties": {
                "if": {"anyOf": [{"required": [k]} for k in Z2JH_MARKS]},
                "then": entry,
                "else": profile,
            },
        },
    }


LABELS = {
    "type": "object",
    "additionalProperties": {"type": "string"},
    "description": "labels added to the object (what the operator's Prometheus selects by)",
}


def monitoring(rule: dict[str, Any]) -> dict[str, Any]:
    """``platform.monitoring``: the ServiceMonitor and the PrometheusRule (rules as the alerts API takes them)."""
    from yitong_services.alerts.kinds import KINDS
    from yitong_services.vcs.schemas import NAME_RE

    rule = copy.deepcopy(rule)
    rule["properties"].pop("name")  # the key
    rule["properties"]["kind"] = {"enum": list(KINDS), "description": rule["properties"]["kind"]["description"]}
    rule["properties"]["threshold"] = {
        "anyOf": [{"type": "number"}, {"type": "null"}],
        "description": rule["properties"]["threshold"]["description"] + "; left out: the kind's default",
    }
    rule["additionalProperties"] = False
    rule["required"] = ["kind"]
    return {
        "type": "object",
        "additionalProperties": False,
        "description": "For clusters that run the Prometheus operator (monitoring.coreos.com/v1 objects).",
        "properties": {
            "serviceMonitor": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "enabled": {
                        "type": "boolean",
                        "description": "a ServiceMonitor for the platform's /metrics, scraped with the platform's"
                        " token every alerts.scrape_interval",
                    },
                    "labels": LABELS,
                },
            },
            "prometheusRule": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "enabled": {
                        "type": "boolean",
                        "description": "a PrometheusRule with the rules, the PromQL the platform writes for them",
                    },
                    "labels": LABELS,
                    "nodeExporterJob": {
                        "type": "string",
                        "minLength": 1,
                        "description": "the job label of the node exporters' series (node_memory, node_cpu rules)",
                    },
                    "rules": {
                        "type": "object",
                        "propertyNames": {"pattern": NAME_RE.pattern, "maxLength": 32},
                        "additionalProperties": {"anyOf": [rule, {"type": "null"}]},
                        "description": "name -> a rule as POST /alerts/rules takes it (docs/operations.md);"
                        " null drops one of values.yaml",
                    },
                },
            },
        },
    }


CHART_KEYS = {
    "platform": PLATFORM,
    "jupyterhub": {
        "type": "object",
        "description": "zero-to-jupyterhub's values, checked by its own schema (tests check them against z2jh 4.4.0's)",
    },
    "global": {"type": "object", "description": "Helm's global values"},
}


def _resources(node: Any, resources: dict[str, Any]) -> Any:
    """Every resource map (``vcs.*.quota``, ``inventory``, ...): names and amounts checked."""
    if isinstance(node, dict):
        if node.get("type") == "object" and node.get("additionalProperties") == {
            "anyOf": [{"type": "number"}, {"type": "string"}]
        }:
            return {**{k: v for k, v in node.items() if k != "additionalProperties"}, **resources}
        return {k: _resources(v, resources) for k, v in node.items()}
    if isinstance(node, list):
        return [_resources(v, resources) for v in node]
    return node


def _defs(model: Any, defs: dict[str, Any]) -> dict[str, Any]:
    schema = model.model_json_schema(mode="validation", ref_template=REF)
    for name, sub in schema.pop("$defs", {}).items():
        if name in defs and defs[name] != sub:
            raise ValueError(f"two different models are both called {name}")
        defs[name] = sub
    return schema


def _close_required_type(device: dict[str, Any]) -> dict[str, Any]:
    """A ``devices`` entry: ``type`` is its key (merged_device_settings fills it in)."""
    device = copy.deepcopy(device)
    device["required"] = [r for r in device.get("required", []) if r != "type"]
    return device


def build() -> dict[str, Any]:
    from yitong_services.core.confinement import MODES
    from yitong_services.core.settings import Settings
    from yitong_services.jobs.runner_kube import KubeSettings
    from yitong_services.jobs.runner_slurm import SlurmSettings
    from yitong_services.vcs.devices import DeviceMap
    from yitong_services.vcs.quantities import RESOURCE_RE
    from yitong_services.vcs.schemas import NAME_RE
    from yitong_spawner.settings_schema import SECTIONS

    defs: dict[str, Any] = {}
    settings = _defs(Settings, defs)
    props: dict[str, Any] = dict(settings["properties"])
    props.pop("data_dir")  # set by the chart (platform.dataDir), not a settings key
    props["backend"] = {"const": "kubernetes", "description": "the chart runs the kubernetes backend"}
    names = {"pattern": NAME_RE.pattern, "maxLength": 32}
    props["vcs"] = {**props["vcs"], "propertyNames": names}
    props["profiles"] = profiles_schema(props["profiles"]["additionalProperties"], names)
    defs["Z2JHProfile"] = Z2JH_PROFILE
    device = _close_required_type(_defs(DeviceMap, defs))
    props["devices"] = {
        "type": "object",
        "description": props["devices"].get("description", "the accelerator table"),
        "additionalProperties": {"anyOf": [device, {"type": "null"}]},
    }
    inventory = {"$ref": "#/$defs/Inventory"}
    kube = _defs(KubeSettings, defs)
    slurm = _defs(SlurmSettings, defs)
    backend_settings = defs.pop("BackendSettings")
    defs["Inventory"] = backend_settings["properties"]["inventory"]
    kube["properties"]["inventory"] = inventory
    slurm["properties"].setdefault("inventory", inventory)
    props["backends"] = {
        "type": "object",
        "additionalProperties": False,
        "description": "per backend: what it offers (inventory) and its own keys; the chart uses kubernetes",
        "properties": {
            "kubernetes": kube,
            "slurm": slurm,
            # the service reads the local backend's section leniently (core/confinement.py reads mode)
            "local": {"type": "object", "properties": {"inventory": inventory, "mode": {"enum": list(MODES)}}},
        },
    }
    for model, fields in QUANTITY_FIELDS.items():
        for field in fields:
            old = defs[model]["properties"][field]
            defs[model]["properties"][field] = {
                **QUANTITY,
                **{k: old[k] for k in ("default", "description") if k in old},
            }
    props.update({name: copy.deepcopy(schema) for name, schema in SECTIONS.items()})
    props.update(copy.deepcopy(CHART_KEYS))
    from yitong_services.alerts.schemas import RuleIn

    props["platform"]["properties"]["monitoring"] = monitoring(_defs(RuleIn, defs))
    resources = {"propertyNames": {"pattern": RESOURCE_RE.pattern}, "additionalProperties": QUANTITY}
    props, defs = _resources(props, resources), _resources(defs, resources)
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Yitong chart values",
        "description": "The settings file of the embedded default (docs/settings.md) plus the chart's own keys."
        " Generated by helm/values_schema.py: do not edit.",
        "type": "object",
        "additionalProperties": False,
        "properties": dict(sorted(props.items())),
        "$defs": dict(sorted(defs.items())),
    }


def text() -> str:
    return json.dumps(build(), indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    new = text()
    if "--check" in argv:
        if not SCHEMA_FILE.exists() or SCHEMA_FILE.read_text() != new:
            print(
                f"{SCHEMA_FILE.relative_to(ROOT)} is stale: run .venv/bin/python helm/values_schema.py", file=sys.stderr
            )
            return 1
        return 0
    tmp = SCHEMA_FILE.with_suffix(".tmp")
    tmp.write_text(new)
    tmp.replace(SCHEMA_FILE)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
