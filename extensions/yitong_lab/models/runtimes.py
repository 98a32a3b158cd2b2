"""MLServer runtimes the platform ships, imported only by MLServer in the framework environment
(``.venv-mlserver``: mlserver, onnxruntime), in an endpoint's own process.

``OnnxModel`` serves an ``.onnx`` file with onnxruntime (MLServer 1.7 has no maintained ONNX
runtime). Every graph input is a V2 input of the same name (an only input takes a request's
only input whatever its name); a value is cast to the type the graph declares, so a client may
send FP64 or INT64 to a float graph. The answer holds every graph output, or those the request
names. Model metadata lists the graph's inputs and outputs with ``-1`` for a free dimension.

The service names it in ``model-settings.json`` as ``yitong_lab.models.runtimes.OnnxModel``
(services/yitong_services/models/runtimes.py).
"""

from __future__ import annotations

from typing import Any

from mlserver import MLModel
from mlserver.codecs import NumpyCodec
from mlserver.errors import InferenceError
from mlserver.types import InferenceRequest, InferenceResponse, MetadataTensor
from mlserver.utils import get_model_uri

#: onnxruntime's element types -> (numpy dtype, V2 datatype)
ONNX_TYPES = {
    "tensor(float)": ("float32", "FP32"),
    "tensor(double)": ("float64", "FP64"),
    "tensor(float16)": ("float16", "FP16"),
    "tensor(int64)": ("int64", "INT64"),
    "tensor(int32)": ("int32", "INT32"),
    "tensor(int16)": ("int16", "INT16"),
    "tensor(int8)": ("int8", "INT8"),
    "tensor(uint8)": ("uint8", "UINT8"),
    "tensor(bool)": ("bool", "BOOL"),
    "tensor(string)": ("object", "BYTES"),
}


def _shape(shape: list[Any]) -> list[int]:
    return [d if isinstance(d, int) and d >= 0 else -1 for d in shape]


def _tensor(arg: Any) -> MetadataTensor:
    return MetadataTensor(name=arg.name, datatype=ONNX_TYPES.get(arg.type, ("", "BYTES"))[1], shape=_shape(arg.shape))


class OnnxModel(MLModel):
    """An ``.onnx`` file served with onnxruntime on the CPU."""

    async def load(self) -> bool:
        import onnxruntime as ort

        uri = await get_model_uri(self._settings, wellknown_filenames=["model.onnx"])
        self._session = ort.InferenceSession(uri, providers=["CPUExecutionProvider"])
        self._inputs = self._session.get_inputs()
        self._outputs = [o.name for o in self._session.get_outputs()]
        self.inputs = [_tensor(a) for a in self._inputs]
        self.outputs = [_tensor(a) for a in self._session.get_outputs()]
        return True

    def _feeds(self, payload: InferenceRequest) -> dict[str, Any]:
        import numpy as np

        given = {i.name: i for i in payload.inputs}
        if len(self._inputs) == 1 and len(payload.inputs) == 1:
            given = {self._inputs[0].name: payload.inputs[0]}
        missing = [a.name for a in self._inputs if a.name not in given]
        if missing:
            raise InferenceError(
                f"the model takes inputs {', '.join(a.name for a in self._inputs)}; missing {', '.join(missing)}"
            )
        feeds = {}
        for arg in self._inputs:
            value = NumpyCodec.decode_input(given[arg.name])
            dtype = ONNX_TYPES.get(arg.type, ("", ""))[0]
            feeds[arg.name] = np.asarray(value).astype(dtype, copy=False) if dtype else value
        return feeds

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        wanted = [o.name for o in payload.outputs or []] or self._outputs
        unknown = [n for n in wanted if n not in self._outputs]
        if unknown:
            raise InferenceError(f"the model has outputs {', '.join(self._outputs)}; not {', '.join(unknown)}")
        try:
            values = self._session.run(wanted, self._feeds(payload))
        except InferenceError:
            raise
        except Exception as e:  # onnxruntime's own message: a wrong rank or size
            raise InferenceError(f"onnxruntime: {str(e).splitlines()[0][:300]}") from None
        return InferenceResponse(
            model_name=self.name,
            model_version=self.version,
            outputs=[NumpyCodec.encode_output(name, value) for name, value in zip(wanted, values)],
        )
