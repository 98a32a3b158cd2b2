"""schemathesis over the service's whole OpenAPI document, as an ordinary user and as an admin.

The app is the real one (``create_app``: migrated SQLite database, real JupyterHub from the
``hub`` fixture for identity), called in-process through schemathesis's ASGI transport. Every
operation gets generated examples (valid and invalid), then the stateful phase follows the
document's ``links`` (create a VC, then read/patch/delete it; submit a job, then read, cancel,
retry, clone it; ...). Asserted: no 5xx, no response that violates its documented schema, and
no request that breaks the documented schema accepted (the document says what the API takes).
An operation whose failure its own replay does not repeat runs once more: a second failure
fails the test, a pass leaves the first failure in the warnings summary.

Bounded for CI: ``MAX_EXAMPLES`` per operation, no shrinking, a deadline per example. The job
manager is off (``jobs.enabled: false``): generated commands are queued, never run.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import FlakyFailure
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.python.asgi import shutdown_lifespans
from schemathesis.specs.openapi.checks import negative_data_rejection, response_schema_conformance

from yitong_services.core.app import create_app
from yitong_services.core.settings import Settings

PREFIX = "/services/yitong/"
MAX_EXAMPLES = 12
STATEFUL_STEPS = 40
CHECKS = [not_a_server_error, response_schema_conformance, negative_data_rejection]
SETTINGS = {
    "backend": "local",
    "backends": {"local": {"inventory": {"nvidia.com/gpu": 2}}},
    "jobs": {"enabled": False},
    "profiles": {"cpu-small": {"cpu": 1, "memory": "1Gi"}},
    "vcs": {
        "vision": {
            "quota": {"cpu": 8, "memory": "16Gi", "nvidia.com/gpu": 2},
            "groups": ["vision"],
            "profiles": ["cpu-small"],
        },
        "default": {"quota": {"cpu": 4, "memory": "8Gi"}, "groups": ["everyone"], "profiles": ["cpu-small"]},
    },
}


@pytest.fixture(scope="module")
def api(hub, tmp_path_factory: pytest.TempPathFactory):
    data = Path(tmp_path_factory.mktemp("schemathesis"))
    raw = {**SETTINGS, "data_dir": str(data), "database": {"url": f"sqlite:///{data / 'yitong.sqlite'}"}}
    app = create_app(
        Settings.model_validate(raw),
        hub_api_url=hub.api_url,
        hub_api_token=hub.service_token,
        prefix=PREFIX,
        reconcile_interval=-1,
    )
    schema = schemathesis.openapi.from_asgi(f"{PREFIX}openapi.json", app)
    schema.config.generation.update(max_examples=MAX_EXAMPLES, no_shrink=True)
    try:
        yield schema
    finally:
        shutdown_lifespans()


USERS = ("alice", "admin")


def _headers(hub, user: str) -> dict[str, str]:
    return {"Authorization": f"token {hub.tokens[user]}"}


def _said(e: BaseException) -> str:
    """The failure with each sub-exception's own text, nested: hypothesis's "produces unreliable
    results" names only how many there were, and the first call's failure is the one to read."""
    lines = [f"{type(e).__name__}: {e}"]
    for sub in getattr(e, "exceptions", ()):
        lines.extend("  " + line for line in _said(sub).splitlines())
    return "\n".join(lines)


def test_every_operation(api, hub):
    """Each operation, valid and invalid examples, each sent as alice and as admin."""
    failures: list[str] = []
    operations = [result.ok() for result in api.get_all_operations()]
    assert len(operations) > 40
    for operation in operations:
        strategy = operation.as_strategy(generation_mode=GenerationMode.POSITIVE) | operation.as_strategy(
            generation_mode=GenerationMode.NEGATIVE
        )

        @given(case=strategy)
        @settings(
            max_examples=MAX_EXAMPLES,
            deadline=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
            database=None,
            derandomize=True,
        )
        def run(case) -> None:
            for user in USERS:
                case.call_and_validate(headers=_headers(hub, user), checks=CHECKS)

        name = f"{operation.method.upper()} {operation.path}"
        try:
            run()
        except FlakyFailure as e:
            # A failure that its own replay did not repeat (seen once in CI, on a PUT that answered
            # 404/422 in every run here): the operation runs again, whole; failing again fails the
            # test, passing leaves the first failure's text in the warnings summary to be read.
            try:
                run()
            except (Exception, BaseExceptionGroup) as again:
                failures.append(f"{name}: {_said(e)}\nand run again: {_said(again)}")
            else:
                warnings.warn(f"{name} failed once, then passed run again: {_said(e)}", stacklevel=1)
        except (Exception, BaseExceptionGroup) as e:
            failures.append(f"{name}: {_said(e)}")
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize("user", USERS)
def test_stateful(api, hub, user):
    headers = _headers(hub, user)
    paths = api.raw_schema["paths"]
    links = paths[f"{PREFIX}api/v1/jobs"]["post"]["responses"]["201"]["links"]
    assert {"GetJob", "CancelJob", "RetryJob", "CloneJob"} <= set(links)
    assert "GetVC" in paths[f"{PREFIX}api/v1/vcs"]["post"]["responses"]["201"]["links"]

    class Machine(api.as_state_machine()):
        def get_call_kwargs(self, case):
            return {"headers": headers}

        def validate_response(self, response, case, **kwargs):
            case.validate_response(response, checks=CHECKS)

    Machine.run(
        settings=settings(
            max_examples=10,
            stateful_step_count=STATEFUL_STEPS,
            deadline=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
    )
