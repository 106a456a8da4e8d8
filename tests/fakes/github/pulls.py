"""REST: pull requests."""

from __future__ import annotations

import re
from typing import Any

from tests.fakes import github_objects as obj
from tests.fakes.github.records import FakePull, FakeToken
from tests.fakes.github.state import GitHubState
from tests.fakes.github.wire import _error, _json, _Response


class PullsApi(GitHubState):
    """``GET /repos/{owner}/{repo}/pulls/{number}``."""

    def _r_pull(self, method: str, m: re.Match[str], query: Any, token: FakeToken, body: bytes) -> _Response:
        repo = self._repo(m)
        pull = self.pulls.get((f"{m['owner']}/{m['repo']}", int(m["num"])))
        if method != "GET" or repo is None or pull is None:
            return _error(404, "Not Found")
        return _json(200, self._pull_obj(pull))

    def _pull_obj(self, pull: FakePull) -> dict[str, Any]:
        repo = pull.repo
        api = f"{self.api_url}/repos/{repo.full_name}"
        owner = obj.user(self.api_url, repo.owner, 1000 + repo.id)
        head_owner = obj.user(self.api_url, pull.head_repo.owner, 1000 + pull.head_repo.id)
        base = obj.skeleton("pull-request")
        return obj.overlay(
            base,
            id=pull.number * 1000 + repo.id,
            node_id=f"PR_{pull.number}",
            number=pull.number,
            state=pull.state,
            title=pull.title,
            body=None,
            url=f"{api}/pulls/{pull.number}",
            html_url=f"https://github.com/{repo.full_name}/pull/{pull.number}",
            issue_url=f"{api}/issues/{pull.number}",
            comments_url=f"{api}/issues/{pull.number}/comments",
            merge_commit_sha=None,
            user=owner,
            head={
                "label": f"{pull.head_repo.owner}:{pull.head_ref}",
                "ref": pull.head_ref,
                "sha": pull.head_sha,
                "user": head_owner,
                "repo": self._repo_obj(pull.head_repo, "repository"),
            },
            base={
                "label": f"{repo.owner}:{pull.base_ref}",
                "ref": pull.base_ref,
                "sha": pull.base_sha,
                "user": owner,
                "repo": self._repo_obj(repo, "repository"),
            },
            mergeable=None,
            merged=False,
        )
