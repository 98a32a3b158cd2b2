"""``yt hpo`` pure builders: NNI config inlining, the cell's experiment, the summary lines.
(The verbs against a real service: tests/services/hpo/test_hpo_process.py.)"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from yitong_lab.cli.grammar import UsageError, build_parser
from yitong_lab.cli.hpo import cell_document, summary, trials_table
from yitong_lab.hpo.sdk import nni_config_text


def test_nni_config_inlines_the_space_file_and_resolves_the_code_dir(tmp_path):
    (tmp_path / "search_space.json").write_text(json.dumps({"lr": {"_type": "uniform", "_value": [0, 1]}}))
    (tmp_path / "config.yml").write_text(
        "searchSpaceFile: search_space.json\ntrialCommand: python3 t.py\ntrialCodeDirectory: .\n"
    )
    doc = json.loads(nni_config_text(tmp_path / "config.yml"))
    assert doc["searchSpace"] == {"lr": {"_type": "uniform", "_value": [0, 1]}} and "searchSpaceFile" not in doc
    assert doc["trialCodeDirectory"] == str(tmp_path.resolve())
    (tmp_path / "bad.yml").write_text("searchSpaceFile: nope.json\ntrialCommand: x\n")
    with pytest.raises(FileNotFoundError, match="nope.json"):
        nni_config_text(tmp_path / "bad.yml")


def test_cell_becomes_an_experiment(tmp_path):
    args = build_parser().parse_args(
        [
            "hpo",
            "create",
            "--vc",
            "vision",
            "--space",
            '{"x": {"_type": "uniform", "_value": [0, 1]}}',
            "--trials",
            "4",
            "--minimize",
        ]
    )
    doc = cell_document(args, "print(1)\n", tmp_path)
    assert doc["vc"] == "vision" and doc["max_trials"] == 4 and doc["objective"]["direction"] == "minimize"
    script = doc["template"]["command"][1]
    assert open(script).read() == "print(1)\n" and script.startswith(str(tmp_path))
    with pytest.raises(UsageError, match="--space"):
        cell_document(SimpleNamespace(vc="vision", space=None), "x", tmp_path)


def test_summary_and_table():
    exp = {
        "id": 3,
        "name": "e",
        "vc": "vision",
        "state": "done",
        "reason": "",
        "counts": {"complete": 2},
        "best": {"number": 1, "value": 0.5, "params": {"x": 1}},
        "trials": [
            {"number": 0, "job_id": 7, "state": "complete", "value": 0.25, "params": {"x": 0}},
            {"number": 1, "job_id": 8, "state": "complete", "value": 0.5, "params": {"x": 1}},
        ],
    }
    assert summary(exp) == 'experiment 3 e (vision): done; 2 complete; best 0.5 (trial 1: {"x": 1})'
    assert trials_table(exp).splitlines()[2].split()[:4] == ["1", "8", "complete", "0.5"]
