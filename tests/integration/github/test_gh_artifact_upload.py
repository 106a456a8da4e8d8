"""Artifacts v4 upload against the fake results service and blob host, then download via REST."""

from __future__ import annotations

import base64
import io
import json
import logging
import random
import zipfile
import zlib
from datetime import UTC, datetime
from typing import Any
from xml.etree import ElementTree

import pytest

from axl_action.github.artifact_upload import (
    ArtifactUploader,
    artifacts_supported,
    backend_ids_from_token,
    validate_artifact_name,
    zip_files,
)
from axl_action.github.artifacts import download_artifact
from axl_action.github.client import GitHubClient
from axl_action.github.errors import ArtifactError
from axl_action.github.safezip import extract_zip
from tests.fakes.github_server import FakeGitHub, FakeRun


def _setup(gh: FakeGitHub) -> tuple[FakeRun, str, list[float]]:
    repo = gh.add_repo()
    run = gh.add_run(repo, head_sha=gh.add_commit(), status="in_progress")
    return run, gh.runtime_token(run), []


def _uploader(gh: FakeGitHub, token: str, sleeps: list[float], **kw: Any) -> ArtifactUploader:
    return ArtifactUploader(gh.results_url, token, sleep=sleeps.append, **kw)


def test_upload_then_download_round_trip(fake_github: FakeGitHub) -> None:
    run, token, sleeps = _setup(fake_github)
    files = {"results.json": b'{"score": 0.9}', "report/index.html": b"<html></html>"}
    masked: list[str] = []
    up = _uploader(fake_github, token, sleeps, on_secret=masked.append).upload("axl-eval-baseline", files)
    art = fake_github.artifacts[up.id]
    assert art.run is run and art.name == "axl-eval-baseline"
    assert art.digest == up.digest and up.size == len(art.data)

    # It is listed and downloadable through REST like any upload-artifact artifact.
    client = GitHubClient(fake_github.api_url, fake_github.add_token(), sleep=sleeps.append)
    data = download_artifact(client, "octo/evals", up.id, expected_digest=up.digest)
    assert extract_zip(data) == files

    # Wire details: snake_case proto names, int64 as string, Put Block + Put Block List, no auth.
    create, finalize = (json.loads(r.body) for r in fake_github.requests_to("results"))
    assert create["version"] == 4 and "mime_type" not in create
    assert finalize["size"] == str(up.size) and finalize["hash"].startswith("sha256:")
    puts = fake_github.requests_to("blob", "PUT")
    assert [r.query["comp"][0] for r in puts] == ["block", "blocklist"]
    assert all("authorization" not in r.headers for r in puts)
    block_list = ElementTree.fromstring(puts[-1].body)
    assert [el.text for el in block_list] == [puts[0].query["blockid"][0]]
    assert puts[-1].headers["x-ms-blob-content-type"] == "application/zip"
    assert masked and all(m not in str(up) for m in masked)


def test_large_upload_is_split_into_equal_length_block_ids(fake_github: FakeGitHub) -> None:
    _, token, sleeps = _setup(fake_github)
    data = random.Random(7).randbytes(10_000)  # incompressible: the zip stays ~10 KB
    up = _uploader(fake_github, token, sleeps, block_size=1024).upload_zip("big", zip_files({"a.bin": data}))
    blocks = [r for r in fake_github.requests_to("blob", "PUT") if r.query["comp"] == ["block"]]
    assert len(blocks) >= 2
    assert len({len(r.query["blockid"][0]) for r in blocks}) == 1
    assert fake_github.artifacts[up.id].data == b"".join(r.body for r in blocks)


def test_camel_case_backend(fake_github: FakeGitHub) -> None:
    fake_github.twirp_casing = "camel"
    _, token, sleeps = _setup(fake_github)
    up = _uploader(fake_github, token, sleeps).upload("x", {"a.txt": b"a"})
    assert up.id in fake_github.artifacts
    assert _uploader(fake_github, token, sleeps).list_artifacts("x")[0]["database_id"] == str(up.id)


def test_legacy_backend_accepts_our_requests(fake_github: FakeGitHub) -> None:
    """act/Gitea reject unknown fields such as mime_type; we never send it for zips."""
    fake_github.legacy_results_backend = True
    _, token, sleeps = _setup(fake_github)
    assert _uploader(fake_github, token, sleeps).upload("x", {"a.txt": b"a"}).id


