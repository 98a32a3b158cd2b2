"""scikit-learn and PyTorch -> ONNX (skl2onnx, torch.onnx), checked against the original on
sample inputs.

Runs in the environment that has the framework (scikit-learn, skl2onnx, torch, onnxscript,
onnxruntime: ``.venv-mlserver``): the SDK's ``convert`` starts ``python -m
yitong_lab.models.convert`` with that environment's Python and reads one JSON line back. The
check feeds the same seeded sample inputs to both models and onnxruntime:

- scikit-learn: predicted labels equal and probabilities (where the model has them) within ``ATOL``;
- PyTorch: a version holds a ``torch.export`` program (``torch.export.save``, ``.pt2``; loading
  it runs no code of the version's). It is exported with the dynamo exporter, keeping its
  dynamic dimensions; every output within ``ATOL`` + ``RTOL`` of the program's own. Sample
  inputs have the shape and type of the program's example inputs, the batch dimension
  ``rows`` where it is free. The ONNX graph's inputs and outputs become the signature.

A TensorRT or TVM step slots in the same way: another function taking the ONNX file and
writing an engine, checked against onnxruntime on the same samples, run where a GPU is (it is
not done: none here).

    python -m yitong_lab.models.convert MODEL_FILE OUT_FILE N_FEATURES [ROWS]   # scikit-learn
    python -m yitong_lab.models.convert --pytorch MODEL_FILE OUT_FILE [ROWS]
"""

from __future__ import annotations

import json
import sys
from typing import Any

ATOL = 1e-4
RTOL = 1e-4
#: onnxruntime's element types -> V2 datatypes (for the converted version's signature)
V2_TYPES = {
    "tensor(float)": "FP32",
    "tensor(double)": "FP64",
    "tensor(float16)": "FP16",
    "tensor(int64)": "INT64",
    "tensor(int32)": "INT32",
    "tensor(bool)": "BOOL",
}


def sklearn_to_onnx(model_file: str, out_file: str, features: int, rows: int = 64) -> dict[str, Any]:
    import joblib
    import numpy as np
    import onnxruntime as ort
    import skl2onnx
    from skl2onnx.common.data_types import FloatTensorType

    model = joblib.load(model_file)
    onx = skl2onnx.convert_sklearn(
        model, initial_types=[("predict", FloatTensorType([None, features]))], options={id(model): {"zipmap": False}}
    )
    with open(out_file, "wb") as f:
        f.write(onx.SerializeToString())
    sample = np.random.default_rng(0).normal(size=(rows, features)).astype(np.float32)
    session = ort.InferenceSession(out_file, providers=["CPUExecutionProvider"])
    outputs = session.run(None, {"predict": sample})
    labels_equal = bool(np.array_equal(np.asarray(outputs[0]).ravel(), np.asarray(model.predict(sample)).ravel()))
    diff = 0.0
    if hasattr(model, "predict_proba") and len(outputs) > 1:
        diff = float(np.max(np.abs(np.asarray(outputs[1]) - model.predict_proba(sample))))
    return {
        "converter": f"skl2onnx {skl2onnx.__version__}",
        "rows": rows,
        "labels_equal": labels_equal,
        "max_abs_diff": diff,
        "ok": labels_equal and diff <= ATOL,
        "outputs": [o.name for o in session.get_outputs()],
    }


def _tensors(args: Any) -> list[dict[str, Any]]:
    return [
        {
            "name": a.name,
            "datatype": V2_TYPES.get(a.type, "BYTES"),
            "shape": [d if isinstance(d, int) and d >= 0 else -1 for d in a.shape],
        }
        for a in args
    ]


def _sample(example: Any, free_batch: bool, rows: int, rng: Any) -> Any:
    """Seeded inputs like ``example`` (a tensor), ``rows`` long where the batch dimension is free."""

    shape = list(example.shape)
    if free_batch and shape:
        shape[0] = rows
    dtype = str(example.dtype).removeprefix("torch.")
    if example.is_floating_point():
        return rng.normal(size=shape).astype(dtype)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    return rng.integers(0, 10, size=shape).astype(dtype)


def pytorch_to_onnx(model_file: str, out_file: str, rows: int = 64) -> dict[str, Any]:
    import numpy as np
    import onnxruntime as ort
    import torch

    program = torch.export.load(model_file)
    example = program.example_inputs
    if not example or example[1] or not all(isinstance(t, torch.Tensor) for t in example[0]):
        raise SystemExit("the program has no example inputs (positional tensors) to take sample shapes from")
    names = [s.arg.name for s in program.graph_signature.input_specs if s.kind.name == "USER_INPUT"]
    outs = len(program.graph_signature.user_outputs)
    output_names = ["output"] if outs == 1 else [f"output_{i}" for i in range(outs)]
    onnx_program = torch.onnx.export(
        program, tuple(example[0]), dynamo=True, input_names=names, output_names=output_names, verbose=False
    )
    assert onnx_program is not None  # dynamo=True returns the program
    onnx_program.save(out_file)
    session = ort.InferenceSession(out_file, providers=["CPUExecutionProvider"])
    graph_inputs = session.get_inputs()
    rng = np.random.default_rng(0)
    samples = [
        _sample(t, not isinstance(a.shape[0], int) if a.shape else False, rows, rng)
        for t, a in zip(example[0], graph_inputs)
    ]
    got = session.run(None, {a.name: s for a, s in zip(graph_inputs, samples)})
    with torch.no_grad():
        want = program.module()(*(torch.from_numpy(s) for s in samples))
    want = [want] if isinstance(want, torch.Tensor) else list(want)
    diff = max(float(np.max(np.abs(np.asarray(g, dtype="float64") - w.numpy()))) for g, w in zip(got, want))
    close = len(got) == len(want) and all(np.allclose(g, w.numpy(), rtol=RTOL, atol=ATOL) for g, w in zip(got, want))
    return {
        "converter": f"torch.onnx {torch.__version__} (dynamo, opset {onnx_program.model.opset_imports.get('', '?')})",
        "rows": int(samples[0].shape[0]) if samples and samples[0].ndim else 1,
        "max_abs_diff": diff,
        "ok": close,
        "outputs": [o.name for o in session.get_outputs()],
        "signature": {"inputs": _tensors(graph_inputs), "outputs": _tensors(session.get_outputs())},
    }


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--pytorch":
        rows = int(argv[3]) if len(argv) > 3 else 64
        print(json.dumps(pytorch_to_onnx(argv[1], argv[2], rows)))
        return 0
    model_file, out_file, features = argv[0], argv[1], int(argv[2])
    rows = int(argv[3]) if len(argv) > 3 else 64
    print(json.dumps(sklearn_to_onnx(model_file, out_file, features, rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
