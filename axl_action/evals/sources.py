"""Recording the local files an eval used (``metadata.sources``, for scoped runs).

The recorder is plain state: the CLI's ``run`` command installs :meth:`SourceRecorder.on_audit`
as an audit hook (the only interpreter-wide change, made by that command alone) and asks the
recorder for one eval's :class:`~axl_action.schema.sources.EvalSources` after it ran. Anything the
recorder cannot hash marks the record ``unknown``, so the eval re-runs (safe by default).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from axl_action.schema.sources import EvalSources, sha256_file, sha256_text


def _relative(path: str | Path, root: Path, folders: dict[str, str] | None = None) -> str | None:
    """``path`` relative to ``root`` (symlinks resolved), or None when it lies outside.

    A cheap textual test first: most paths (the standard library, site-packages) are not ours.
    Such a path can still reach the root through a symlinked folder, so its folder is resolved;
    ``folders`` caches those resolutions (hundreds of modules share a few dozen folders).
    """
    absolute = os.path.abspath(path)
    if not absolute.startswith(str(root)) and not os.path.islink(absolute):
        folder = os.path.dirname(absolute)
        resolved = folders.get(folder) if folders is not None else None
        if resolved is None:
            resolved = os.path.realpath(folder)
            if folders is not None:
                folders[folder] = resolved
        if not resolved.startswith(str(root)):
            return None
    try:
        return Path(path).resolve().relative_to(root).as_posix()
    except (ValueError, OSError):
        return None


class SourceRecorder:
    """Collects the repository files opened while active, and the repository modules loaded.

    ``ignore`` names folders the tool itself reads from while an eval runs (the response
    cache): what is opened below them is not the eval's input, so it is not recorded.
    """

    def __init__(self, root: Path, ignore: Iterable[Path] = ()) -> None:
        self.root = root.resolve()
        # Both spellings of each folder, so the test on every open stays textual: a cache
        # hit must not pay a symlink walk, and an entry must never become a "data file"
        # (the record would list every entry read and change whenever the cache does).
        prefixes: set[str] = set()
        for folder in ignore:
            prefixes.add(os.path.join(os.path.abspath(folder), ""))
            prefixes.add(os.path.join(os.path.realpath(folder), ""))
        self._ignore = tuple(sorted(prefixes))
        self.active = False
        self.opened: set[str] = set()
        # The hook runs on every open: each path's verdict and each folder's resolution once.
        self._verdicts: dict[str, str | None] = {}
        self._folders: dict[str, str] = {}

    def on_audit(self, event: str, args: tuple[object, ...]) -> None:
        """Audit hook: note files opened for reading under the root while active."""
        if event != "open" or not self.active or not args:
            return
        target = args[0]
        if not isinstance(target, (str, os.PathLike)):
            return
        mode = args[1] if len(args) > 1 else "r"
        if isinstance(mode, str) and any(flag in mode for flag in "wax+"):
            return
        flags = args[2] if len(args) > 2 else 0
        if isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            return
        path = os.path.abspath(os.fsdecode(target))  # the key holds if the eval changes directory
        if self._ignore and path.startswith(self._ignore):
            return
        if path in self._verdicts:
            rel = self._verdicts[path]
        else:
            rel = None if path.endswith(".pyc") else _relative(path, self.root, self._folders)
            if rel is not None and (rel.startswith(".git/") or "__pycache__/" in rel):
                rel = None
            self._verdicts[path] = rel
        if rel is not None:
            self.opened.add(rel)

    def start(self) -> None:
        """Begin one eval's run: forget the files of the previous one."""
        self.opened = set()
        self.active = True

    def stop(self) -> None:
        self.active = False

    def module_files(self, modules: Mapping[str, object] | None = None) -> list[str]:
        """Repository-local modules currently loaded (relative paths)."""
        found: set[str] = set()
        for name, module in list((modules if modules is not None else sys.modules).items()):
            if name == "axl_action" or name.startswith("axl_action."):
                continue  # the tool itself: its version is recorded instead
            file = getattr(module, "__file__", None)
            if isinstance(file, str):
                rel = _relative(file, self.root, self._folders)
                if rel is not None:
                    found.add(rel)
        return sorted(found)

    def record(
        self,
        *,
        eval_file: Path | None = None,
        loaded_modules: Iterable[Path] = (),
        dataset_file: Path | None,
        env_names: Iterable[str],
        environ: Mapping[str, str],
        pricing_file: Path | None,
        tool_version: str,
        hook_installed: bool = True,
    ) -> EvalSources:
        """The record of the eval just run."""
        problems: list[str] = []
        if not hook_installed:
            problems.append("the open audit hook was not installed")
        local = set(self.module_files())
        eval_rel = self._inside(eval_file, "eval file", problems) if eval_file is not None else None
        for file in loaded_modules:  # the eval file and the siblings the loader imported
            rel = self._inside(file, "eval module", problems)
            if rel is not None:
                local.add(rel)
        modules = self._digests(sorted(local), problems)
        data_paths = set(self.opened) - set(modules)
        if dataset_file is not None:
            rel = self._inside(dataset_file, "dataset file", problems)
            if rel is not None:
                data_paths.add(rel)
        data = self._digests(sorted(data_paths), problems)
        env = {name: sha256_text(environ[name]) if name in environ else None for name in env_names}
        pricing = None
        if pricing_file is not None:
            pricing = sha256_file(pricing_file)
            if pricing is None:
                problems.append(f"pricing file unreadable: {pricing_file}")
        return EvalSources(
            root=".",
            eval_file=eval_rel,
            modules=modules,
            data=data,
            env=env,
            pricing=pricing,
            tool_version=tool_version,
            unknown=bool(problems),
            reason="; ".join(problems) if problems else None,
        )

    def _inside(self, path: Path, what: str, problems: list[str]) -> str | None:
        """``path`` relative to the root; outside it, a problem that makes the record unknown."""
        rel = _relative(path, self.root)
        if rel is None:
            problems.append(f"{what} outside the sources root: {path}")
        return rel

    def _digests(self, paths: Iterable[str], problems: list[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for rel in paths:
            digest = sha256_file(self.root / rel)
            if digest is None:
                problems.append(f"could not read {rel}")
            else:
                out[rel] = digest
        return out
