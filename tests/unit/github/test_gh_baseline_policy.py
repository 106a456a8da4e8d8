"""The baseline policy over plain values: no server, no clock but the one passed in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from axl_action.github.baseline_policy import (
    EXPIRED_ON_DOWNLOAD,
    ArtifactInfo,
    BaselineChoice,
    Commits,
    NoBaseline,
    Window,
    WorkflowRunInfo,
    ancestry_checks,
    choose_baseline,
)

NAME = "axl-eval-baseline"
T0 = datetime(2026, 11, 1, tzinfo=UTC)
NOW = T0 + timedelta(days=1)


def sha(i: int) -> str:
    return f"{i:040x}"


def run(i: int, **kw: Any) -> WorkflowRunInfo:
    fields: dict[str, Any] = {
        "id": 100 + i,
        "head_sha": sha(i),
        "head_branch": "main",
        "event": "push",
        "status": "completed",
        "conclusion": "success",
        "created_at": T0 + timedelta(hours=i),
    }
    return WorkflowRunInfo(**{**fields, **kw})


def art(i: int, **kw: Any) -> ArtifactInfo:
    fields: dict[str, Any] = {
        "id": i,
        "name": NAME,
        "size_in_bytes": 10,
        "expired": False,
        "created_at": T0 + timedelta(hours=i, minutes=5),
        "expires_at": None,
        "run_id": 100 + i,
        "head_sha": sha(i),
        "head_branch": "main",
        "repository_id": 1,
        "head_repository_id": 1,
    }
    return ArtifactInfo(**{**fields, **kw})


def choose(arts: list[ArtifactInfo], runs: list[WorkflowRunInfo], **kw: Any) -> BaselineChoice | NoBaseline:
    kw.setdefault("commits", Commits())
    kw.setdefault("now", NOW)
    return choose_baseline(arts, runs, name=NAME, branch="main", **kw)


ARTS = [art(i) for i in (1, 2, 3, 4)]
RUNS = [run(i) for i in (1, 2, 3, 4)]


def test_merge_base_then_base_commit_then_newest() -> None:
    c = choose(ARTS, RUNS, commits=Commits(merge_base_sha=sha(2), base_sha=sha(4)))
    assert isinstance(c, BaselineChoice) and (c.match, c.head_sha) == ("merge-base", sha(2))
    assert "merge base 0000000" in c.reason
    c = choose(ARTS[2:], RUNS, commits=Commits(merge_base_sha=sha(2), base_sha=sha(4)))
    assert isinstance(c, BaselineChoice) and (c.match, c.head_sha) == ("base-sha", sha(4))
    c = choose(ARTS, RUNS)
    assert isinstance(c, BaselineChoice) and (c.match, c.run_id) == ("newest", 104)


def test_age_is_measured_against_the_clock_passed_in() -> None:
    c = choose(ARTS, RUNS, now=T0 + timedelta(hours=6, minutes=5))
    assert isinstance(c, BaselineChoice) and c.age_seconds == 2 * 3600
    c = choose(ARTS, RUNS, now=T0)  # a clock behind the upload never gives a negative age
    assert isinstance(c, BaselineChoice) and c.age_seconds == 0


def test_ancestry_is_asked_only_when_it_can_change_the_choice() -> None:
    commits = Commits(merge_base_sha=sha(9))
    window = Window(max_ancestor_checks=2)
    asked = ancestry_checks(ARTS, RUNS, name=NAME, branch="main", commits=commits, window=window)
    assert asked == [sha(4), sha(3)], "newest first, at most max_ancestor_checks"
    exact = Commits(merge_base_sha=sha(2))
    assert ancestry_checks(ARTS, RUNS, name=NAME, branch="main", commits=exact) == []
    assert ancestry_checks(ARTS, RUNS, name=NAME, branch="main", commits=Commits()) == []

    behind = Commits(merge_base_sha=sha(9), behind={sha(3): 6})
    c = choose(ARTS, RUNS, commits=behind, window=window)
    assert isinstance(c, BaselineChoice) and (c.match, c.head_sha, c.commits_behind) == (
        "ancestor",
        sha(3),
        6,
    )
    c = choose(ARTS, RUNS, commits=commits, window=window)
    assert isinstance(c, BaselineChoice) and c.match == "newest" and "includes changes the PR" in c.reason


def test_ineligible_artifacts_are_skipped_with_reasons() -> None:
    arts = [
        art(4, expired=True),
        art(3, head_repository_id=2),
        art(2, head_branch="feature"),
        art(1),
        art(5, run_id=None),
    ]
    runs = [*RUNS[:2], run(3), run(4)]
    failed = [run(1, conclusion="failure"), *runs[1:]]
    c = choose(arts, runs)
    assert isinstance(c, BaselineChoice) and c.head_sha == sha(1)
    reasons = {s.artifact_id: s.reason for s in c.skipped}
    assert reasons[4].startswith("expired") and "fork" in reasons[3] and "'feature'" in reasons[2]
    assert reasons[5] == "no workflow run recorded for it"
    none = choose(arts, failed)
    assert isinstance(none, NoBaseline) and none.cause == "ineligible"
    assert "successful push runs" in {s.artifact_id: s.reason for s in none.skipped}[1]


def test_no_baseline_says_whether_none_expired_or_too_old() -> None:
    none = choose([], RUNS)
    assert isinstance(none, NoBaseline) and none.cause == "none" and "exists yet" in none.reason
    none = choose([art(1, expired=True), art(2)], RUNS, exclude={2: EXPIRED_ON_DOWNLOAD})
    assert isinstance(none, NoBaseline) and none.cause == "expired" and "has expired" in none.reason
    assert [s.reason for s in none.skipped] == [EXPIRED_ON_DOWNLOAD, "expired (past its retention period)"]
    # The run list is full (the window), and the artifact predates its oldest run.
    none = choose([art(1)], [run(3), run(4)], window=Window(max_runs=2))
    assert isinstance(none, NoBaseline) and none.cause == "too-old"
    assert none.skipped[0].reason.startswith("too old: its run is older than the newest 2")


def test_ordering_never_trusts_the_listing_order() -> None:
    c = choose(list(reversed(ARTS)), list(reversed(RUNS)))
    d = choose(ARTS, RUNS)
    assert isinstance(c, BaselineChoice) and isinstance(d, BaselineChoice) and c.run_id == d.run_id == 104
