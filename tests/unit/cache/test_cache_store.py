"""The local directory store: round trip, expiry, damage as a miss, LRU under a cap, failed
writes, single flight, and the nearest recorded request for a miss."""

from __future__ import annotations

import os
import stat
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest

from axl_action.cache import CacheError, DirectoryStore, Served, cache_key, request_record
from axl_action.cache.store import STALE_TMP_SECONDS
from tests.unit.cache.cache_helpers import chat_body, chat_request, reply


class Clock:
    """A settable UNIX clock."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _store(root: Path, **kwargs: object) -> tuple[DirectoryStore, list[str]]:
    warnings: list[str] = []
    return DirectoryStore(root, warn=warnings.append, **kwargs), warnings  # type: ignore[arg-type]


def _put(store: DirectoryStore, **overrides: object) -> str:
    request = chat_request(**overrides)
    key = cache_key(request)
    store.put(key, request_record(request), reply())
    return key


def test_an_entry_round_trips_and_a_missing_key_is_a_miss(tmp_path: Path) -> None:
    store, warnings = _store(tmp_path / "c")
    key = _put(store)
    entry = store.get(key)
    assert entry is not None and entry.key == key
    assert entry.reply.usage == {"inputTokens": 12.0, "outputTokens": 5.0}
    assert entry.reply.cost is not None and entry.reply.cost.usd == pytest.approx(0.0012)
    assert store.get(cache_key(chat_request(body=chat_body(temperature=0.3)))) is None
    stats = store.stats
    assert (stats.hits, stats.misses, stats.stored) == (1, 1, 1)
    assert warnings == []
    assert (
        (tmp_path / "c" / "CACHEDIR.TAG")
        .read_bytes()
        .startswith(b"Signature: 8a477f597d28d172789f06886806bc55")
    )


def test_a_second_store_on_the_same_directory_reads_what_the_first_wrote(tmp_path: Path) -> None:
    first, _ = _store(tmp_path)
    key = _put(first)
    second, _ = _store(tmp_path)
    assert second.get(key) is not None
    assert second.usage()[1] == 1


def test_an_entry_older_than_max_age_is_a_miss_and_is_removed(tmp_path: Path) -> None:
    clock = Clock()
    store, _ = _store(tmp_path, clock=clock, max_age=timedelta(days=1))
    key = _put(store)
    clock.now += 86_400 - 1
    assert store.get(key) is not None
    clock.now += 2
    assert store.get(key) is None
    assert store.stats.expired == 1
    assert not store.path_of(key).exists()


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: data[:-7], id="truncated"),
        pytest.param(lambda data: data[:-3] + bytes([data[-3] ^ 0x01]) + data[-2:], id="one flipped bit"),
        pytest.param(lambda data: b"", id="empty"),
        pytest.param(lambda data: b"not an entry\n{}", id="foreign file"),
    ],
)
def test_a_damaged_entry_is_one_warning_a_miss_and_never_a_wrong_answer(
    tmp_path: Path, damage: object
) -> None:
    store, warnings = _store(tmp_path)
    keys = [_put(store, body=chat_body(seed=seed)) for seed in (1, 2)]
    for key in keys:
        path = store.path_of(key)
        path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    assert [store.get(key) for key in keys] == [None, None]
    assert store.stats.damaged == 2
    assert len(warnings) == 1 and "is damaged" in warnings[0] and "treated as a miss" in warnings[0]
    assert not any(store.path_of(key).exists() for key in keys)


def test_the_entry_of_another_key_is_never_served(tmp_path: Path) -> None:
    store, warnings = _store(tmp_path)
    a = _put(store, body=chat_body(seed=1))
    b = cache_key(chat_request(body=chat_body(seed=2)))
    store.path_of(b).parent.mkdir(parents=True, exist_ok=True)
    store.path_of(b).write_bytes(store.path_of(a).read_bytes())
    assert store.get(b) is None
    assert "another key" in warnings[0]
    assert store.get(a) is not None


def test_the_least_recently_used_entries_go_first_when_the_cap_is_passed(tmp_path: Path) -> None:
    clock = Clock()
    probe, _ = _store(tmp_path / "probe")
    size = probe.path_of(_put(probe)).stat().st_size
    store, _ = _store(tmp_path / "c", clock=clock, max_bytes=size * 5 + size // 2)
    keys = []
    for seed in range(5):
        clock.now += 100
        keys.append(_put(store, body=chat_body(seed=seed)))
    clock.now += 100
    assert store.get(keys[0]) is not None  # the oldest write is now the most recent use
    clock.now += 100
    keys.append(_put(store, body=chat_body(seed=99)))  # over the cap: evict to <= 90 %
    present = [store.path_of(k).exists() for k in keys]
    assert present == [True, False, False, True, True, True]
    total, count = store.usage()
    assert count == 4 and total <= store.max_bytes * 0.9
    assert store.stats.evicted == 2


def test_a_write_that_fails_is_one_warning_and_the_run_goes_on(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root ignores directory permissions")
    store, warnings = _store(tmp_path)
    entries = tmp_path / "entries"
    entries.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        _put(store, body=chat_body(seed=1))
        _put(store, body=chat_body(seed=2))
    finally:
        entries.chmod(stat.S_IRWXU)
    assert store.stats.write_errors == 2 and store.stats.stored == 0
    assert len(warnings) == 1 and "could not write" in warnings[0]


def test_a_full_disk_is_simulated_by_a_file_where_a_directory_should_be(tmp_path: Path) -> None:
    # Works as root too: mkdir of the fan-out directory fails because a file holds its name.
    store, warnings = _store(tmp_path)
    key = cache_key(chat_request())
    (tmp_path / "entries" / key[:2]).write_bytes(b"")
    store.put(key, request_record(chat_request()), reply())
    assert store.get(key) is None
    assert store.stats.write_errors == 1 and "could not write" in warnings[0]


def test_a_directory_that_is_a_file_or_of_a_future_layout_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(CacheError, match="is a file, not a directory"):
        DirectoryStore(tmp_path / "file")
    future = tmp_path / "future"
    future.mkdir()
    (future / "axl-cache.json").write_text('{"format": 9}')
    with pytest.raises(CacheError, match="has layout 9"):
        DirectoryStore(future)
    with pytest.raises(CacheError, match="must be positive"):
        DirectoryStore(tmp_path / "z", max_bytes=0)


def test_a_key_that_is_not_a_key_is_refused_before_touching_the_disk(tmp_path: Path) -> None:
    store, _ = _store(tmp_path)
    with pytest.raises(CacheError, match="is not a cache key"):
        store.get("../../etc/passwd")


def test_stale_temporary_files_of_a_crashed_writer_are_cleaned_by_an_eviction(tmp_path: Path) -> None:
    store, _ = _store(tmp_path)
    stale = tmp_path / "tmp" / "leftover.1.abcd"
    stale.write_bytes(b"x" * 10)
    old = time.time() - STALE_TMP_SECONDS - 5
    os.utime(stale, (old, old))
    fresh = tmp_path / "tmp" / "writing.2.ef01"
    fresh.write_bytes(b"y")
    store.evict()
    assert not stale.exists() and fresh.exists()


def test_single_flight_makes_one_call_for_threads_asking_the_same_key(tmp_path: Path) -> None:
    store, _ = _store(tmp_path)
    request = chat_request()
    key = cache_key(request)
    calls: list[int] = []
    gate = threading.Event()

    def compute() -> tuple[str, object]:
        calls.append(1)
        gate.wait(5)
        return "live", reply()

    served: list[Served[str]] = []
    threads = [
        threading.Thread(
            target=lambda: served.append(store.get_or_compute(key, lambda: request_record(request), compute))
        )
        for _ in range(8)
    ]
    for t in threads:
        t.start()
    time.sleep(0.2)
    gate.set()
    for t in threads:
        t.join(5)
    assert len(calls) == 1
    assert sorted(s.hit for s in served) == [False] + [True] * 7
    assert store.stats.waited >= 1


def test_when_the_leader_fails_the_next_waiter_makes_its_own_call(tmp_path: Path) -> None:
    store, _ = _store(tmp_path)
    request = chat_request()
    key = cache_key(request)
    attempts: list[str] = []

    def failing() -> tuple[str, object]:
        attempts.append("fail")
        raise RuntimeError("HTTP 500")

    with pytest.raises(RuntimeError):
        store.get_or_compute(key, lambda: request_record(request), failing)
    uncacheable = store.get_or_compute(key, lambda: request_record(request), lambda: ("live", None))
    assert uncacheable.entry is None and uncacheable.value == "live" and not uncacheable.hit
    assert store.get(key) is None  # nothing was stored for the failure or the uncacheable reply


def test_the_nearest_recorded_request_names_the_field_that_differs(tmp_path: Path) -> None:
    store, _ = _store(tmp_path)
    for seed in range(30):
        _put(store, body=chat_body(seed=seed))
    missed = chat_request(body=chat_body(seed=7, temperature=0.9))
    nearest = store.nearest(request_record(missed))
    assert nearest is not None
    assert nearest.key == cache_key(chat_request(body=chat_body(seed=7)))
    assert nearest.differences == ["body.temperature"]
    assert "differs at body.temperature" in nearest.describe()


def test_the_nearest_search_survives_a_lost_or_torn_index_log(tmp_path: Path) -> None:
    store, _ = _store(tmp_path)
    for seed in range(5):
        _put(store, body=chat_body(seed=seed))
    log = tmp_path / "index.log"
    data = log.read_bytes()
    log.write_bytes(data[: len(data) - 9])  # a crash mid-append: the last record is torn
    torn, _ = _store(tmp_path)
    found = torn.nearest(request_record(chat_request(body=chat_body(seed=2, max_tokens=5))))
    assert found is not None and found.differences == ["body.max_tokens"]
    log.unlink()
    rebuilt, _ = _store(tmp_path)
    found = rebuilt.nearest(request_record(chat_request(body=chat_body(seed=4, stop=[]))))
    assert found is not None and found.differences == ["body.stop[0]"]
    assert len(rebuilt.request_index()) == 5


def test_an_empty_store_has_no_nearest_request(tmp_path: Path) -> None:
    store, _ = _store(tmp_path)
    assert store.nearest(request_record(chat_request())) is None
