"""The action's step outputs: one model, written once, always with every key.

Every output is written on every run (empty when it does not apply), so ``steps.x.outputs.y``
never silently reads as missing in a user's later step.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from axl_action.action.ports import Commands

OutcomeVerdict = Literal["pass", "fail", "error"]


class ActionOutputs(BaseModel):
    """Values of the step outputs declared in action.yml."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    verdict: OutcomeVerdict = "error"
    """pass, fail (a gate failed) or error (no results)."""

    mode: str = ""
    """The mode that ran."""

    regressions: int = 0
    """Item-level regressions against the baseline."""

    improvements: int = 0
    """Item-level improvements against the baseline."""

    cost: float | None = None
    """Known cost of this run in USD."""

    cost_delta: float | None = None
    """Cost change per run against the baseline in USD, unrounded (the JSON's delta is rounded to 3 decimals)."""

    cost_certified: bool = False
    """Whether the cost delta is certified."""

    item_error_rate: float | None = None
    """Share of items whose workflow errored."""

    results_path: str = ""
    """Workspace-relative path of a copy of the results JSON (``action.workspace_files``)."""

    report_path: str = ""
    """Workspace-relative path of the HTML report."""

    comment_url: str = ""
    """URL of the sticky comment."""

    baseline_run_id: str = ""
    """Run id of the baseline."""

    baseline_sha: str = ""
    """Commit SHA of the baseline."""

    def as_outputs(self) -> dict[str, str]:
        """``{output-name: text}`` for ``$GITHUB_OUTPUT``, every key present."""
        out: dict[str, str] = {}
        for name in type(self).model_fields:
            out[name.replace("_", "-")] = _text(getattr(self, name))
        return out

    def publish(self, commands: Commands) -> None:
        """Write every step output, in action.yml order."""
        for name, value in self.as_outputs().items():
            commands.set_output(name, value)


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return ""
        text = repr(round(value, 6) + 0.0)  # + 0.0 turns -0.0 into 0.0
        return text[:-2] if text.endswith(".0") else text
    return str(value)


OUTPUT_NAMES: tuple[str, ...] = tuple(n.replace("_", "-") for n in ActionOutputs.model_fields)
"""Every output the action declares, in action.yml order."""
