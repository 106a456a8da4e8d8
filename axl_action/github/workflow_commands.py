"""Workflow commands and environment files: outputs, job summary, masks, groups, annotations.

The rules, from the runner and ``@actions/core``:

* ``GITHUB_OUTPUT`` entries are always written in heredoc form
  ``name<<ghadelimiter_<uuid>\\nvalue\\nghadelimiter_<uuid>\\n``. The delimiter is random and
  checked against the name and value; the closing delimiter line ends with a newline (the
  runner fails with "EOF marker missing new line" otherwise).
* ``GITHUB_STEP_SUMMARY`` is appended to; the runner drops a step's summary over 1 MiB
  (counted as file bytes), so :meth:`WorkflowCommands.append_summary` refuses to cross it.
* Command data escapes ``%``, ``\\r``, ``\\n``; properties also escape ``:`` and ``,``;
  ``%`` first.
* Only the first 10 errors, 10 warnings and 10 notices of a step become annotations.
"""

from __future__ import annotations

import logging
import secrets
import sys
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Literal, TextIO, TypedDict, Unpack

from axl_action.github.errors import GitHubError
from axl_action.redaction import redact, register_secret

log = logging.getLogger("axl_action.github")

MAX_SUMMARY_BYTES = 1024 * 1024
"""The runner's per-step job-summary limit (``AttachmentSizeLimit``)."""
MAX_OUTPUT_BYTES = 1_000_000
"""Outputs may total 1 MB per job, "approximated based on UTF-16 encoding"."""
MAX_ANNOTATIONS_PER_TYPE = 10
MAX_ANNOTATION_CHARS = 4096

AnnotationLevel = Literal["error", "warning", "notice"]


class SummaryTooLargeError(GitHubError):
    """Appending would push the step summary past 1 MiB, and GitHub would drop all of it."""

    code = "SUMMARY_TOO_LARGE"


def escape_data(value: str) -> str:
    """Escape a command's message part: ``%`` → ``%25``, CR → ``%0D``, LF → ``%0A``."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    """Escape a command property value: as :func:`escape_data`, plus ``:`` and ``,``."""
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def format_command(
    command: str, message: str = "", properties: Mapping[str, object | None] | None = None
) -> str:
    """``::command key=value,...::message`` with the runner's escaping; None properties are dropped."""
    props = ",".join(
        f"{key}={escape_property(str(value))}"
        for key, value in (properties or {}).items()
        if value not in (None, "")
    )
    return f"::{command}{' ' + props if props else ''}::{escape_data(message)}"


class AnnotationWhere(TypedDict, total=False):
    """Where an annotation points and its title (all optional)."""

    title: str | None
    file: str | None
    line: int | None
    end_line: int | None
    col: int | None
    end_column: int | None


