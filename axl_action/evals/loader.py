"""Find eval files, import them, and turn every problem into one clear ``EvalDefinitionError``.

An eval file is a Python module that exports ``eval`` / ``EVAL`` (an ``EvalDefinition`` or a
list of them) or, failing that, any number of module-level ``EvalDefinition`` objects. The
workflow callback is the definition's ``execute_workflow`` or the module's ``execute_workflow``.
Directories contribute their ``*_eval.py`` and ``*.eval.py`` files (not recursive, sorted).
"""

from __future__ import annotations

import glob
import importlib.util
import itertools
import sys
import traceback
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType

from axl_action.errors import EvalDefinitionError
from axl_action.evals.definition import EvalDefinition, ExecuteWorkflow, validate_definition

_counter = itertools.count(1)


@dataclass(frozen=True)
class LoadedEval:
    """One runnable eval found in a file."""

    path: Path
    """The eval file."""
    label: str
    """How messages name it: the file path, plus ``#<name>`` when a file defines several evals."""
    definition: EvalDefinition
    identity: str = ""
    """Which eval this is, whatever the spelling of its path: the resolved file, plus
    ``#<name>`` as in ``label``. A resume finds its journal segment by it, so the same eval
    run from another directory, or named by an absolute path, continues its journal."""
    sources: dict[str, str] | None = None
    """``sha256:`` of the eval file and of each module beside it (or below its folder) that
    importing it loaded, by path relative to its folder: a resume refuses a journal written by
    other code (see ``evals/journal/checks.py``)."""
    """The definition, with ``execute_workflow`` resolved (``None`` only when loaded without
    ``require_workflow``)."""

    @property
    def execute_workflow(self) -> ExecuteWorkflow:
        """The workflow callback."""
        assert self.definition.execute_workflow is not None
        return self.definition.execute_workflow


def is_eval_file(path: Path) -> bool:
    """``*_eval.py`` or ``*.eval.py``."""
    return path.name.endswith("_eval.py") or path.name.endswith(".eval.py")


def expand_paths(paths: Iterable[str]) -> list[Path]:
    """Expand CLI paths: globs, directories (their eval files, sorted), files as given."""
    out: list[Path] = []
    for raw in paths:
        if not raw.strip():
            # Path("") is the current directory: an unset variable would run every eval there.
            raise EvalDefinitionError(
                "an empty eval path was given", hint="pass an eval file or folder; is a variable unset?"
            )
        if any(ch in raw for ch in "*?["):
            matches = sorted(Path(p) for p in glob.glob(raw, recursive=True))
            if not matches:
                raise EvalDefinitionError(f"{raw}: the pattern matched no files")
            out.extend(matches)
            continue
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.is_file() and is_eval_file(p))
            if not found:
                raise EvalDefinitionError(
                    f"{raw}: the directory holds no eval files",
                    hint="eval files are named *_eval.py or *.eval.py",
                )
            out.extend(found)
        else:
            # A missing file is reported when it is loaded, so the other files still run.
            out.append(path)
    unique: dict[Path, None] = {}
    for p in out:
        unique.setdefault(p, None)
    return list(unique)


def _import(path: Path) -> tuple[ModuleType, dict[str, str]]:
    name = f"axl_eval_file_{next(_counter)}_{''.join(c if c.isalnum() else '_' for c in path.stem)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise EvalDefinitionError(f"{path}: not an importable Python file", hint="eval files end in .py")
    module = importlib.util.module_from_spec(spec)
    # Eval files import their sibling modules (the workflow, helpers) by plain name; the
    # file's folder goes first so that its own helpers win over same-named ones elsewhere.
    folder = str(path.parent.resolve())
    if folder in sys.path:
        sys.path.remove(folder)
    sys.path.insert(0, folder)
    before = set(sys.modules)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        sys.modules.pop(name, None)
        raise EvalDefinitionError(
            f"{exc.filename or path}:{exc.lineno}: syntax error: {exc.msg}",
            hint="fix the Python syntax of the eval file",
        ) from None
    except EvalDefinitionError:
        sys.modules.pop(name, None)
        raise
    except SystemExit as exc:
        # sys.exit() at import would end the whole command silently, and the other files with it.
        sys.modules.pop(name, None)
        where = _innermost_line(exc, path)
        raise EvalDefinitionError(
            f"{path}{where}: the eval file called sys.exit({exc.code!r}) while it was loaded",
            hint='an eval file is imported, not run: put script code under `if __name__ == "__main__":`',
        ) from None
    except Exception as exc:
        sys.modules.pop(name, None)
        where = _innermost_line(exc, path)
        raise EvalDefinitionError(
            f"{path}{where}: importing the eval file failed: {type(exc).__name__}: {exc}"
        ) from None
    from axl_action.evals.journal.base import file_digest  # the one file-hash rule

    siblings = _forget_siblings(before, folder)
    sources: dict[str, str] = {}
    for file in [str(path), *sorted(siblings)]:
        digest = file_digest(file)
        if digest is not None:  # a module without a readable source (compiled only): skipped
            sources[path.name if file == str(path) else Path(file).relative_to(folder).as_posix()] = digest
    return module, sources


