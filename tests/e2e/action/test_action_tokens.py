"""A hostile eval (a pull request's code) looks for the GitHub token and the runtime token
everywhere it can from where the action runs it, and finds neither (issue 21 item 1).

The action runs as the container runs it (``python -m axl_action.action.entrypoint`` with the
runner's environment, see ``test_action_e2e.Harness``). The eval searches its environment,
every object the collector knows (after ``gc.unfreeze()``), ``/proc/self/environ`` and
``/proc/<ppid>/environ`` (the action's start-up environment), and writes what it found. A
planted variable of the same shape proves that each search would have found a token there.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.action.test_action_e2e import Harness
from tests.fakes.github_server import FakeGitHub

pytestmark = pytest.mark.slow

HUNT_EVAL = r"""
import gc, json, os, re
from axl_action import dataset, define_eval, scorer

SHAPES = re.compile(r"ghs_[0-9a-f]{36}|eyJ[\w-]+\.[\w-]+\.[\w-]+")


def _found(text):
    return sorted(set(SHAPES.findall(text)))


def _proc_environ(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return fh.read().decode("utf-8", "replace")
    except OSError as err:
        return "unreadable"


def hunt():
    gc.unfreeze()
    strings = []

    def text(values):
        for v in values:
            if isinstance(v, str):
                strings.append(v)
            elif isinstance(v, (bytes, bytearray)):  # os.environ keeps its values as bytes
                strings.append(bytes(v).decode("utf-8", "replace"))

    # What every object refers to, which is where any string lives: a dict's keys and
    # values, a container's items, an instance's attributes and slots (SecretStr's value).
    # Containers of atomic values only (os.environ's bytes dict) are not tracked, so they are
    # read where a tracked object refers to them.
    for obj in gc.get_objects():
        for ref in gc.get_referents(obj):
            if isinstance(ref, dict) and not gc.is_tracked(ref):
                text(ref)
                text(ref.values())
            elif isinstance(ref, (tuple, list, set, frozenset)) and not gc.is_tracked(ref):
                text(ref)
            else:
                text([ref])
    return {
        "environ": _found("\n".join(f"{k}={v}" for k, v in os.environ.items())),
        "objects": _found("\n".join(strings)),
        "proc_self": _found(_proc_environ("self")),
        "proc_parent": _found(_proc_environ(os.getppid())),
        "parent_readable": _proc_environ(os.getppid()) != "unreadable",
    }


def execute_workflow(item, runtime):
    found = hunt()
    with open(os.environ["HUNT_OUT"], "w") as fh:
        json.dump(found, fh)
    return {"output": "done"}


eval = define_eval(
    "hunt", dataset("hunt", items=[{"input": 1}]), [scorer("ran", lambda output: 1.0)]
)
"""


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    with FakeGitHub() as gh:
        yield Harness(gh, tmp_path)


def test_an_eval_finds_neither_token_anywhere_it_can_look(h: Harness, tmp_path: Path) -> None:
    token = h.gh.add_token("ghs_" + secrets.token_hex(18))
    (h.workspace / "hunt_eval.py").write_text(HUNT_EVAL, encoding="utf-8")
    planted = "ghs_" + secrets.token_hex(18)
    found_file = tmp_path / "found.json"
    run, payload, env, _ = h.pull_request(5)
    runtime_token = h.gh.runtime_token(run)
    result = h.run(
        "pull_request",
        run,
        payload,
        {
            **env,
            "HUNT_OUT": str(found_file),
            "PLANTED_LOOKALIKE": planted,
            "ACTIONS_RUNTIME_TOKEN": runtime_token,
        },
        inputs={"evals": "hunt_eval.py"},
        token=token,
    )
    assert result.code == 0, result.log
    found = json.loads(found_file.read_text(encoding="utf-8"))
    # Each search works: the planted look-alike, an ordinary variable of the job, is found.
    # The action is not dumpable, so where the eval lacks CAP_SYS_PTRACE its parent's environ
    # is unreadable; where it has it (root in this sandbox) the re-exec is what keeps it clean.
    searches = ["environ", "objects", "proc_self"] + (["proc_parent"] if found["parent_readable"] else [])
    for where in searches:
        assert planted in found[where], (where, found[where])
    # And finds neither token.
    for where in ("environ", "objects", "proc_self", "proc_parent"):
        assert token not in found[where], where
        assert not any(t.startswith("eyJ") for t in found[where]), (where, found[where])
    # The action did its work with them all the same: the PR comment was posted.
    assert len(h.gh.comments_on(h.repo, 5)) == 1, result.log


def test_the_action_process_itself_starts_again_without_the_tokens(h: Harness, tmp_path: Path) -> None:
    """The re-executed action's own /proc environ holds no token (read while it runs, from a
    setup command, which is the action's child like the evals)."""
    token = h.gh.add_token("ghs_" + secrets.token_hex(18))
    seen = tmp_path / "seen.txt"
    setup = f'tr "\\0" "\\n" < /proc/$PPID/environ > {seen}; env >> {seen}'
    run, payload, env, _ = h.pull_request(6)
    result = h.run("pull_request", run, payload, env, inputs={"setup": setup}, token=token)
    assert result.code == 0, result.log
    text = seen.read_text(encoding="utf-8")
    assert text.count("GITHUB_REPOSITORY=") in (1, 2)  # the child's own env, and the parent's if readable
    assert token not in text
    assert "ACTIONS_RUNTIME_TOKEN" not in text and "INPUT_GITHUB-TOKEN" not in text
