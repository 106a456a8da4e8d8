"""SourceRecorder: the files an eval opened and the modules it imported, by content hash."""

from __future__ import annotations

import os
from pathlib import Path

from axl_action.evals.definition import define_eval
from axl_action.evals.sources import SourceRecorder
from axl_action.schema import sha256_bytes, sha256_text


def _recorder(root: Path) -> SourceRecorder:
    (root / "helpers.py").write_text("X = 1\n")
    (root / "data.jsonl").write_text('{"input": 1}\n')
    (root / "prompt.txt").write_text("hello")
    return SourceRecorder(root)


def test_records_opened_reads_and_hashes_env_without_storing_it(tmp_path: Path) -> None:
    rec = _recorder(tmp_path)
    rec.start()
    rec.on_audit("open", (str(tmp_path / "prompt.txt"), "r", os.O_RDONLY))
    rec.on_audit("open", (str(tmp_path / "out.json"), "w", os.O_WRONLY | os.O_CREAT))
    rec.on_audit("open", (str(tmp_path / "__pycache__" / "x.pyc"), None, os.O_RDONLY))
    rec.on_audit("open", ("/etc/hostname", "r", os.O_RDONLY))
    rec.on_audit("exec", (str(tmp_path / "helpers.py"),))
    sources = rec.record(
        loaded_modules=[tmp_path / "helpers.py"],
        dataset_file=tmp_path / "data.jsonl",
        env_names=["SECRET", "UNSET"],
        environ={"SECRET": "s3cr3t"},
        pricing_file=None,
        tool_version="1.2.3",
    )
    assert not sources.unknown
    assert sources.modules == {"helpers.py": sha256_bytes(b"X = 1\n")}
    assert set(sources.data) == {"prompt.txt", "data.jsonl"}
    assert sources.env == {"SECRET": sha256_text("s3cr3t"), "UNSET": None}
    assert "s3cr3t" not in sources.model_dump_json()


def test_opens_below_an_ignored_folder_are_not_recorded_under_either_spelling(tmp_path: Path) -> None:
    (tmp_path / "real-cache" / "entries").mkdir(parents=True)
    (tmp_path / "real-cache" / "entries" / "ab").write_text("{}")
    (tmp_path / "cache").symlink_to(tmp_path / "real-cache")
    rec = SourceRecorder(tmp_path, ignore=[tmp_path / "cache"])
    rec.start()
    rec.on_audit("open", (str(tmp_path / "cache" / "entries" / "ab"), "rb", os.O_RDONLY))
    rec.on_audit("open", (str(tmp_path / "real-cache" / "entries" / "ab"), "rb", os.O_RDONLY))
    rec.on_audit("open", (str(tmp_path / "cache-notes.txt"), "r", os.O_RDONLY))  # a sibling is not below
    assert rec.opened == {"cache-notes.txt"}


def test_inactive_recorder_ignores_opens(tmp_path: Path) -> None:
    rec = _recorder(tmp_path)
    rec.on_audit("open", (str(tmp_path / "prompt.txt"), "r", 0))
    assert rec.opened == set()
    rec.start()
    rec.on_audit("open", (str(tmp_path / "prompt.txt"), "r", 0))
    rec.start()  # the next eval file starts afresh
    assert rec.opened == set()


def test_unreadable_file_or_missing_hook_marks_unknown(tmp_path: Path) -> None:
    rec = _recorder(tmp_path)
    rec.start()
    rec.on_audit("open", (str(tmp_path / "gone.txt"), "r", 0))
    sources = rec.record(dataset_file=None, env_names=[], environ={}, pricing_file=None, tool_version="1")
    assert sources.unknown and sources.reason == "could not read gone.txt"
    rec.start()
    sources = rec.record(
        dataset_file=tmp_path / "data.jsonl",
        env_names=[],
        environ={},
        pricing_file=tmp_path / "no-pricing.json",
        tool_version="1",
        hook_installed=False,
    )
    assert sources.unknown
    assert sources.reason is not None and "audit hook" in sources.reason
    assert "pricing" in sources.reason


def test_outside_root_is_unknown_and_pricing_hashed(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    rec = _recorder(root)
    (tmp_path / "p.json").write_text("{}")
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text("")
    sources = rec.record(
        dataset_file=outside, env_names=[], environ={}, pricing_file=tmp_path / "p.json", tool_version="1"
    )
    assert sources.unknown
    assert sources.pricing == sha256_bytes(b"{}")


def test_define_eval_keeps_declared_env() -> None:
    from axl_action import dataset

    definition = define_eval("w", dataset("d", items=[]), [], env=["API_FLAVOUR"])
    assert definition.env == ["API_FLAVOUR"]