def _forget_siblings(before: set[str], folder: str) -> set[str]:
    """Drop newly imported modules that live next to the eval file from ``sys.modules``, and
    return their files (resolved).

    The eval module keeps its references; dropping the cache entries means the next eval
    file's ``import workflow`` loads *its* ``workflow.py``, not this one's.
    """
    prefix = folder.rstrip("/") + "/"
    files: set[str] = set()
    for key in set(sys.modules) - before:
        file = getattr(sys.modules.get(key), "__file__", None)
        if not isinstance(file, str) or key.startswith("axl_eval_file_"):
            continue
        resolved = str(Path(file).resolve())
        if resolved.startswith(prefix):
            sys.modules.pop(key, None)
            files.add(resolved)
    return files


def _innermost_line(exc: BaseException, path: Path) -> str:
    resolved = str(path.resolve())
    line = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename and str(Path(frame.filename).resolve()) == resolved:
            line = f":{frame.lineno}"
    return line


def load_eval_file(path: Path, *, require_workflow: bool = True) -> list[LoadedEval]:
    """Import ``path`` and return its evals (validated, workflow callback resolved).

    ``require_workflow=False`` (rescore: only the scorers are used) accepts an eval without a
    workflow callback; its ``execute_workflow`` stays ``None``.
    """
    if not path.is_file():
        raise EvalDefinitionError(f"{path}: no such file")
    module, sources = _import(path)
    resolved = str(path.resolve())
    exported = getattr(module, "eval", None)
    if exported is None:
        exported = getattr(module, "EVAL", None)
    if exported is not None:
        candidates = list(exported) if isinstance(exported, list | tuple) else [exported]
    else:
        candidates = [
            v for k, v in vars(module).items() if not k.startswith("_") and isinstance(v, EvalDefinition)
        ]
    if not candidates:
        public = [k for k in vars(module) if not k.startswith("_")]
        raise EvalDefinitionError(
            f"{path}: defines no eval (found: {', '.join(public) or 'nothing'})",
            hint="export eval = define_eval(...)",
        )
    fallback = getattr(module, "execute_workflow", None)
    if fallback is not None and not callable(fallback):
        raise EvalDefinitionError(
            f"{path}: exports execute_workflow but it is {type(fallback).__name__}, not a function"
        )
    names = {id(v): k for k, v in vars(module).items() if isinstance(v, EvalDefinition)}
    loaded: list[LoadedEval] = []
    for index, candidate in enumerate(candidates):
        problem = validate_definition(candidate)
        if problem:
            raise EvalDefinitionError(f"{path} {problem}")
        assert isinstance(candidate, EvalDefinition)
        if candidate.execute_workflow is None and fallback is not None:
            candidate = replace(candidate, execute_workflow=fallback)
        elif candidate.execute_workflow is None and require_workflow:
            public = [k for k in vars(module) if not k.startswith("_")]
            raise EvalDefinitionError(
                f"{path}: eval {candidate.workflow!r} has no workflow callback (found: {', '.join(public)})",
                hint="pass execute_workflow= to define_eval or define execute_workflow(input, runtime)",
            )
        label, identity = str(path), resolved
        if len(candidates) > 1:
            name = f"#{names.get(id(candidates[index]), index)}"
            label, identity = label + name, identity + name
        loaded.append(
            LoadedEval(path=path, label=label, definition=candidate, identity=identity, sources=sources)
        )
    return loaded
