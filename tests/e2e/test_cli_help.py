"""`axl-eval --help` lists every command and every flag each command accepts."""

from __future__ import annotations

import pytest

from axl_action.cli import compare, history, main, report, rescore, run


def _help(capsys: pytest.CaptureFixture[str]) -> str:
    assert main.main(["--help"]) == 0
    return capsys.readouterr().out


def test_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(capsys)
    for name in main.COMMANDS:
        assert f"── axl-eval {name} " in text


@pytest.mark.parametrize("module", [run, rescore], ids=["run", "rescore"])
def test_lists_every_argparse_flag(module: object, capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(capsys)
    parser = module.build_parser()  # type: ignore[attr-defined]
    flags = [opt for action in parser._actions for opt in action.option_strings if opt.startswith("--")]
    assert flags
    for flag in flags:
        assert flag in text, flag


@pytest.mark.parametrize("module", [compare, report, history], ids=["compare", "report", "history"])
def test_lists_every_scanned_flag(module: object, capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(capsys)
    for flag in (*module._VALUE_FLAGS, *module._BOOL_FLAGS):  # type: ignore[attr-defined]
        assert flag in text, flag


def test_no_arguments_prints_the_short_usage_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main.main([]) == 1
    assert "── axl-eval" not in capsys.readouterr().out
