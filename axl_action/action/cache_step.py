"""The response cache between workflow runs: restored from the GitHub Actions cache before the
evals run, saved after them (docs/cache.md, "In the action").

* **Keys.** Each run saves under ``axl-eval-cache-<suite>-<run id>-<attempt>`` (entries are
  immutable, so every run writes a new one) and restores the newest entry under the prefix
  ``axl-eval-cache-<suite>-``. The service scopes both: a push to the baseline branch reads and
  writes that branch's entries; a pull request reads its own, then its base branch's and the
  default branch's, and writes only its own. A fork's pull request therefore never writes where
  the base branch reads.
* **Modes.** ``read`` and ``replay`` restore only; ``write`` saves only (a fresh recording);
  ``on`` does both.
* **Nothing fails the run.** A missing or expired entry is a cold start with a notice; a
  service error is a warning, and the evals run without the restored entries.
"""

from __future__ import annotations

from pathlib import Path

from axl_action.action.job import describe
from axl_action.action.ports import CacheService, Commands
from axl_action.action.settings import ActionSettings
from axl_action.cache import DirectoryStore
from axl_action.cache.archive import pack, unpack
from axl_action.errors import AxlError

VERSION = "axl-eval-response-cache-1"
"""The service's ``version`` of our entries: an archive layout change gets a new one."""
MAX_ARCHIVE_BYTES = 2 * 1024**3
"""The largest archive restored (the service's own limit is 10 GB per repository)."""
MAX_PACKED_BYTES = 1024**3
"""At most this much of the store (most recently used first) is saved."""


def prefix_of(settings: ActionSettings) -> str:
    """The restore prefix of a suite's entries."""
    return f"axl-eval-cache-{settings.suite}-"


def restore_response_cache(
    service: CacheService | None, settings: ActionSettings, directory: Path, key: str, commands: Commands
) -> None:
    """Fill ``directory`` from the newest saved entry of this suite the job may read."""
    if settings.cache in ("off", "write"):
        return
    if service is None:
        commands.notice(
            f"cache: {settings.cache}: the Actions cache service is not available here, so the response cache "
            "starts cold.",
            title="Response cache",
        )
        return
    try:
        found = service.restore(key, [prefix_of(settings)], VERSION, limit=MAX_ARCHIVE_BYTES)
    except AxlError as err:
        commands.warning(
            f"The response cache could not be restored ({describe(err)}); it starts cold.",
            title="Response cache",
        )
        return
    if found is None:
        commands.notice(
            f"No saved response cache for suite {settings.suite!r} in the scopes this run may read (none yet, or "
            "expired after 7 days unused): it starts cold.",
            title="Response cache",
        )
        return
    done = unpack(DirectoryStore(directory), found.data)
    skipped = f"; {done.skipped} damaged or foreign member(s) skipped" if done.skipped else ""
    commands.echo(f"Response cache: restored {done.restored} entries from {found.key!r}{skipped}.")


def save_response_cache(
    service: CacheService | None, settings: ActionSettings, directory: Path, key: str, commands: Commands
) -> None:
    """Save ``directory`` as a new entry in this job's scope (``write`` and ``on``)."""
    if settings.cache not in ("write", "on") or service is None or not directory.is_dir():
        return
    try:
        data, count = pack(DirectoryStore(directory), max_bytes=MAX_PACKED_BYTES)
        entry = service.save(key, VERSION, data)
    except (AxlError, OSError) as err:
        commands.warning(f"The response cache could not be saved ({describe(err)}).", title="Response cache")
        return
    if entry is None:
        commands.echo(f"Response cache: {key!r} is already saved (a re-run of this attempt).")
        return
    commands.echo(f"Response cache: saved {count} entries ({len(data):,} bytes) as {key!r}.")


__all__ = ["VERSION", "prefix_of", "restore_response_cache", "save_response_cache"]
