"""Reads without the store's lock: searches and entry reads in some threads while others write
or rebuild the index see the old or the new state, never an error, and a search after a write
sees it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

import kb.store
from kb.store import Store, StoreError


@pytest.fixture
def store(settings):
    s = Store(settings)
    yield s
    s.close()


def test_a_search_after_a_write_sees_it_from_another_thread(store, make_entry):
    store.search("anything")  # the searcher is open before the writes
    for i in range(5):
        store.add(make_entry(f"seen-{i}", symptom=f"seenmarker{i} appears"), author="w")
        found: list[list[str]] = []

        def look(i: int = i, found: list[list[str]] = found) -> None:
            found.append([h.id for h in store.search(f"seenmarker{i}").results])

        t = threading.Thread(target=look)
        t.start()
        t.join()
        assert found == [[f"seen-{i}"]]
    store.delete("seen-0", author="w")
    assert store.search("seenmarker0").total == 0
    assert store.get("seen-1").id == "seen-1"


def test_reads_while_another_thread_writes_see_old_or_new_never_an_error(store, make_entry):
    store.add(make_entry("flip", title="Version zero", symptom="flipmarker zero"), author="w")
    stop = threading.Event()
    errors: list[BaseException] = []
    titles: set[str] = set()

    def reader() -> None:
        try:
            while not stop.is_set():
                hits = store.search("flipmarker").results
                assert [h.id for h in hits] == ["flip"]
                titles.add(hits[0].title)
                titles.add(store.get("flip").title)
                store.data_version()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        for i in range(1, 15):
            entry = store.get("flip").model_copy(update={"title": f"Version {i}"})
            store.update(entry, author="w")
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert not errors, errors[0]
    assert titles <= {f"Version {i}" for i in range(15)} | {"Version zero"}
    assert store.search("flipmarker").results[0].title == "Version 14"


def test_searches_during_a_rebuild_never_fail_nor_come_back_empty(store, make_entry):
    for i in range(20):
        store.add(make_entry(f"rb-{i}", symptom="rebuildmarker in every entry"), author="w")
    stop = threading.Event()
    errors: list[BaseException] = []
    totals: list[int] = []

    def reader() -> None:
        try:
            while not stop.is_set():
                totals.append(store.search("rebuildmarker").total)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for _ in range(4):
            store.reindex()
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert not errors, errors[0]
    assert totals and set(totals) == {20}


@contextmanager
def search_in_progress(store, monkeypatch, query: str) -> Iterator[None]:
    """A search of `query` running in another thread, held inside the index until the block
    ends."""
    searching, release = threading.Event(), threading.Event()
    real = kb.store.SearchIndex.search

    def slow_search(self, *args, **kwargs):
        searching.set()
        release.wait(30)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(kb.store.SearchIndex, "search", slow_search)
    t = threading.Thread(target=store.search, args=(query,))
    t.start()
    try:
        assert searching.wait(30)
        yield
    finally:
        release.set()
        t.join(timeout=60)


def test_entry_reads_do_not_wait_for_a_search(store, make_entry, monkeypatch):
    store.add(make_entry("quick", symptom="quickmarker"), author="w")
    with search_in_progress(store, monkeypatch, "quickmarker"):
        started = time.monotonic()
        assert store.get("quick").id == "quick"
        assert store.data_version() > 0
        assert [e.id for e in store.list_entries()] == ["quick"]
        assert time.monotonic() - started < 5


def test_writes_do_not_wait_for_a_search(store, make_entry, monkeypatch):
    with search_in_progress(store, monkeypatch, "anything"):
        done = threading.Event()
        w = threading.Thread(
            target=lambda: (store.add(make_entry("during"), author="w"), done.set())
        )
        w.start()
        assert done.wait(20), "a write waited for a search in progress"
        w.join()
    assert store.get("during").id == "during"


def test_a_write_inside_bulk_can_read_while_searches_wait_for_it(store, make_entry):
    """The bulk import holds the store's lock; searches that need the index to catch up wait
    for it without holding a pooled connection, so the importer can still read."""
    store.add(make_entry("base", symptom="bulkmarker"), author="w")
    results: list[int] = []
    with store.bulk():
        store.add(make_entry("in-bulk", symptom="bulkmarker too"), author="w")
        threads = [
            threading.Thread(target=lambda: results.append(store.search("bulkmarker").total))
            for _ in range(kb.store.READ_CONNECTIONS + 2)
        ]
        for t in threads:
            t.start()
        time.sleep(0.2)
        for _ in range(3):  # reads by the lock holder while the searches wait
            assert store.get("in-bulk").id == "in-bulk"
            assert store.count() == 2
    for t in threads:
        t.join(timeout=60)
    assert results == [2] * len(threads)


def test_reads_on_a_closed_store_say_so(settings):
    store = Store(settings)
    store.close()
    for read in (store.data_version, store.count, lambda: store.search("x")):
        with pytest.raises(StoreError, match="closed"):
            read()


def _wait_for(cond) -> None:
    deadline = time.monotonic() + 10
    while not cond():
        assert time.monotonic() < deadline
        time.sleep(0.001)


def test_the_pool_serves_waiters_first_come_first_served_and_wakes_them_on_close():
    pool = kb.store._Pool(object, lambda _: None, 1)
    order: list[str] = []
    errors: list[str] = []

    def borrower(name: str) -> None:
        try:
            with pool.borrow():
                order.append(name)
        except StoreError as exc:
            errors.append(f"{name}: {exc}")

    with pool.borrow():
        threads = []
        for n, name in enumerate(("b", "c", "d")):
            t = threading.Thread(target=borrower, args=(name,))
            t.start()
            _wait_for(lambda n=n: len(pool._waiting) == n + 1)
            threads.append(t)
    for t in threads:
        t.join(timeout=10)
    assert order == ["b", "c", "d"]

    held = pool.borrow()
    held.__enter__()
    t = threading.Thread(target=borrower, args=("late",))
    t.start()
    _wait_for(lambda: len(pool._waiting) == 1)
    pool.close()
    t.join(timeout=10)
    assert errors == ["late: the store is closed"]
    held.__exit__(None, None, None)