def test_twirp_retries_then_succeeds(fake_github: FakeGitHub) -> None:
    _, token, sleeps = _setup(fake_github)
    fake_github.fail_next(2, 503, server="results", path="CreateArtifact")
    fake_github.fail_next(1, 500, server="blob")
    _uploader(fake_github, token, sleeps).upload("x", {"a.txt": b"a"})
    assert len(sleeps) == 3
    assert 3.0 <= sleeps[0] <= 3.75 and 6.0 <= sleeps[1] <= 7.5  # axl_action.retry: 3 s, doubled, +0-25 %


def test_twirp_gives_up(fake_github: FakeGitHub) -> None:
    _, token, sleeps = _setup(fake_github)
    fake_github.fail_next(10, 502, server="results")
    with pytest.raises(ArtifactError, match="CreateArtifact for artifact 'x' failed with 502"):
        _uploader(fake_github, token, sleeps, max_attempts=3).upload("x", {"a.txt": b"a"})
    assert len(fake_github.requests_to("results")) == 3


def test_duplicate_name_conflict_and_overwrite(fake_github: FakeGitHub) -> None:
    _, token, sleeps = _setup(fake_github)
    uploader = _uploader(fake_github, token, sleeps)
    first = uploader.upload("dup", {"a.txt": b"1"})
    with pytest.raises(ArtifactError, match="already exists") as err:
        uploader.upload("dup", {"a.txt": b"2"})
    assert "overwrite" in str(err.value)
    assert sleeps == []  # 409 is not retried
    second = uploader.upload("dup", {"a.txt": b"2"}, overwrite=True)
    assert first.id not in fake_github.artifacts and second.id in fake_github.artifacts


def test_quota_error_is_not_retried(fake_github: FakeGitHub) -> None:
    _, token, sleeps = _setup(fake_github)
    fake_github.fail_next(1, 400, server="results", message="insufficient usage to create artifact")
    with pytest.raises(ArtifactError, match="quota"):
        _uploader(fake_github, token, sleeps).upload("x", {"a.txt": b"a"})


def test_retention_is_capped_by_the_repository(
    fake_github: FakeGitHub, caplog: pytest.LogCaptureFixture
) -> None:
    _, token, sleeps = _setup(fake_github)
    up = _uploader(fake_github, token, sleeps, max_retention_days=5).upload(
        "x", {"a": b"a"}, retention_days=30
    )
    create = json.loads(fake_github.requests_to("results")[0].body)
    assert create["expires_at"].endswith("Z") and "." in create["expires_at"]
    art = fake_github.artifacts[up.id]
    assert 4.9 < (art.expires_at - art.created_at).total_seconds() / 86400 < 5.1
    assert "Retention days cannot be greater" in caplog.text


def test_forged_token_is_refused(fake_github: FakeGitHub) -> None:
    _, token, sleeps = _setup(fake_github)
    header, payload, _ = token.split(".")
    forged = f"{header}.{payload}.{base64.urlsafe_b64encode(b'x' * 32).rstrip(b'=').decode()}"
    with pytest.raises(ArtifactError, match="refused") as err:
        _uploader(fake_github, forged, sleeps).upload("x", {"a": b"a"})
    assert forged not in str(err.value)


def test_from_env_errors_are_actionable() -> None:
    with pytest.raises(ArtifactError, match="ACTIONS_RUNTIME_TOKEN and ACTIONS_RESULTS_URL not set") as err:
        ArtifactUploader.from_env({})
    assert "run:" in str(err.value)


def test_token_not_logged(fake_github: FakeGitHub, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    _, token, sleeps = _setup(fake_github)
    fake_github.fail_next(1, 500, server="results")
    up = _uploader(fake_github, token, sleeps)
    up.upload("x", {"a": b"a"})
    # Our loggers only: urllib3's own DEBUG lines print request URLs, so the action must never
    # turn urllib3 up to DEBUG (the SAS query is a credential).
    ours = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("axl_action"))
    assert "retrying" in ours
    assert token not in ours and token not in repr(up)
    assert "sig=" not in ours


# -- pure helpers -----------------------------------------------------------------------------


