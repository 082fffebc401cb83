"""The GitHub Action (``action.yml``): it installs what exists, runs ``ci`` with the licence
from an input (a secret), and never pastes an input into a shell script (script injection)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from toolcall300.client import ci as ci_client

ROOT = Path(__file__).resolve().parents[2]


def action() -> dict[str, Any]:
    loaded = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def test_the_action_is_composite_and_takes_the_licence_as_an_input() -> None:
    doc = action()
    assert doc["runs"]["using"] == "composite"
    assert doc["inputs"]["licence"]["required"] is True
    score = doc["runs"]["steps"][-1]
    assert score["env"]["TOOLCALL300_LICENCE"] == "${{ inputs.licence }}"
    assert "toolcall300 ci" in score["run"]


def test_no_input_is_pasted_into_a_script() -> None:
    for step in action()["runs"]["steps"]:
        assert "${{" not in step.get("run", ""), step


def test_it_installs_this_repository_not_an_index_package() -> None:
    install = action()["runs"]["steps"][1]["run"]
    assert "pip install" in install and '"$ACTION_PATH"' in install
    assert not re.search(r"pip install[^\n]*\btoolcall300\b", install)


def test_every_flag_the_action_passes_is_one_ci_accepts() -> None:
    script = action()["runs"]["steps"][-1]["run"]
    flags = sorted({w for w in re.findall(r"--[a-z-]+", script)})
    assert {"--api", "--image", "--adapter-cmd", "--adapter-files", "--wait"} <= set(flags)
    assert {"--summary", "--junit"} <= set(flags)
    for other in ("--image", "--adapter-cmd"):  # one adapter or the other, never both
        chosen = [f for f in flags if f != other]
        switches = ("--wait", "--pr-comment")  # flags without a value
        argv = [part for flag in chosen for part in ([flag] if flag in switches else [flag, "1"])]
        args = ci_client.parse_args(argv)  # an unknown flag raises UsageError
        assert args.wait is True and args.pr_comment is True and args.api == "1"


def test_a_local_stacks_command_and_folder_reach_ci_as_flags(tmp_path: Path) -> None:
    import subprocess

    script = action()["runs"]["steps"][-1]["run"].replace("toolcall300 ci", 'printf "%s\\n"')
    env = {
        "PATH": "/usr/bin:/bin",
        "TC300_API": "http://127.0.0.1:8300",
        "TC300_IMAGE": "",
        "TC300_ADAPTER_CMD": "python3 /adapter/adapter.py --stream",
        "TC300_ADAPTER_FILES": "my adapter",
        "TC300_BASELINE": "main",
        "TC300_TIMEOUT": "60",
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary"),
    }
    done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True)
    argv = done.stdout.splitlines()
    assert done.returncode == 0, done.stderr
    assert "--image" not in argv
    assert argv[argv.index("--adapter-cmd") + 1] == "python3 /adapter/adapter.py --stream"
    assert argv[argv.index("--adapter-files") + 1] == "my adapter"
    ci_client.parse_args(argv)


def test_the_documented_workflow_installs_what_exists() -> None:
    text = (ROOT / "docs" / "hosted-scoring.md").read_text(encoding="utf-8")
    assert not re.search(r"pip install toolcall300\b", text)
