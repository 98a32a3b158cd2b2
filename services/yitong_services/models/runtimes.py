"""Which MLServer runtime serves a model version, and which of its files it loads (pure).

The registry's ``framework`` (else its ``format``) picks the runtime:

| framework | runtime (MLServer 1.7.1) | the file it loads |
|---|---|---|
| sklearn, scikit-learn | ``mlserver_sklearn.SKLearnModel`` | ``.joblib``, ``.pkl``, ``.pickle`` |
| xgboost | ``mlserver_xgboost.XGBoostModel`` | ``.json``, ``.ubj``, ``.bst`` |
| lightgbm | ``mlserver_lightgbm.LightGBMModel`` | ``.txt``, ``.bst`` |
| onnx | ``yitong_lab.models.runtimes.OnnxModel`` (the platform's, onnxruntime) | ``.onnx`` |
| python, custom | the version's own ``MLModel`` subclass | ``model.py`` (or its only top-level ``.py``) |

A custom-Python version's code is the owner's and hostile: the platform reads its source only
as text (``ast``, never imported) to find the ``MLModel`` subclass to name; MLServer imports it
in the endpoint's own process, as the owner's account.
"""

from __future__ import annotations

import ast
import keyword
from dataclasses import dataclass

MAX_SOURCE = 1 << 20  # bytes of a custom runtime's Python file the platform reads
TOO_LARGE = f"is larger than {MAX_SOURCE >> 10} KiB"


@dataclass(frozen=True)
class Runtime:
    name: str  # as the docs and the sentences call it
    frameworks: tuple[str, ...]
    implementation: str  # MLServer's import path ('' for custom Python: the version's class)
    suffixes: tuple[str, ...]


RUNTIMES = (
    Runtime(
        "scikit-learn", ("sklearn", "scikit-learn"), "mlserver_sklearn.SKLearnModel", (".joblib", ".pkl", ".pickle")
    ),
    Runtime("XGBoost", ("xgboost",), "mlserver_xgboost.XGBoostModel", (".json", ".ubj", ".bst")),
    Runtime("LightGBM", ("lightgbm",), "mlserver_lightgbm.LightGBMModel", (".txt", ".bst")),
    Runtime("ONNX", ("onnx",), "yitong_lab.models.runtimes.OnnxModel", (".onnx",)),
    Runtime("custom Python", ("python", "custom"), "", (".py",)),
)
BY_NAME = {f: r for r in RUNTIMES for f in r.frameworks}


def supported() -> str:
    """The sentence's list: ``sklearn (scikit-learn), xgboost, ...``."""
    return ", ".join(f"{r.frameworks[0]} ({r.name})" for r in RUNTIMES)


def choose(framework: str, format: str = "") -> Runtime | None:
    """The runtime of a version: by its framework, else by its format (``pytorch``/``onnx``
    serves as ONNX); None when neither names one."""
    return BY_NAME.get(framework.strip().lower()) or BY_NAME.get(format.strip().lower())


def model_file(runtime: Runtime, paths: list[str]) -> str | None:
    """The file the runtime loads: ``model<suffix>`` at the top, else the only file with one of
    its suffixes (top-level only for custom Python), else the only file (not for custom Python)."""
    top = runtime.implementation == ""
    candidates = sorted(p for p in paths if p.lower().endswith(runtime.suffixes) and not (top and "/" in p))
    for suffix in runtime.suffixes:
        if "model" + suffix in candidates:
            return "model" + suffix
    if len(candidates) == 1:
        return candidates[0]
    if not candidates and len(paths) == 1 and not top:
        return paths[0]
    return None


def module_name(path: str) -> str | None:
    """The module a custom runtime's file is imported as (its stem), when it can be one."""
    stem = path.rsplit("/", 1)[-1].removesuffix(".py")
    return stem if stem.isidentifier() and not keyword.iskeyword(stem) else None


def mlmodel_classes(source: bytes) -> list[str] | str:
    """The top-level classes of ``source`` deriving from ``MLModel`` (``mlserver.MLModel``), or a
    sentence saying why the text is no Python the platform can read. Never executes it."""
    if len(source) > MAX_SOURCE:
        return TOO_LARGE
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as e:
        return f"is not valid Python ({getattr(e, 'msg', e)}, line {getattr(e, 'lineno', '?')})"
    found = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                if (isinstance(base, ast.Name) and base.id == "MLModel") or (
                    isinstance(base, ast.Attribute) and base.attr == "MLModel"
                ):
                    found.append(node.name)
                    break
    return found
