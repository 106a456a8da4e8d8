"""REST: workflow runs and artifacts (list, get, delete, download through the blob store)."""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta
from typing import Any

from tests.fakes import github_objects as obj
from tests.fakes.github.records import FakeArtifact, FakeRun, FakeToken
from tests.fakes.github.state import GitHubState
from tests.fakes.github.wire import FORBIDDEN_INTEGRATION, _error, _json, _Response


class ActionsApi(GitHubState):
    """``/repos/{owner}/{repo}/actions/runs...`` and ``.../actions/artifacts...``."""

    def _artifact_obj(self, art: FakeArtifact) -> dict[str, Any]:
        url = f"{self.api_url}/repos/{art.repo.full_name}/actions/artifacts/{art.id}"
        run = art.run
        return {
            "id": art.id,
            "node_id": f"MDg6QXJ0aWZhY3Q{art.id}",
            "name": art.name,
            "size_in_bytes": len(art.data),
            "url": url,
            "archive_download_url": url + "/zip",
            "expired": art.expired,
            "created_at": obj.iso(art.created_at),
            "expires_at": obj.iso(art.expires_at),
            "updated_at": obj.iso(art.created_at),
            "digest": art.digest,
            "workflow_run": None
            if run is None
            else {
                "id": run.id,
                "repository_id": run.repo.id,
                "head_repository_id": run.head_repo_id,
                "head_branch": run.head_branch,
                "head_sha": run.head_sha,
            },
        }

    def _run_obj(self, run: FakeRun) -> dict[str, Any]:
        base = f"{self.api_url}/repos/{run.repo.full_name}/actions/runs/{run.id}"
        head_repo = next((r for r in self.repos.values() if r.id == run.head_repo_id), run.repo)
        commit = self.commits.get(run.head_sha)
        return obj.overlay(
            obj.skeleton("workflow-run"),
            id=run.id,
            node_id=f"WFR_{run.id}",
            name="evals",
            head_branch=run.head_branch,
            head_sha=run.head_sha,
            path=run.workflow_path,
            display_title=f"run {run.id}",
            run_number=run.id % 1000,
            run_attempt=run.run_attempt,
            event=run.event,
            status=run.status,
            conclusion=run.conclusion,
            workflow_id=run.workflow_id,
            url=base,
            html_url=f"https://github.com/{run.repo.full_name}/actions/runs/{run.id}",
            pull_requests=[],
            created_at=obj.iso(run.created_at),
            updated_at=obj.iso(run.created_at + timedelta(minutes=3)),
            run_started_at=obj.iso(run.created_at),
            jobs_url=base + "/jobs",
            logs_url=base + "/logs",
            check_suite_url=f"{self.api_url}/repos/{run.repo.full_name}/check-suites/{run.id}",
            artifacts_url=base + "/artifacts",
            cancel_url=base + "/cancel",
            rerun_url=base + "/rerun",
            workflow_url=f"{self.api_url}/repos/{run.repo.full_name}/actions/workflows/{run.workflow_id}",
            head_commit={
                "id": run.head_sha,
                "tree_id": hashlib.sha1(run.head_sha.encode()).hexdigest(),
                "message": commit.message if commit else "commit",
                "timestamp": obj.iso(commit.date if commit else run.created_at),
                "author": {"name": "Octo Cat", "email": "octocat@example.com"},
                "committer": {"name": "Octo Cat", "email": "octocat@example.com"},
            },
            repository=self._repo_obj(run.repo),
            head_repository=self._repo_obj(head_repo),
        )

    def _r_artifacts(
        self, method: str, m: re.Match[str], query: dict[str, list[str]], token: FakeToken, body: bytes
    ) -> _Response:
        repo = self._repo(m)
        if repo is None or method != "GET":
            return _error(404, "Not Found")
        name = query.get("name", [None])[0]
        arts = [a for a in self.artifacts.values() if a.repo is repo and (name is None or a.name == name)]
        arts.sort(key=lambda a: (a.created_at, a.id), reverse=True)
        chunk, link = self._paginate(arts, query, f"/repos/{repo.full_name}/actions/artifacts")
        return _json(
            200, {"total_count": len(arts), "artifacts": [self._artifact_obj(a) for a in chunk]}, link
        )

    def _r_artifact(
        self, method: str, m: re.Match[str], query: Any, token: FakeToken, body: bytes
    ) -> _Response:
        repo = self._repo(m)
        art = self.artifacts.get(int(m["id"]))
        if repo is None or art is None or art.repo is not repo:
            return _error(404, "Not Found")
        if method == "GET":
            return _json(200, self._artifact_obj(art))
        if method == "DELETE":
            if not token.write:
                return _error(403, FORBIDDEN_INTEGRATION)
            del self.artifacts[art.id]
            return _Response(204)
        return _error(404, "Not Found")

    def _r_artifact_download(
        self, method: str, m: re.Match[str], query: Any, token: FakeToken, body: bytes
    ) -> _Response:
        repo = self._repo(m)
        art = self.artifacts.get(int(m["id"]))
        if method != "GET" or repo is None or art is None or art.repo is not repo or m["fmt"] != "zip":
            return _error(404, "Not Found")
        if art.expired:
            return _error(
                410,
                "Artifact has expired",
                "https://docs.github.com/rest/actions/artifacts#download-an-artifact",
            )
        key = (
            f"artifacts/{art.id}.zip"
            if art.content_type == "application/zip"
            else f"artifacts/{art.id}/{art.name}"
        )
        self.blobs[key] = art.data
        self.blob_types[key] = art.content_type
        return _Response(302, b"", {"location": self.sign_blob_url(key, ttl=60)})

    def _r_runs(
        self, method: str, m: re.Match[str], query: dict[str, list[str]], token: FakeToken, body: bytes
    ) -> _Response:
        repo = self._repo(m)
        if repo is None or method != "GET":
            return _error(404, "Not Found")
        runs = [r for r in self.runs.values() if r.repo is repo]
        wf = m.groupdict().get("wf")
        if wf is not None:
            runs = [r for r in runs if r.workflow_path.rsplit("/", 1)[-1] == wf or str(r.workflow_id) == wf]
            if not runs and not any(r.workflow_path.endswith("/" + wf) for r in self.runs.values()):
                return _error(404, "Not Found")

        def first(key: str) -> str | None:
            return query.get(key, [None])[0]

        if (branch := first("branch")) is not None:
            runs = [r for r in runs if r.head_branch == branch]
        if (event := first("event")) is not None:
            runs = [r for r in runs if r.event == event]
        if (status := first("status")) is not None:
            runs = [r for r in runs if status in (r.status, r.conclusion)]
        if (head_sha := first("head_sha")) is not None:
            runs = [r for r in runs if r.head_sha == head_sha]
        runs.sort(key=lambda r: (r.created_at, r.id), reverse=True)
        path = f"/repos/{repo.full_name}/actions/" + (f"workflows/{wf}/runs" if wf else "runs")
        chunk, link = self._paginate(runs, query, path)
        return _json(
            200, {"total_count": len(runs), "workflow_runs": [self._run_obj(r) for r in chunk]}, link
        )

    def _r_run(self, method: str, m: re.Match[str], query: Any, token: FakeToken, body: bytes) -> _Response:
        repo = self._repo(m)
        run = self.runs.get(int(m["id"]))
        if method != "GET" or repo is None or run is None or run.repo is not repo:
            return _error(404, "Not Found")
        return _json(200, self._run_obj(run))

    def _r_run_artifacts(
        self, method: str, m: re.Match[str], query: dict[str, list[str]], token: FakeToken, body: bytes
    ) -> _Response:
        repo = self._repo(m)
        run = self.runs.get(int(m["id"]))
        if method != "GET" or repo is None or run is None or run.repo is not repo:
            return _error(404, "Not Found")
        name = query.get("name", [None])[0]
        arts = [a for a in self.artifacts.values() if a.run is run and (name is None or a.name == name)]
        arts.sort(key=lambda a: a.id, reverse=query.get("direction", ["desc"])[0] != "asc")
        chunk, link = self._paginate(arts, query, f"/repos/{repo.full_name}/actions/runs/{run.id}/artifacts")
        return _json(
            200, {"total_count": len(arts), "artifacts": [self._artifact_obj(a) for a in chunk]}, link
        )
