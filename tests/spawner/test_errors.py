"""What the hub shows for a refused spawn: the sentence, never ``409 SpawnException(reason=quota): ...``."""

from jupyterhub.utils import format_exception

from yitong_spawner.errors import spawn_error


def test_hub_shows_the_sentence():
    error = spawn_error("VC vision: 2 of 2 nvidia.com/gpu in use.", reason="quota", status=409)
    assert error.status_code == 409
    assert format_exception(error)[0] == "VC vision: 2 of 2 nvidia.com/gpu in use."
    assert format_exception(error, only_jupyterhub=True)[0] == "VC vision: 2 of 2 nvidia.com/gpu in use."


def test_unreachable_is_503():
    assert spawn_error("The platform service is not reachable.", reason="platform", status=0).status_code == 503
