"""How fast is the GitHub layer over loopback HTTP (against the test suite's fake GitHub)?

Measures, each repeated ``--repeat`` times (best and worst reported):

* upload: ``ArtifactUploader.upload`` of a results JSON of ``--mib`` MiB (Twirp create,
  Put Block x N + Put Block List, finalize with sha256);
* download: ``download_artifact`` (302 to the blob host, digest check) + ``extract_zip``;
* comment: ``upsert_sticky_comment`` on a PR with ``--comments`` comments (all pages read,
  ours on the first page, so every page is needed).

The fake runs in-process, so figures are an upper bound on the client's own overhead, not
GitHub's latency. Run:  python benchmarks/github_layer.py [--mib 50] [--comments 1000]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from axl_action.github.artifact_upload import ArtifactUploader
from axl_action.github.artifacts import download_artifact
from axl_action.github.client import GitHubClient
from axl_action.github.comments import compose_comment_body, upsert_sticky_comment
from axl_action.github.safezip import ZipLimits, extract_zip
from tests.fakes.github_server import FakeGitHub


def _results_json(mib: int) -> bytes:
    rng = random.Random(1)
    items = []
    size = 0
    i = 0
    while size < mib * 1024 * 1024:
        item = {
            "id": f"case-{i}",
            "output": " ".join(rng.choice(["yes", "no", "maybe", "42"]) for _ in range(40)),
        }
        item["scores"] = {"accuracy": rng.random(), "judge": rng.random()}
        text = json.dumps(item)
        items.append(text)
        size += len(text) + 1
        i += 1
    return ("[" + ",".join(items) + "]").encode()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=50)
    parser.add_argument("--comments", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    data = _results_json(args.mib)
    timings: dict[str, list[float]] = {"upload": [], "download+extract": [], "comment upsert": []}
    with FakeGitHub() as gh:
        repo = gh.add_repo()
        token = gh.add_token()
        client = GitHubClient(gh.api_url, token)
        gh.add_pull(repo, 1, head_sha="a" * 40, base_sha="b" * 40)
        gh.add_comment(
            repo,
            1,
            compose_comment_body("old", suite="s", head_sha="a" * 40),
            login="github-actions[bot]",
            user_type="Bot",
        )
        for i in range(args.comments - 1):
            gh.add_comment(repo, 1, f"comment {i}")
        limits = ZipLimits(max_total_bytes=(args.mib + 10) * 1024 * 1024)
        for n in range(args.repeat):
            run = gh.add_run(repo, head_sha=gh.add_commit(), status="in_progress")
            uploader = ArtifactUploader(gh.results_url, gh.runtime_token(run))
            t0 = time.perf_counter()
            up = uploader.upload("bench", {"results.json": data})
            t1 = time.perf_counter()
            blob = download_artifact(
                client, "octo/evals", up.id, expected_digest=up.digest, max_bytes=limits.max_total_bytes
            )
            files = extract_zip(blob, limits)
            t2 = time.perf_counter()
            assert files["results.json"] == data
            result = upsert_sticky_comment(client, "octo/evals", 1, f"body {n}", suite="s", head_sha="a" * 40)
            t3 = time.perf_counter()
            assert result.action == "updated"
            timings["upload"].append(t1 - t0)
            timings["download+extract"].append(t2 - t1)
            timings["comment upsert"].append(t3 - t2)
        zipped = up.size
    print(
        f"results.json {len(data) / 2**20:.1f} MiB (zip {zipped / 2**20:.1f} MiB); PR with {args.comments} comments"
    )
    for name, values in timings.items():
        print(f"{name:18s} best {min(values):.3f} s  worst {max(values):.3f} s")


if __name__ == "__main__":
    main()
