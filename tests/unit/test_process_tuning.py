"""Process tuning lives in one CLI module (axl_action/cli/tuning.py); the library changes no
interpreter-wide state: no collector calls, no fork, no environment assignment elsewhere."""

from __future__ import annotations

import ast
import gc
import weakref
from pathlib import Path

from axl_action.cli import tuning

PACKAGE = Path(__file__).resolve().parents[2] / "axl_action"
HOME = "cli/tuning.py"
# Nothing is left to move: the list may only shrink, and the test fails on a stale entry.
NOT_YET_MOVED: set[str] = set()


def _findings(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "gc":
                found.append(f"line {node.lineno}: gc.{node.attr}")
            if node.value.id == "os" and node.attr == "fork":
                found.append(f"line {node.lineno}: os.fork")
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AugAssign)
            else []
        )
        for target in targets:
            if (
                isinstance(target, ast.Subscript)
                and isinstance(target.value, ast.Attribute)
                and target.value.attr == "environ"
            ):
                found.append(f"line {node.lineno}: os.environ[...] =")
    return found


def test_only_the_tuning_module_touches_the_collector_fork_or_environment() -> None:
    offenders: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == HOME:
            continue
        found = _findings(ast.parse(path.read_text(encoding="utf-8")))
        if found:
            offenders[rel] = found
    unexpected = {k: v for k, v in offenders.items() if k not in NOT_YET_MOVED}
    assert not unexpected, (
        f"process tuning outside {HOME}: {unexpected}; decide it at the command's entry "
        "(axl_action/cli/tuning.py) and keep library functions free of interpreter-wide state"
    )
    assert set(offenders) == NOT_YET_MOVED, (
        f"{NOT_YET_MOVED - set(offenders)} no longer tune: drop them from NOT_YET_MOVED"
    )


PROCESS_MODULES = ("multiprocessing", "concurrent.futures.process")
"""Modules that start processes: only the CLI decides to (cli/parallel_read.py, for compare)."""


def test_only_the_cli_starts_processes() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("cli/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(n == m or n.startswith(m + ".") for n in names for m in PROCESS_MODULES):
                offenders.append(f"{rel}:{node.lineno}")
    assert not offenders, f"a library module starts processes: {offenders}"


class _Node:
    def __init__(self) -> None:
        self.other: _Node = self


def test_an_eval_commands_garbage_cycles_are_collected_while_it_runs() -> None:
    was_enabled = gc.isenabled()
    with tuning.survivors_frozen():
        kept = [_Node() for _ in range(100)]  # live: set aside after a full collection
        gc.collect()
        dropped = _Node()
        alive = weakref.ref(dropped)
        del dropped  # a cycle made after the freeze: still the collector's to free
        gc.collect()
        assert alive() is None
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0 and gc.isenabled() is was_enabled
    assert kept


def test_the_collector_is_restored_after_a_command_without_eval_code() -> None:
    was_enabled = gc.isenabled()
    with tuning.tuned("compare"):
        assert not gc.isenabled()
    assert gc.isenabled() is was_enabled
