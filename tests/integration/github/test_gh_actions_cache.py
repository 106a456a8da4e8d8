"""The Actions cache client against the fake cache service: GitHub's scoping (a pull request
reads its base branch's entries and writes only its own), immutable keys, misses, refusals, and
the response cache's archive carried through it."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from axl_action.cache import DirectoryStore, cache_key, request_record
from axl_action.cache.archive import ARCHIVE_FORMAT, pack, unpack
from axl_action.github.actions_cache import ActionsCache
from axl_action.github.errors import CacheServiceError
from tests.fakes.actions_cache import MESSAGES, ac_claim, pull_request_scopes, push_scopes
from tests.fakes.github_server import FakeGitHub
from tests.unit.cache.cache_helpers import chat_body, chat_request, reply

VERSION = "axl-eval-cache-v1"


def _client(
    gh: FakeGitHub, scopes: tuple[tuple[str, int], ...], masked: list[str] | None = None
) -> ActionsCache:
    repo = gh.repos.get("octo/evals") or gh.add_repo()
    run = gh.add_run(repo, head_sha=gh.add_commit(), status="in_progress")
    token = gh.runtime_token(run, ac=ac_claim(*scopes))
    return ActionsCache(
        gh.results_url,
        token,
        sleep=lambda _s: None,
        on_secret=(masked.append if masked is not None else None),
    )


def test_the_fake_checks_every_message_the_toolkit_defines() -> None:
    # The vendored definitions parse into the six messages of the three RPCs, field for field.
    assert MESSAGES["GetCacheEntryDownloadURLRequest"] == {
        "metadata": "message",
        "key": "scalar",
        "restore_keys": "repeated scalar",
        "version": "scalar",
    }
    assert set(MESSAGES) == {
        f"{rpc}{kind}"
        for rpc in ("CreateCacheEntry", "FinalizeCacheEntryUpload", "GetCacheEntryDownloadURL")
        for kind in ("Request", "Response")
    }


def test_a_push_saves_and_a_pull_request_reads_it_and_writes_only_its_own(fake_github: FakeGitHub) -> None:
    masked: list[str] = []
    baseline = _client(fake_github, push_scopes("main"), masked)
    assert baseline.save("axl-eval-cache-101", VERSION, b"baseline entries") is not None
    assert fake_github.cache.in_scope("refs/heads/main") == ["axl-eval-cache-101"]
    assert masked  # the SAS signature was handed out to be masked

    pull = _client(fake_github, pull_request_scopes(7))
    found = pull.restore("axl-eval-cache-202", ["axl-eval-cache-"], VERSION, limit=1 << 20)
    assert found is not None and found.key == "axl-eval-cache-101" and found.data == b"baseline entries"
    assert pull.save("axl-eval-cache-202", VERSION, b"pr entries") is not None
    assert fake_github.cache.in_scope("refs/pull/7/merge") == ["axl-eval-cache-202"]
    assert fake_github.cache.in_scope("refs/heads/main") == ["axl-eval-cache-101"]  # untouched

    # The base branch never reads what a pull request (a fork's included) wrote.
    later = _client(fake_github, push_scopes("main"))
    again = later.restore("axl-eval-cache-303", ["axl-eval-cache-"], VERSION, limit=1 << 20)
    assert again is not None and again.key == "axl-eval-cache-101"

    # The pull request's next run prefers its own newer entry to the base branch's.
    rerun = _client(fake_github, pull_request_scopes(7))
    mine = rerun.restore("axl-eval-cache-404", ["axl-eval-cache-"], VERSION, limit=1 << 20)
    assert mine is not None and mine.key == "axl-eval-cache-202"


def test_a_miss_a_duplicate_key_and_another_version(fake_github: FakeGitHub) -> None:
    client = _client(fake_github, push_scopes())
    assert client.restore("k-1", ["k-"], VERSION, limit=100) is None
    assert client.save("k-1", VERSION, b"x") is not None
    assert client.save("k-1", VERSION, b"y") is None  # immutable: already saved
    assert client.restore("k-1", [], "another-version", limit=100) is None


def test_a_job_that_may_not_write_is_refused_in_one_message(fake_github: FakeGitHub) -> None:
    reader = _client(fake_github, (("refs/heads/main", 1),))
    with pytest.raises(CacheServiceError, match="may not write that cache scope"):
        reader.save("k", VERSION, b"x")


def test_an_entry_over_the_limit_is_refused(fake_github: FakeGitHub) -> None:
    client = _client(fake_github, push_scopes())
    client.save("big", VERSION, b"x" * 5000)
    with pytest.raises(CacheServiceError, match="larger than 100 bytes"):
        client.restore("big", [], VERSION, limit=100)


def test_the_response_cache_travels_through_the_service(fake_github: FakeGitHub, tmp_path: Path) -> None:
    source = DirectoryStore(tmp_path / "a")
    keys = []
    for seed in range(5):
        request = chat_request(body=chat_body(seed=seed))
        keys.append(cache_key(request))
        source.put(keys[-1], request_record(request), reply())
    archive, count = pack(source, max_bytes=1 << 30)
    assert count == 5
    _client(fake_github, push_scopes()).save("axl-eval-cache-1", VERSION, archive)
    found = _client(fake_github, pull_request_scopes(3)).restore(
        "axl-eval-cache-2", ["axl-eval-cache-"], VERSION, limit=1 << 30
    )
    assert found is not None
    target = DirectoryStore(tmp_path / "b")
    assert unpack(target, found.data).restored == 5
    assert all(target.get(k) is not None for k in keys)


def _archive(members: dict[str, bytes], *, marker: bool = True) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        if marker:
            tar.addfile(tarfile.TarInfo(ARCHIVE_FORMAT), io.BytesIO(b""))
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def test_an_archive_is_trusted_for_nothing(tmp_path: Path) -> None:
    source = DirectoryStore(tmp_path / "a")
    request = chat_request()
    key = cache_key(request)
    source.put(key, request_record(request), reply())
    good = source.path_of(key).read_bytes()
    other = cache_key(chat_request(body=chat_body(seed=99)))
    hostile = _archive(
        {
            key: good,
            "../../escape": good,  # a path: never used
            other: good,  # the entry of another key
            "0" * 64: b"AXLC1 0000\n{}",  # a damaged entry
        }
    )
    target = DirectoryStore(tmp_path / "b")
    result = unpack(target, hostile)
    assert (result.restored, result.skipped) == (1, 3)
    assert target.get(key) is not None and target.get(other) is None
    assert not (tmp_path / "escape").exists() and not (tmp_path / "b" / ".." / "escape").exists()
    assert unpack(target, b"not a tar").restored == 0
    assert unpack(target, _archive({key: good}, marker=False)).restored == 0
    assert json.loads((tmp_path / "b" / "axl-cache.json").read_text()) == {"format": 1}
