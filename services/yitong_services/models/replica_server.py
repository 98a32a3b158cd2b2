"""A replica's own program: MLServer 1.7.1 serving one endpoint's model on a unix socket in the
replica's folder, and nothing else (run by MLServer's environment, ``.venv-mlserver``, as the
endpoint owner's account; never imported by the platform service).

``python -P replica_server.py <folder> <socket name>``. It fails closed: ``<folder>/settings.json``
and ``<folder>/model-settings.json`` must be readable JSON objects, else it says why on stderr (the
job's log) and exits 2 before MLServer is imported (``mlserver start`` would serve its defaults,
0.0.0.0:8080/8081/8082 with no model, when it cannot read its settings). Then:

- REST listens only on ``<folder>/<socket name>`` (uvicorn's ``uds``; the folder is the owner's,
  0700, so no other account can connect to it or bind the name first); the settings' ``host`` and
  ``http_port`` are never bound;
- no gRPC server and no metrics server (MLServer starts gRPC unconditionally on ``grpc_port``: a
  TCP listener any local account could call);
- exactly the model of ``model-settings.json`` (not every ``model-settings.json`` found below the
  folder, as MLServer's repository would load: a version's own files cannot add models);
- none of the job's ``YITONG_*`` variables (its job token, the API's address) in its environment:
  it re-executes itself without them before the version's code is imported, so neither the
  version's code nor ``/proc/<pid>/environ`` holds them.

Standalone: the standard library and MLServer only (the platform's packages pin another FastAPI).
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REFUSED = 2  # the exit code of a replica that did not start (its log says why)


def refuse(sentence: str) -> None:
    print(f"replica not started: {sentence}", file=sys.stderr, flush=True)
    raise SystemExit(REFUSED)


def read_settings(path: str) -> dict:
    """The JSON object at ``path``, or a refusal naming the file and why it cannot be used."""
    try:
        with open(path, "rb") as f:
            doc = json.load(f)
    except OSError as e:
        refuse(f"cannot read {path}: {e.strerror or e}")
    except ValueError as e:
        refuse(f"{path} is not JSON: {e}")
    if not isinstance(doc, dict):
        refuse(f"{path} is not a JSON object")
    return doc


def clean_environment(environ: dict[str, str]) -> dict[str, str] | None:
    """The environment without the job's platform variables; None when it has none (pure)."""
    if not any(k.startswith("YITONG_") for k in environ):
        return None
    return {k: v for k, v in environ.items() if not k.startswith("YITONG_")}


def serve(folder: str, socket_name: str) -> None:  # pragma: no cover - MLServer's environment only
    import asyncio

    import uvicorn
    from mlserver import MLServer
    from mlserver.logging import logger
    from mlserver.repository.load import load_model_settings
    from mlserver.rest import RESTServer
    from mlserver.settings import Settings

    class SocketREST(RESTServer):
        """MLServer's REST server on a unix socket (relative to the folder: a data directory's
        length never meets AF_UNIX's 108-byte limit)."""

        def _get_config(self):  # type: ignore[no-untyped-def]
            config = super()._get_config()
            return uvicorn.Config(config.app, uds=socket_name, root_path=config.root_path, access_log=config.access_log)

        async def start(self) -> None:
            self._server = type("Server", (uvicorn.Server,), {"install_signal_handlers": lambda self: None})(
                self._get_config()
            )
            logger.info("HTTP server running on unix socket %s", os.path.join(folder, socket_name))
            await self._server.serve()

    class Replica(MLServer):
        def _create_servers(self) -> None:
            self._rest_server = SocketREST(self._settings, self._data_plane, self._model_repository_handlers)
            self._grpc_server = None
            self._kafka_server = None

        async def start(self, models_settings: list = []) -> None:  # noqa: B006 - MLServer's signature
            servers = asyncio.ensure_future(self._rest_server.start())
            try:
                await asyncio.gather(*[self._model_registry.load(m) for m in models_settings])
            except Exception:
                logger.exception("the model failed to load; stopping")
                await self.stop()
                raise SystemExit(1) from None
            finally:
                await servers

    values = read_settings(os.path.join(folder, "settings.json"))
    values |= {"host": "127.0.0.1", "metrics_endpoint": None, "kafka_enabled": False, "parallel_workers": 0}
    settings = Settings(**values)
    settings.model_repository_root = folder
    model = load_model_settings(os.path.join(folder, "model-settings.json"))

    async def run() -> None:
        await Replica(settings).start([model])

    asyncio.run(run())


def main(argv: list[str]) -> int:
    if len(argv) != 3 or "/" in argv[2]:
        refuse("usage: replica_server.py <folder> <socket name>")
    folder, socket_name = os.path.abspath(argv[1]), argv[2]
    read_settings(os.path.join(folder, "settings.json"))
    read_settings(os.path.join(folder, "model-settings.json"))
    cleaned = clean_environment(dict(os.environ))
    if cleaned is not None:
        os.execve(sys.executable, [sys.executable, "-P", os.path.abspath(__file__), *argv[1:]], cleaned)
    try:
        os.chdir(folder)
    except OSError as e:
        refuse(f"cannot enter {folder}: {e.strerror or e}")
    serve(folder, socket_name)
    return 0


if __name__ == "__main__":
    # never this folder on the path: its mlserver.py would stand in for MLServer's package
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
    sys.exit(main(sys.argv))
