"""scikit-learn -> ONNX (skl2onnx), checked against the original on sample inputs.

Runs in the environment that has the framework (scikit-learn, skl2onnx, onnxruntime): the SDK's
``Models.convert`` starts ``python -m yitong_lab.models.convert`` with that environment's Python
and reads one JSON line back. The check feeds the same seeded sample rows to both models:
predicted labels must be equal and probabilities (where the model has them) within ``atol``.
A TensorRT or TVM step would slot in here as another ``to`` target (it needs a GPU; not done).

    python -m yitong_lab.models.convert MODEL_FILE OUT_FILE N_FEATURES [ROWS]
"""

from __future__ import annotations

import json
import sys
from typing import Any

ATOL = 1e-4


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


def main(argv: list[str]) -> int:
    model_file, out_file, features = argv[0], argv[1], int(argv[2])
    rows = int(argv[3]) if len(argv) > 3 else 64
    print(json.dumps(sklearn_to_onnx(model_file, out_file, features, rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
