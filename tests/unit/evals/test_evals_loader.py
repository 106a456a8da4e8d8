"""Loading eval files: discovery, imports, and one clear EvalDefinitionError per problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from axl_action.errors import EvalDefinitionError
from axl_action.evals.loader import expand_paths, load_eval_file

HEADER = "from axl_action import dataset, define_eval, scorer\n"
DS = 'dataset("d", items=[{"input": 1}])'


def write(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(body)
    return path


def test_module_level_execute_workflow_and_eval_export(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "a_eval.py",
        HEADER
        + "def execute_workflow(i, rt):\n    return {'output': i}\n"
        + f'eval = define_eval("wf", {DS}, [scorer("s", lambda o: 1)])\n',
    )
    [loaded] = load_eval_file(path)
    assert loaded.label == str(path)
    assert loaded.execute_workflow(3, None) == {"output": 3}


def test_several_definitions_in_one_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "multi_eval.py",
        HEADER
        + f'first = define_eval("one", {DS}, [scorer("s", lambda o: 1)], lambda i, rt: {{"output": 1}})\n'
        + f'second = define_eval("two", {DS}, [scorer("s", lambda o: 1)], lambda i, rt: {{"output": 2}})\n',
    )
    loaded = load_eval_file(path)
    assert [x.definition.workflow for x in loaded] == ["one", "two"]
    assert loaded[1].label == f"{path}#second"


def test_sibling_modules_can_be_imported(tmp_path: Path) -> None:
    write(tmp_path, "helper_mod_xyz.py", "VALUE = 41\n")
    path = write(
        tmp_path,
        "sib_eval.py",
        HEADER + "import helper_mod_xyz\n"
        f'eval = define_eval("wf", {DS}, [scorer("s", lambda o: 1)], lambda i, rt: {{"output": helper_mod_xyz.VALUE + 1}})\n',
    )
    [loaded] = load_eval_file(path)
    assert loaded.execute_workflow(0, None) == {"output": 42}


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(EvalDefinitionError, match="no such file"):
        load_eval_file(tmp_path / "nope_eval.py")


def test_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "broken_eval.py", "x = 1\ndef f(:\n")
    with pytest.raises(EvalDefinitionError) as info:
        load_eval_file(path)
    assert f"{path}:2: syntax error" in str(info.value)


def test_import_error_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "raise_eval.py", "x = 1\nraise RuntimeError('no key')\n")
    with pytest.raises(EvalDefinitionError) as info:
        load_eval_file(path)
    assert f"{path}:2: importing the eval file failed: RuntimeError: no key" in str(info.value)


def test_sys_exit_at_import_is_an_error_of_that_file_not_the_end_of_the_command(tmp_path: Path) -> None:
    path = write(tmp_path, "exit_eval.py", "import sys\nsys.exit(3)\n")
    with pytest.raises(EvalDefinitionError) as info:
        load_eval_file(path)
    assert f"{path}:2: the eval file called sys.exit(3) while it was loaded" in str(info.value)


def test_an_empty_path_is_refused_rather_than_read_as_the_current_directory() -> None:
    with pytest.raises(EvalDefinitionError, match="an empty eval path was given"):
        expand_paths(["examples/quickstart", ""])


def test_no_eval_lists_what_was_found(tmp_path: Path) -> None:
    path = write(tmp_path, "empty_eval.py", "alpha = 1\ndef beta(): pass\n_private = 2\n")
    with pytest.raises(EvalDefinitionError) as info:
        load_eval_file(path)
    assert "defines no eval (found: alpha, beta)" in str(info.value)
    assert "export eval = define_eval" in str(info.value)


def test_no_workflow_callback(tmp_path: Path) -> None:
    path = write(
        tmp_path, "nowf_eval.py", HEADER + f'eval = define_eval("wf", {DS}, [scorer("s", lambda o: 1)])\n'
    )
    with pytest.raises(EvalDefinitionError, match="has no workflow callback"):
        load_eval_file(path)
    path = write(
        tmp_path,
        "notfn_eval.py",
        HEADER + "execute_workflow = 3\n" + f'eval = define_eval("wf", {DS}, [scorer("s", lambda o: 1)])\n',
    )
    with pytest.raises(EvalDefinitionError, match="exports execute_workflow but it is int, not a function"):
        load_eval_file(path)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        # An empty list is not "missing" (TS: [] is truthy); it has its own message (spec §7.7).
        ("scorers=[]", "exports an empty scorers list; at least one scorer is required."),
        (
            'scorers=[scorer("s", lambda o: 1)], concurrency=0',
            "exports an invalid concurrency (0); it must be a positive integer",
        ),
        (
            'scorers=[scorer("s", lambda o: 1)], scorer_concurrency=2.5',
            "exports an invalid scorer_concurrency (2.5)",
        ),
        ('scorers=[scorer("s", lambda o: 1)], fail_on_item_error_rate=2', "(1 disables the gate)"),
        (
            'scorers=[scorer("s", lambda o: 1)], fail_on_scorer_error_rate=float("nan")',
            "invalid fail_on_scorer_error_rate (NaN)",
        ),
        ('scorers=[scorer("s", lambda o: 1), scorer("s", lambda o: 0)]', "duplicate names (s)"),
        ("scorers=[lambda o: 1]", "non-scorer entry at index 0"),
    ],
)
def test_bad_config(tmp_path: Path, config: str, message: str) -> None:
    path = write(
        tmp_path,
        "bad_eval.py",
        HEADER
        + f'eval = define_eval("wf", {DS}, execute_workflow=lambda i, rt: {{"output": 1}}, {config})\n',
    )
    with pytest.raises(EvalDefinitionError) as info:
        load_eval_file(path)
    assert str(info.value).startswith(f"{path} ")
    assert message in str(info.value)


def test_non_definition_export(tmp_path: Path) -> None:
    path = write(tmp_path, "dict_eval.py", "eval = {'workflow': 'x'}\n")
    with pytest.raises(EvalDefinitionError, match="does not export a valid eval config — got dict"):
        load_eval_file(path)


def test_expand_paths(tmp_path: Path) -> None:
    for name in ("b_eval.py", "a.eval.py", "helper.py", "c_eval.txt"):
        write(tmp_path, name, "")
    assert [p.name for p in expand_paths([str(tmp_path)])] == ["a.eval.py", "b_eval.py"]
    assert [p.name for p in expand_paths([str(tmp_path / "*_eval.py")])] == ["b_eval.py"]
    missing = tmp_path / "gone_eval.py"
    assert expand_paths([str(missing)]) == [missing]  # reported when loading, so others still run
    empty = tmp_path / "sub"
    empty.mkdir()
    with pytest.raises(EvalDefinitionError, match="holds no eval files"):
        expand_paths([str(empty)])
    with pytest.raises(EvalDefinitionError, match="matched no files"):
        expand_paths([str(tmp_path / "*.nothing")])


def test_same_named_helpers_in_two_folders_do_not_collide(tmp_path: Path) -> None:
    loaded = []
    for name, value in (("one", 1), ("two", 2)):
        folder = tmp_path / name
        folder.mkdir()
        write(folder, "workflow.py", f"VALUE = {value}\n")
        path = write(
            folder,
            "x_eval.py",
            HEADER + "import workflow\n"
            f'eval = define_eval("wf", {DS}, [scorer("s", lambda o: 1)], lambda i, rt: {{"output": workflow.VALUE}})\n',
        )
        [item] = load_eval_file(path)
        loaded.append(item)
    assert [x.execute_workflow(0, None) for x in loaded] == [{"output": 1}, {"output": 2}]
