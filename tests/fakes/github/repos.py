"""REST: the authenticated user, the repository, commits and ``compare``."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from tests.fakes import github_objects as obj
from tests.fakes.github.records import FakeRepo, FakeToken
from tests.fakes.github.state import GitHubState
from tests.fakes.github.wire import FORBIDDEN_INTEGRATION, _error, _json, _Response


class ReposApi(GitHubState):
    """``GET /user``, ``GET /repos/{owner}/{repo}``, ``GET .../compare/{base}...{head}``."""

    def _r_user(self, method: str, m: re.Match[str], query: Any, token: FakeToken, body: bytes) -> _Response:
        if method != "GET":
            return _error(404, "Not Found")
        if token.installation:
            return _error(
                403,
                FORBIDDEN_INTEGRATION,
                "https://docs.github.com/rest/users/users#get-the-authenticated-user",
            )
        return _json(200, obj.user(self.api_url, token.login, token.user_id, token.user_type))

    def _r_repo(self, method: str, m: re.Match[str], query: Any, token: FakeToken, body: bytes) -> _Response:
        repo = self._repo(m)
        if repo is None or method != "GET":
            return _error(404, "Not Found")
        return _json(200, self._repo_obj(repo, "full-repository"))

    def _r_compare(
        self, method: str, m: re.Match[str], query: Any, token: FakeToken, body: bytes
    ) -> _Response:
        repo = self._repo(m)
        if method != "GET" or repo is None or "..." not in m["basehead"]:
            return _error(404, "Not Found")
        base, head = m["basehead"].split("...", 1)
        for sha in (base, head):
            if sha not in self.commits:
                return _error(404, f"No commit found for SHA: {sha}")
        head_anc = self._ancestors(head)
        base_anc = set(self._ancestors(base))
        merge_base = next((s for s in head_anc if s in base_anc), None)
        if merge_base is None:
            return _error(404, f"No common ancestor between {base} and {head}.")
        ahead = [s for s in head_anc if s not in base_anc]
        behind = [s for s in self._ancestors(base) if s not in set(head_anc)]
        if base == head:
            status = "identical"
        elif not behind:
            status = "ahead"
        elif not ahead:
            status = "behind"
        else:
            status = "diverged"
        api = f"{self.api_url}/repos/{repo.full_name}"
        return _json(
            200,
            obj.overlay(
                obj.skeleton("commit-comparison"),
                url=f"{api}/compare/{base}...{head}",
                html_url=f"https://github.com/{repo.full_name}/compare/{base}...{head}",
                permalink_url=f"https://github.com/{repo.full_name}/compare/{base}...{head}",
                diff_url=f"https://github.com/{repo.full_name}/compare/{base}...{head}.diff",
                patch_url=f"https://github.com/{repo.full_name}/compare/{base}...{head}.patch",
                base_commit=self._commit_obj(repo, base),
                merge_base_commit=self._commit_obj(repo, merge_base),
                status=status,
                ahead_by=len(ahead),
                behind_by=len(behind),
                total_commits=len(ahead),
                commits=[self._commit_obj(repo, s) for s in reversed(ahead)],
                files=[],
            ),
        )

    def _commit_obj(self, repo: FakeRepo, sha: str) -> dict[str, Any]:
        commit = self.commits[sha]
        api = f"{self.api_url}/repos/{repo.full_name}"
        person = {"name": "Octo Cat", "email": "octocat@example.com", "date": obj.iso(commit.date)}
        return obj.overlay(
            obj.skeleton("commit"),
            sha=sha,
            node_id=f"C_{sha[:12]}",
            url=f"{api}/commits/{sha}",
            html_url=f"https://github.com/{repo.full_name}/commit/{sha}",
            comments_url=f"{api}/commits/{sha}/comments",
            commit={
                "url": f"{api}/git/commits/{sha}",
                "author": person,
                "committer": person,
                "message": commit.message,
                "comment_count": 0,
                "tree": {"sha": hashlib.sha1(sha.encode()).hexdigest(), "url": f"{api}/git/trees/{sha}"},
            },
            author=obj.user(self.api_url, "octocat", 583231),
            committer=obj.user(self.api_url, "web-flow", 19864447),
            parents=[
                {
                    "sha": p,
                    "url": f"{api}/commits/{p}",
                    "html_url": f"https://github.com/{repo.full_name}/commit/{p}",
                }
                for p in commit.parents
            ],
        )

    # -- commit graph -----------------------------------------------------------------------

    def _ancestors(self, sha: str) -> list[str]:
        """``sha`` and its ancestors, nearest first (breadth-first)."""
        seen: list[str] = []
        queue = [sha]
        while queue:
            cur = queue.pop(0)
            if cur in seen or cur not in self.commits:
                continue
            seen.append(cur)
            queue.extend(self.commits[cur].parents)
        return seen