def _jwt(claims: dict[str, object]) -> str:
    def enc(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    return f"{enc(b'{}')}.{enc(json.dumps(claims).encode())}.{enc(b'sig')}"


def test_backend_ids_from_scp() -> None:
    ids = backend_ids_from_token(
        _jwt(
            {
                "scp": "Actions.ExampleScope Actions.Results:ce7f54c7-61c7-4aae-887f-30da475f5f1a:"
                "ca395085-040a-526b-2ce8-bdc85f692774"
            }
        )
    )
    assert ids.workflow_run_backend_id == "ce7f54c7-61c7-4aae-887f-30da475f5f1a"
    assert ids.workflow_job_run_backend_id == "ca395085-040a-526b-2ce8-bdc85f692774"


@pytest.mark.parametrize(
    "token",
    [
        "not-a-jwt",
        _jwt({}),
        _jwt({"scp": "Actions.ExampleScope"}),
        _jwt({"scp": "Actions.Results:only-one"}),
        _jwt({"scp": "Actions.Results:a:b:c"}),
    ],
)
def test_backend_ids_invalid(token: str) -> None:
    with pytest.raises(ArtifactError, match="invalid and/or missing claims"):
        backend_ids_from_token(token)


@pytest.mark.parametrize("name", ["", "a/b", "a:b", 'a"b', "a\nb", "a\\b", "a*"])
def test_invalid_artifact_names(name: str) -> None:
    with pytest.raises(ArtifactError, match="Invalid artifact name"):
        validate_artifact_name(name)


@pytest.mark.parametrize("path", ["../x", "/abs", "a|b", "a\nb"])
def test_invalid_file_paths(path: str) -> None:
    with pytest.raises(ArtifactError, match="Invalid file path"):
        zip_files({path: b"x"})


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://github.com", True),
        ("https://octo.ghe.com", True),
        ("http://github.localhost", True),
        ("https://ghes.corp.example", False),
    ],
)
def test_artifacts_supported(url: str, ok: bool) -> None:
    assert artifacts_supported(url) is ok


def test_single_file_upload_is_not_zipped(fake_github: FakeGitHub) -> None:
    _, token, sleeps = _setup(fake_github)
    html = b"<!doctype html><title>report</title>"
    up = _uploader(fake_github, token, sleeps).upload_file("report.html", html)
    create = json.loads(fake_github.requests_to("results")[0].body)
    assert (create["version"], create["mime_type"], create["name"]) == (7, "text/html", "report.html")
    blocklist = fake_github.requests_to("blob", "PUT")[-1]
    assert blocklist.headers["x-ms-blob-content-type"] == "text/html"
    client = GitHubClient(fake_github.api_url, fake_github.add_token(), sleep=sleeps.append)
    assert download_artifact(client, "octo/evals", up.id, expected_digest=up.digest) == html
    assert fake_github.requests_to("blob", "GET")[-1].path.endswith("/report.html")


def test_single_file_upload_refused_by_a_legacy_backend(fake_github: FakeGitHub) -> None:
    fake_github.legacy_results_backend = True
    _, token, sleeps = _setup(fake_github)
    with pytest.raises(ArtifactError, match="malformed"):
        _uploader(fake_github, token, sleeps).upload_file("report.html", b"<html>")


@pytest.mark.parametrize("strategy", [zlib.Z_DEFAULT_STRATEGY, zlib.Z_HUFFMAN_ONLY])
def test_zip_files_is_a_zip_every_reader_opens(strategy: int) -> None:
    files = {"report.html": b"<html>" * 5000, "dir/b.json": b"{}", "\u00e9t\u00e9.txt": b""}
    when = datetime(2026, 12, 7, 10, 11, 31, tzinfo=UTC)
    data = zip_files(files, strategy=strategy, when=when)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert zf.testzip() is None
        infos = zf.infolist()
        assert [i.filename for i in infos] == sorted(files)
        assert all(i.date_time == (2026, 12, 7, 10, 11, 30) and i.external_attr >> 16 == 0o644 for i in infos)
        assert all(i.compress_type == zipfile.ZIP_DEFLATED for i in infos)
        assert {i.filename: zf.read(i) for i in infos} == files
    assert extract_zip(data) == files
    # Huffman-only finds no repeats: the repetitive page stays far larger than level 6 makes it.
    sizes = {
        s: len(zip_files(files, strategy=s, when=when))
        for s in (zlib.Z_DEFAULT_STRATEGY, zlib.Z_HUFFMAN_ONLY)
    }
    assert sizes[zlib.Z_DEFAULT_STRATEGY] < 500 < sizes[zlib.Z_HUFFMAN_ONLY] < 30_000
