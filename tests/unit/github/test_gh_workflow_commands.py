"""Workflow commands and environment files, checked with a re-implementation of the runner's
parsers (FileCommandManager's EnvFileKeyValuePairs, ActionCommand's unescaping)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from axl_action.github.errors import GitHubError
from axl_action.github.workflow_commands import (
    MAX_SUMMARY_BYTES,
    SummaryTooLargeError,
    WorkflowCommands,
    escape_data,
    escape_property,
    format_command,
)


def parse_env_file(text: str) -> dict[str, str]:
    """The runner's rules: ``=`` before ``<<`` is single-line, else a heredoc whose closing
    delimiter must be followed by a newline."""
    out: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line == "" and i == len(lines) - 1:
            break
        eq, heredoc = line.find("="), line.find("<<")
        if eq >= 0 and (heredoc < 0 or eq < heredoc):
            out[line[:eq]] = line[eq + 1 :]
            i += 1
            continue
        if heredoc < 0:
            raise ValueError(f"Invalid format {line!r}")
        name, delim = line[:heredoc], line[heredoc + 2 :]
        if not name or not delim:
            raise ValueError("empty name or delimiter")
        value: list[str] = []
        i += 1
        while True:
            if i >= len(lines):
                raise ValueError("Matching delimiter not found")
            if lines[i] == delim:
                if i == len(lines) - 1:
                    raise ValueError("Invalid value. EOF marker missing new line.")
                break
            value.append(lines[i])
            i += 1
        out[name] = "\n".join(value)
        i += 1
    return out


def unescape_data(value: str) -> str:
    return value.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def unescape_property(value: str) -> str:
    return unescape_data(value.replace("%3A", ":").replace("%2C", ","))


def parse_command(line: str) -> tuple[str, dict[str, str], str]:
    assert line.startswith("::")
    head, _, data = line[2:].partition("::")
    command, _, props = head.partition(" ")
    properties = {}
    for pair in filter(None, props.split(",")):
        key, _, value = pair.partition("=")
        properties[key] = unescape_property(value)
    return command, properties, unescape_data(data)


def test_outputs_single_and_multiline(tmp_path: Path) -> None:
    out = tmp_path / "output"
    wc = WorkflowCommands(io.StringIO(), output_path=out)
    wc.set_output("verdict", "fail")
    wc.set_output("report", "line 1\nline 2\r\n\nname=x\nEOF\n")
    wc.set_output("empty", "")
    text = out.read_bytes().decode("utf-8")
    assert text.endswith("\n")
    assert parse_env_file(text) == {
        "verdict": "fail",
        "report": "line 1\nline 2\r\n\nname=x\nEOF\n",
        "empty": "",
    }
    assert text.count("ghadelimiter_") == 6


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200))
def test_any_value_round_trips(value: str) -> None:
    buf = io.StringIO()
    wc = WorkflowCommands(buf)
    wc.set_output("x", value)
    assert wc.outputs["x"] == value


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r"), max_size=200))
def test_any_value_round_trips_through_the_runner_parser(value: str) -> None:
    # The runner reads lines with .NET ReadLine, which also breaks on a lone "\r"; such values
    # come back with "\n" there, a runner property and not ours, so "\r" is left out here.
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "out"
        WorkflowCommands(io.StringIO(), output_path=path).set_output("x", value)
        assert parse_env_file(path.read_bytes().decode("utf-8")) == {"x": value}


@pytest.mark.parametrize("name", ["", "a\nb", "a<<b", "a=b"])
def test_bad_output_names(name: str) -> None:
    with pytest.raises(GitHubError, match="Invalid output name"):
        WorkflowCommands(io.StringIO()).set_output(name, "v")


def test_output_size_limit() -> None:
    wc = WorkflowCommands(io.StringIO())
    with pytest.raises(GitHubError, match="1 MB"):
        wc.set_output("big", "x" * 600_000)  # 1.2 MB as UTF-16


def test_summary_appends_and_guards_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    path.write_text("# earlier step content\n", encoding="utf-8")
    wc = WorkflowCommands(io.StringIO(), summary_path=path)
    wc.append_summary("## Results\n")
    assert path.read_text(encoding="utf-8") == "# earlier step content\n## Results\n"
    left = wc.summary_bytes_left()
    assert left == MAX_SUMMARY_BYTES - len(path.read_bytes())
    with pytest.raises(SummaryTooLargeError, match="over the 1048576-byte limit"):
        wc.append_summary("é" * (left // 2 + 1))  # 2 bytes each in UTF-8
    assert path.read_text(encoding="utf-8").endswith("## Results\n")  # nothing half-written
    wc.append_summary("x" * (left))
    assert len(path.read_bytes()) == MAX_SUMMARY_BYTES


def test_masks_each_line() -> None:
    buf = io.StringIO()
    WorkflowCommands(buf).add_mask("s3cr%t\nsecond-line\n")
    assert buf.getvalue().splitlines() == ["::add-mask::s3cr%25t", "::add-mask::second-line"]


def test_group_closes_on_error() -> None:
    buf = io.StringIO()
    wc = WorkflowCommands(buf)
    with pytest.raises(RuntimeError), wc.group("Eval: 100% of items"):
        raise RuntimeError
    assert buf.getvalue().splitlines() == ["::group::Eval: 100%25 of items", "::endgroup::"]


def test_stop_commands_uses_a_random_token() -> None:
    buf = io.StringIO()
    wc = WorkflowCommands(buf)
    with wc.stop_commands():
        buf.write("::error::from a model output\n")
    first, _, last = buf.getvalue().splitlines()
    token = first.removeprefix("::stop-commands::")
    assert len(token) == 32 and last == f"::{token}::"


def test_echo_writes_a_plain_line_to_either_stream_redacted() -> None:
    out, err = io.StringIO(), io.StringIO()
    wc = WorkflowCommands(out, error_stream=err)
    wc.echo("Baseline: run 7 at abc1234 (100% sure, ::not a command).")
    wc.echo("key sk-abcdefghijklmnop leaked", stderr=True)
    assert out.getvalue() == "Baseline: run 7 at abc1234 (100% sure, ::not a command).\n"
    assert err.getvalue() == "key [REDACTED] leaked\n"


def test_annotation_escaping_round_trips() -> None:
    buf = io.StringIO()
    wc = WorkflowCommands(buf)
    message = "50% worse\r\nsee: a, b"
    wc.error(message, title="Gate: cost, budget", file="evals/math,v2.py", line=3, end_line=5, col=2)
    line = buf.getvalue().rstrip("\n")
    assert "\n" not in line
    command, props, data = parse_command(line)
    assert command == "error" and data == message
    assert props == {
        "title": "Gate: cost, budget",
        "file": "evals/math,v2.py",
        "line": "3",
        "endLine": "5",
        "col": "2",
    }
    assert line.startswith("::error title=Gate%3A cost%2C budget,file=evals/math%2Cv2.py,line=3,")


def test_escaping_order_percent_first() -> None:
    assert escape_data("%0A") == "%250A"
    assert escape_property("a:%,") == "a%3A%25%2C"
    assert format_command("notice", "x") == "::notice::x"


def test_columns_without_line_are_dropped_and_long_messages_cut() -> None:
    buf = io.StringIO()
    wc = WorkflowCommands(buf)
    wc.warning("y" * 5000, col=4)
    command, props, data = parse_command(buf.getvalue().rstrip("\n"))
    assert command == "warning" and props == {} and len(data) == 4096


def test_from_env(tmp_path: Path) -> None:
    env = {"GITHUB_OUTPUT": str(tmp_path / "o"), "GITHUB_STEP_SUMMARY": str(tmp_path / "s")}
    wc = WorkflowCommands.from_env(env, io.StringIO())
    wc.set_output("a", "1")
    wc.append_summary("hi")
    assert parse_env_file((tmp_path / "o").read_text()) == {"a": "1"}
    assert (tmp_path / "s").read_text() == "hi"
    local = WorkflowCommands.from_env({}, io.StringIO())
    local.set_output("a", "1")
    local.append_summary("x")
    assert local.outputs == {"a": "1"} and local.summary_parts == ["x"]