class WorkflowCommands:
    """Writes workflow commands to ``stream`` and environment files to the given paths.

    Paths are None outside GitHub Actions (a local run): outputs are then kept only in
    :attr:`outputs`, and the summary only in :attr:`summary_parts`.
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        error_stream: TextIO | None = None,
        output_path: Path | None = None,
        summary_path: Path | None = None,
        summary_limit: int = MAX_SUMMARY_BYTES,
    ) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self.error_stream = error_stream if error_stream is not None else sys.stderr
        """Where :meth:`echo` writes its ``stderr=True`` lines."""
        self.summary_limit = summary_limit
        """Byte cap for the step summary; older self-hosted runners enforce 128 KiB."""
        self.output_path = output_path
        self.summary_path = summary_path
        self.outputs: dict[str, str] = {}
        """Every output set through this object (also when no output file exists)."""
        self.summary_parts: list[str] = []
        """Every summary chunk appended through this object."""
        self.annotation_counts: dict[str, int] = {"error": 0, "warning": 0, "notice": 0}
        self._output_bytes = 0

    @classmethod
    def from_env(cls, environ: Mapping[str, str], stream: TextIO | None = None) -> WorkflowCommands:
        """Build from ``GITHUB_OUTPUT`` and ``GITHUB_STEP_SUMMARY`` (either may be unset)."""
        out = environ.get("GITHUB_OUTPUT")
        summary = environ.get("GITHUB_STEP_SUMMARY")
        return cls(
            stream, output_path=Path(out) if out else None, summary_path=Path(summary) if summary else None
        )

    def _emit(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()

    # -- outputs ----------------------------------------------------------------------------

    def set_output(self, name: str, value: str) -> None:
        """Set step output ``name`` (multi-line safe)."""
        if not name or any(c in name for c in "\r\n") or "<<" in name or "=" in name:
            raise GitHubError(f"Invalid output name {name!r}", hint="use letters, digits, '-' and '_'")
        size = len(value.encode("utf-16-le")) + len(name.encode("utf-16-le"))
        if self._output_bytes + size > MAX_OUTPUT_BYTES:
            raise GitHubError(
                f"Output {name!r} would push this step's outputs over GitHub's 1 MB limit",
                hint="put large data in a file or artifact and output its path",
            )
        for _ in range(5):
            delimiter = f"ghadelimiter_{uuid.uuid4()}"
            if delimiter not in name and delimiter not in value:
                break
        else:  # pragma: no cover - a UUID collision five times running
            raise GitHubError(f"Could not find a delimiter for output {name!r}")
        self.outputs[name] = value
        self._output_bytes += size
        if self.output_path is None:
            log.debug("No GITHUB_OUTPUT; output %s kept in memory only", name)
            return
        with self.output_path.open("a", encoding="utf-8", newline="") as fh:
            fh.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")

    # -- job summary ------------------------------------------------------------------------

    def summary_bytes_left(self) -> int:
        """How many more UTF-8 bytes the step summary can take."""
        used = self.summary_path.stat().st_size if self.summary_path and self.summary_path.exists() else 0
        if self.summary_path is None:
            used = sum(len(p.encode("utf-8")) for p in self.summary_parts)
        return max(0, self.summary_limit - used)

    def append_summary(self, markdown: str) -> None:
        """Append Markdown to the job summary.

        Raises :class:`SummaryTooLargeError` (and writes nothing) if the summary would exceed
        1 MiB; the caller should render a shorter variant, using :meth:`summary_bytes_left`.
        """
        markdown = redact(markdown)
        size = len(markdown.encode("utf-8"))
        left = self.summary_bytes_left()
        if size > left:
            raise SummaryTooLargeError(
                f"The job summary would be {self.summary_limit - left + size} bytes, over the "
                f"{self.summary_limit}-byte limit (GitHub would drop it entirely)",
                hint="render a shorter summary; the full detail belongs in the HTML report artifact",
            )
        self.summary_parts.append(markdown)
        if self.summary_path is not None:
            with self.summary_path.open("a", encoding="utf-8", newline="") as fh:
                fh.write(markdown)

    # -- log commands -----------------------------------------------------------------------

    def add_mask(self, value: str) -> None:
        """Mask ``value`` in the rest of the job's logs (each line separately: the runner
        matches masks per line, so a multi-line secret needs one mask per line)."""
        register_secret(value)  # and hidden from annotations, summaries, reports and comments
        for line in value.splitlines() or [value]:
            if line.strip():
                self._emit(format_command("add-mask", line))

    @contextmanager
    def group(self, title: str) -> Iterator[None]:
        """A collapsible log group; always closed, even on error."""
        self._emit(format_command("group", title))
        try:
            yield
        finally:
            self._emit("::endgroup::")

    @contextmanager
    def stop_commands(self) -> Iterator[None]:
        """Print untrusted text (model output, dataset rows) without it being run as commands."""
        token = secrets.token_hex(16)
        self._emit(format_command("stop-commands", token))
        try:
            yield
        finally:
            self._emit(f"::{token}::")

    def echo(self, message: str, *, stderr: bool = False) -> None:
        """A plain log line (no workflow command), redacted like every line this writes;
        ``stderr``: on the error stream, which the runner shows in the same step log."""
        stream = self.error_stream if stderr else self.stream
        stream.write(redact(message) + "\n")
        stream.flush()

    def debug(self, message: str) -> None:
        """A debug line, shown when step debug logging is on."""
        self._emit(format_command("debug", redact(message)))

    def annotate(
        self,
        level: AnnotationLevel,
        message: str,
        *,
        title: str | None = None,
        file: str | None = None,
        line: int | None = None,
        end_line: int | None = None,
        col: int | None = None,
        end_column: int | None = None,
    ) -> None:
        """Write an ``::error``/``::warning``/``::notice`` annotation.

        Messages longer than 4,096 characters are cut (the runner would cut them anyway);
        past the 10th annotation of a level, GitHub only logs the line, which we note once.
        """
        message, title = redact(message), redact(title) if title else title
        self.annotation_counts[level] += 1
        if self.annotation_counts[level] == MAX_ANNOTATIONS_PER_TYPE + 1:
            log.warning(
                "More than %d %s annotations in this step; GitHub shows only the first ones", 10, level
            )
        if len(message) > MAX_ANNOTATION_CHARS:
            message = message[: MAX_ANNOTATION_CHARS - 1] + "…"
        props: dict[str, object | None] = {
            "title": title,
            "file": file,
            "line": line,
            "endLine": end_line,
            "col": col if line is not None else None,
            "endColumn": end_column if line is not None else None,
        }
        self._emit(format_command(level, message, props))

    def error(self, message: str, **where: Unpack[AnnotationWhere]) -> None:
        """An error annotation (see :meth:`annotate`)."""
        self.annotate("error", message, **where)

    def warning(self, message: str, **where: Unpack[AnnotationWhere]) -> None:
        """A warning annotation (see :meth:`annotate`)."""
        self.annotate("warning", message, **where)

    def notice(self, message: str, **where: Unpack[AnnotationWhere]) -> None:
        """A notice annotation (see :meth:`annotate`)."""
        self.annotate("notice", message, **where)
