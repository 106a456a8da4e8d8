"""The *-path outputs: files under the workspace, owned like it, ignored by git."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from axl_action.action.workspace_files import WorkspaceFiles


def test_keep_writes_under_the_workspace_and_returns_a_relative_path(tmp_path: Path) -> None:
    files = WorkspaceFiles(tmp_path, "big-suite")
    assert files.keep("results.json", b"{}") == ".axl-eval/big-suite/results.json"
    assert (tmp_path / ".axl-eval/big-suite/results.json").read_bytes() == b"{}"
    assert files.keep("results.json", b"[]") == ".axl-eval/big-suite/results.json"
    assert (tmp_path / ".axl-eval/big-suite/results.json").read_bytes() == b"[]", "a re-run replaces it"
    assert (tmp_path / ".axl-eval/.gitignore").read_text().splitlines()[-1] == "*"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files away needs root, as in the container")
def test_root_gives_every_file_the_workspace_owner(tmp_path: Path) -> None:
    # The container runs as root; the runner user owns the workspace and must be able to
    # delete what we wrote (a later actions/checkout cleans the workspace).
    workspace = tmp_path / "ws"
    workspace.mkdir()
    os.chown(workspace, 4242, 4343)
    WorkspaceFiles(workspace, "default").keep("report.html", b"<html>")
    written = [*(workspace / ".axl-eval").rglob("*"), workspace / ".axl-eval"]
    assert len(written) == 4
    assert {(p.stat().st_uid, p.stat().st_gid) for p in written} == {(4242, 4343)}
