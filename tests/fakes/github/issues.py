"""REST: issue (pull request) comments: list, create, get, update, delete."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.fakes import github_objects as obj
from tests.fakes.github.records import FakeComment, FakeToken
from tests.fakes.github.seeding import Seeding
from tests.fakes.github.wire import FORBIDDEN_INTEGRATION, _error, _json, _Response


class IssuesApi(Seeding):
    """``/repos/{owner}/{repo}/issues/{number}/comments`` and ``.../issues/comments/{id}``."""

    def _r_issue_comments(
        self, method: str, m: re.Match[str], query: dict[str, list[str]], token: FakeToken, body: bytes
    ) -> _Response:
        repo = self._repo(m)
        number = int(m["num"])
        if repo is None or (repo.full_name, number) not in self.pulls:
            return _error(404, "Not Found")
        if method == "GET":
            comments = self.comments_on(repo, number)
            chunk, link = self._paginate(comments, query, f"/repos/{repo.full_name}/issues/{number}/comments")
            return _json(200, [self._comment_obj(c) for c in chunk], link)
        if method == "POST":
            if not token.write:
                return _error(
                    403,
                    FORBIDDEN_INTEGRATION,
                    "https://docs.github.com/rest/issues/comments#create-an-issue-comment",
                )
            text, err = _comment_body(body)
            if err is not None:
                return err
            comment = self.add_comment(repo, number, text, login=token.login, user_type=token.user_type)
            payload = self._comment_obj(comment)
            return _json(201, payload, {"location": payload["url"]})
        return _error(404, "Not Found")

    def _r_comment(
        self, method: str, m: re.Match[str], query: Any, token: FakeToken, body: bytes
    ) -> _Response:
        repo = self._repo(m)
        comment = self.comments.get(int(m["id"]))
        if repo is None or comment is None or comment.repo is not repo:
            return _error(404, "Not Found")
        if method == "GET":
            return _json(200, self._comment_obj(comment))
        if not token.write:
            return _error(
                403,
                FORBIDDEN_INTEGRATION,
                "https://docs.github.com/rest/issues/comments#update-an-issue-comment",
            )
        if method == "PATCH":
            text, err = _comment_body(body)
            if err is not None:
                return err
            comment.body = text
            comment.updated_at = self.now()
            return _json(200, self._comment_obj(comment))
        if method == "DELETE":
            del self.comments[comment.id]
            return _Response(204)
        return _error(404, "Not Found")

    def _comment_obj(self, c: FakeComment) -> dict[str, Any]:
        repo_api = f"{self.api_url}/repos/{c.repo.full_name}"
        token = next((t for t in self.tokens.values() if t.login == c.login), None)
        return {
            "id": c.id,
            "node_id": f"IC_{c.id}",
            "url": f"{repo_api}/issues/comments/{c.id}",
            "html_url": f"https://github.com/{c.repo.full_name}/pull/{c.issue_number}#issuecomment-{c.id}",
            "issue_url": f"{repo_api}/issues/{c.issue_number}",
            "body": c.body,
            "user": obj.user(self.api_url, c.login, token.user_id if token else 7, c.user_type),
            "created_at": obj.iso(c.created_at),
            "updated_at": obj.iso(c.updated_at),
            "author_association": "NONE" if c.user_type == "Bot" else "MEMBER",
            "minimized": {"reason": c.minimized_reason} if c.minimized_reason else None,
        }


def _comment_body(body: bytes) -> tuple[str, _Response | None]:
    try:
        payload = json.loads(body)
    except ValueError:
        return "", _error(400, "Problems parsing JSON")
    if not isinstance(payload, dict) or not isinstance(payload.get("body"), str):
        return "", _json(
            422,
            {
                "message": 'Invalid request.\n\n"body" wasn\'t supplied.',
                "documentation_url": "https://docs.github.com/rest/issues/comments",
                "status": "422",
            },
        )
    text: str = payload["body"]
    if len(text) > 65536:
        return "", _json(
            422,
            {
                "message": "Validation Failed",
                "errors": [
                    {
                        "resource": "IssueComment",
                        "code": "custom",
                        "field": "body",
                        "message": "Body is too long (maximum is 65536 characters)",
                    }
                ],
                "documentation_url": "https://docs.github.com/rest/issues/comments#create-an-issue-comment",
                "status": "422",
            },
        )
    return text, None
