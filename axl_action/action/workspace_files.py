"""Copies of the results and the report where a later step of the job can open them.

The action runs in a container; its temp directory is a container path (``/github/...``)
that a later ``run:`` step on the host cannot open. The workspace is the one directory both
see, under the same relative paths, so the ``results-path`` and ``report-path`` outputs are
written as ``.axl-eval/<suite>/results.json`` and ``.axl-eval/<suite>/report.html``,
relative to ``GITHUB_WORKSPACE`` (the default working directory of every later step).

Why this does not break a later ``actions/checkout``: the container runs as root, and
root-owned files in the workspace are what makes checkout's clean fail for the runner user
(actions/runner #434). Every directory and file written here is given the owner and group
of the workspace directory itself, so the runner user can delete them like any file it
wrote; ``.axl-eval/.gitignore`` (``*``) keeps them out of ``git status`` and of commits.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

DIR_NAME = ".axl-eval"


@dataclass(frozen=True)
class WorkspaceFiles:
    """Writes files under ``<workspace>/.axl-eval/<suite>/`` owned like the workspace."""

    workspace: Path
    suite: str

    def keep(self, name: str, data: bytes) -> str:
        """Write ``name``; return its path relative to the workspace (POSIX separators)."""
        root = self.workspace / DIR_NAME
        folder = root / self.suite
        folder.mkdir(parents=True, exist_ok=True)
        ignore = root / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# written by axl-eval-action; never committed\n*\n", encoding="utf-8")
        target = folder / name
        target.write_bytes(data)
        for path in (root, ignore, folder, target):
            self._own(path)
        return target.relative_to(self.workspace).as_posix()

    def _own(self, path: Path) -> None:
        info = self.workspace.stat()
        if (path.stat().st_uid, path.stat().st_gid) == (info.st_uid, info.st_gid):
            return
        # Not root (a local run): the files already belong to the user running us.
        with contextlib.suppress(PermissionError):
            os.chown(path, info.st_uid, info.st_gid)
