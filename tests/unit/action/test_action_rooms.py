"""The action in rooms: no module of ``axl_action/action/`` over 400 lines, and no bare
``print`` or ``sys.stdout``/``sys.stderr`` write in it: every log line goes through the
workflow-command writer (``github/workflow_commands.py``), which redacts it and owns the stream."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ACTION = Path(__file__).resolve().parents[3] / "axl_action" / "action"
MAX_LINES = 400
MODULES = sorted(ACTION.glob("*.py"))


def test_the_action_package_is_found() -> None:
    assert len(MODULES) > 10 and (ACTION / "orchestrator.py") in MODULES


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_no_action_module_exceeds_400_lines(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.name} has {lines} lines; split it by activity (at most {MAX_LINES})"


def bare_output(source: str) -> list[str]:
    """Where ``source`` prints or writes to ``sys.stdout``/``sys.stderr`` itself (``line: call``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "print":
            found.append(f"{node.lineno}: print(...)")
        elif (
            isinstance(func, ast.Attribute)
            and func.attr in ("write", "writelines")
            and isinstance(func.value, ast.Attribute)
            and func.value.attr in ("stdout", "stderr")
            and isinstance(func.value.value, ast.Name)
            and func.value.value.id == "sys"
        ):
            found.append(f"{node.lineno}: sys.{func.value.attr}.{func.attr}(...)")
    return found


def test_the_check_finds_bare_output() -> None:
    source = 'import sys\nprint("x")\nsys.stderr.write("y")\nsys.stdout.writelines([])\ncommands.echo("z")\n'
    assert bare_output(source) == [
        "2: print(...)",
        "3: sys.stderr.write(...)",
        "4: sys.stdout.writelines(...)",
    ]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_every_line_goes_through_the_workflow_command_writer(path: Path) -> None:
    assert bare_output(path.read_text(encoding="utf-8")) == [], (
        f"{path.name} writes to the log itself; use Commands.echo / WorkflowCommands.echo"
    )
