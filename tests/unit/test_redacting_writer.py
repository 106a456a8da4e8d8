"""The redacting writer: the eval code's print, partial writes, flush, fileno, logging handlers."""

from __future__ import annotations

import io
import logging
import os
import sys
import tempfile

from axl_action.redaction import (
    REDACTED,
    RedactingWriter,
    SecretRegistry,
    redacted_std_streams,
    register_secret,
)

KEY = "plain-" + "Zq7Kx2Lm9Wp4Rt6Yv8Nb3Hc5"


def _writer() -> tuple[RedactingWriter, io.StringIO]:
    registry = SecretRegistry()
    registry.add(KEY)
    target = io.StringIO()
    return RedactingWriter(target, registry), target


def test_a_secret_split_across_writes_and_a_flush_is_redacted_whole() -> None:
    writer, target = _writer()
    writer.write("key " + KEY[:12])
    writer.flush()  # a long trailing token may be half a secret: held back
    assert target.getvalue() == "key "
    writer.write(KEY[12:] + " ok\n")
    assert target.getvalue() == f"key {REDACTED} ok\n"


def test_a_short_token_shows_at_flush_and_is_matched_again_with_what_follows() -> None:
    writer, target = _writer()
    writer.write("progress 3/10")
    writer.flush()
    assert target.getvalue() == "progress 3/10"
    writer.write(" then " + KEY[:4])
    writer.flush()
    writer.write(KEY[4:] + "\r")
    assert KEY[4:12] not in target.getvalue() and target.getvalue().endswith(REDACTED + "\r")
    writer.write("tail")
    writer.drain()
    assert target.getvalue().endswith("tail")


def test_fileno_passes_on_what_is_held_first() -> None:
    with tempfile.TemporaryFile("w+") as raw:
        registry = SecretRegistry()
        writer = RedactingWriter(raw, registry)
        writer.write("held")
        os.write(writer.fileno(), b" direct\n")
        raw.seek(0)
        assert raw.read() == "held direct\n"


def test_streams_and_logging_handlers_are_redacted_for_the_block_only() -> None:
    register_secret(KEY)
    out, err = io.StringIO(), io.StringIO()
    before = logging.StreamHandler(err)
    logger = logging.getLogger("axl-test-writer")
    logger.addHandler(before)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        with redacted_std_streams():
            print("printed", KEY)
            made = logging.StreamHandler()  # made inside: writes to the redacting stderr
            logger.addHandler(made)
            logger.warning("logged %s", KEY)
            sys.stdout.buffer.write(f"bytes {KEY}\n".encode())
            assert isinstance(before.stream, RedactingWriter)
        assert sys.stdout is out and sys.stderr is err
        assert before.stream is err and made.stream is err
    finally:
        sys.stdout, sys.stderr = saved
        logger.removeHandler(before)
        logger.removeHandler(made)
    assert KEY[:8] not in out.getvalue() + err.getvalue()
    assert out.getvalue() == f"printed {REDACTED}\nbytes {REDACTED}\n"
    assert err.getvalue() == f"logged {REDACTED}\nlogged {REDACTED}\n"
