"""Unit and property tests of the operation generators, run by the in-memory executor.

These need no server: ``memory.MemoryContainer`` is a test double of the database only. The
same generators run against the real SDK and the loopback server in the other test modules.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

import pytest
from agentstate_cosmosdb import (
    CosmosConfigurationError,
    CosmosContainerNotFoundError,
    CosmosMissingDocumentError,
    CosmosSchemaError,
)
from agentstate_cosmosdb.documents import reachable, references
from agentstate_cosmosdb.ops import Create, Replace
from agentstate_cosmosdb.schema import (
    INDEXING_POLICY,
    KIND_BLOB,
    KIND_CHECKPOINT,
    KIND_CHUNK,
    KIND_HEAD,
    KIND_VALUES,
    checkpoint_doc_id,
    head_id,
    partition_key,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.conformance.test_utils import (
    generate_checkpoint,
    generate_config,
    generate_metadata,
)

from .histories import Model, histories, play, value
from .memory import Crash, MemoryContainer, memory_saver

EXAMPLES = settings(max_examples=30, deadline=None)


def _latest(saver: Any, store: MemoryContainer, thread: str = "t", ns: str = "") -> Any:
    return store.run(saver._get_tuple_ops(generate_config(thread, checkpoint_ns=ns)))


def _by_id(saver: Any, store: MemoryContainer, model: Model, checkpoint_id: str) -> Any:
    config = generate_config(model.thread, checkpoint_id=checkpoint_id)
    return store.run(saver._get_tuple_ops(config))


def _listed(saver: Any, store: MemoryContainer, thread: str = "t") -> list[Any]:
    return store.stream(saver._list_ops(generate_config(thread)))


def _writes(tup: Any) -> list[tuple[str, str, Any]]:
    return sorted(tup.pending_writes or [], key=lambda w: (w[0], w[1]))


# --------------------------------------------------------------------------------------------
# Round trips
# --------------------------------------------------------------------------------------------


@EXAMPLES
@given(steps=histories)
def test_any_history_reads_back_as_written(steps: list[Any]) -> None:
    """Whatever a history of puts (forks, inherited, big, chunked and empty values) and pending
    writes (regular and special, small and large) stores, every checkpoint reads back with
    exactly its values and its writes; the latest is the newest checkpoint id; list returns
    them all, newest first."""
    saver, store = memory_saver(), MemoryContainer()
    model = play(saver, store, steps)
    if not model.checkpoints:
        return
    for checkpoint in model.checkpoints:
        tup = _by_id(saver, store, model, checkpoint["id"])
        assert tup is not None
        assert tup.checkpoint["channel_values"] == checkpoint["channel_values"]
        assert tup.checkpoint["channel_versions"] == checkpoint["channel_versions"]
        expected = sorted(model.expected_writes(checkpoint["id"]), key=lambda w: (w[0], w[1]))
        assert _writes(tup) == expected
    newest = max(c["id"] for c in model.checkpoints)
    latest = _latest(saver, store)
    assert latest is not None and latest.checkpoint["id"] == newest
    listed = [t.checkpoint["id"] for t in _listed(saver, store)]
    assert listed == sorted((c["id"] for c in model.checkpoints), reverse=True)
    # A fresh process (no head cache) reads the same latest checkpoint.
    again = _latest(memory_saver(), store)
    assert again is not None and again.checkpoint == latest.checkpoint


@EXAMPLES
@given(steps=histories, codec=st.sampled_from(["zlib", "zstd", None]))
def test_every_codec_reads_what_any_other_wrote(steps: list[Any], codec: str | None) -> None:
    """Values are stored with a codec tag per value: a saver with any compression setting reads
    what a saver with another setting wrote, values and writes alike."""
    writer, store = memory_saver(compression=codec), MemoryContainer()
    model = play(writer, store, steps)
    reader = memory_saver(compression="zlib" if codec != "zlib" else None)
    for checkpoint in model.checkpoints:
        tup = _by_id(reader, store, model, checkpoint["id"])
        assert tup is not None and tup.checkpoint["channel_values"] == checkpoint["channel_values"]


def test_compression_shrinks_what_is_stored() -> None:
    """A repetitive message history is stored compressed (smaller than serialized), and an
    opt-out stores it as serialized."""
    history = [
        {"role": "user", "content": f"question {i} about the weather " * 4} for i in range(60)
    ]
    sizes = {}
    for codec in ("zlib", None):
        saver, store = memory_saver(compression=codec), MemoryContainer()
        checkpoint = generate_checkpoint(channel_values={"m": history}, channel_versions={"m": "1"})
        store.run(saver._put_ops(generate_config("t"), checkpoint, generate_metadata(), {"m": "1"}))
        sizes[codec] = sum(len(str(d)) for d in store.docs.values())
    assert sizes["zlib"] * 3 < sizes[None]


# --------------------------------------------------------------------------------------------
# Reachability: the one function every reader and every garbage collection uses
# --------------------------------------------------------------------------------------------


@EXAMPLES
@given(steps=histories, data=st.data())
def test_reachable_keeps_exactly_what_reads_need(steps: list[Any], data: st.DataObject) -> None:
    """For any history and any set of checkpoints to keep (with the head's), reachable() contains
    every document
    whose removal would change or break the read of a kept checkpoint (found the slow, obvious
    way: remove each document alone and read), and no value holder that none of them needs."""
    saver, store = memory_saver(), MemoryContainer()
    model = play(saver, store, steps)
    if not model.checkpoints:
        return
    ids = [c["id"] for c in model.checkpoints]
    keep = set(data.draw(st.lists(st.sampled_from(ids), unique=True, min_size=1)))
    keep.add(max(ids))  # the head's checkpoint: garbage collection always keeps the heads
    kept_ns = {("", cp) for cp in keep}

    def reads(snapshot: dict[Any, Any]) -> list[Any]:
        probe = MemoryContainer(docs=snapshot)
        out = []
        for cp in sorted(keep):
            try:
                tup = _by_id(memory_saver(), probe, model, cp)
                out.append(None if tup is None else (tup.checkpoint, _writes(tup)))
            except CosmosMissingDocumentError:
                out.append("missing")
        return out

    baseline = reads(store.docs)
    slow: set[str] = set()
    for key in list(store.docs):
        without = {k: v for k, v in store.docs.items() if k != key}
        if reads(without) != baseline:
            slow.add(key[1])
    fast = reachable(list(store.docs.values()), kept_ns)
    assert slow <= fast, f"reachable() misses documents reads need: {slow - fast}"
    holders = {KIND_BLOB, KIND_VALUES, KIND_CHECKPOINT, KIND_CHUNK}
    extra = {
        d["id"]
        for d in store.docs.values()
        if d["id"] in fast - slow and d["kind"] in holders and not d["id"].startswith("v.")
    }
    assert not extra, f"reachable() keeps value holders nothing needs: {extra}"


def test_a_head_is_a_pointer_with_small_values_only() -> None:
    """A head copies its checkpoint's own new values only when they are small: a small value
    is read from the head alone; a larger one stays in the checkpoint document, which the
    head's references then name."""
    saver, store = memory_saver(compression=None), MemoryContainer()
    small = generate_checkpoint(channel_values={"a": ["x"]}, channel_versions={"a": "1"})
    store.run(saver._put_ops(generate_config("t"), small, generate_metadata(), {"a": "1"}))
    head = store.docs[(partition_key("t"), head_id(""))]
    assert "a" in head["values"] and references(head) == []
    large = generate_checkpoint(channel_values={"a": ["y" * 40_000]}, channel_versions={"a": "2"})
    config = generate_config("t", checkpoint_id=small["id"])
    store.run(saver._put_ops(config, large, generate_metadata(), {"a": "2"}))
    head = store.docs[(partition_key("t"), head_id(""))]
    assert "values" not in head
    assert references(head) == [checkpoint_doc_id("", large["id"])]
    assert _latest(memory_saver(), store).checkpoint["channel_values"] == {"a": ["y" * 40_000]}


# --------------------------------------------------------------------------------------------
# Crash safety
# --------------------------------------------------------------------------------------------


def _assert_valid(
    saver: Any, store: MemoryContainer, thread: str = "t", *, strict: bool = True
) -> list[Any]:
    """Every listed checkpoint reads whole; a thread with listed checkpoints has a latest.

    ``strict``: and a head document, before any reader had the chance to repair one.
    """
    if strict:
        namespaces = {
            d["ns"]
            for d in store.docs.values()
            if d["kind"] == KIND_CHECKPOINT and d["thread_id"] == thread
        }
        for ns in namespaces:
            assert (partition_key(thread), head_id(ns)) in store.docs, "listed, no head"
    listed = _listed(saver, store, thread)
    if listed:
        assert _latest(saver, store, thread) is not None, "checkpoints listed, no head"
    return listed


MAINTENANCE = ["delete_for_runs", "prune", "delete_thread", "copy_thread"]


@settings(max_examples=15, deadline=None)
@given(steps=histories, op=st.sampled_from(MAINTENANCE))
def test_interrupted_maintenance_never_leaves_a_broken_thread(steps: list[Any], op: str) -> None:
    """delete_for_runs, prune, delete_thread and copy_thread stopped after *each* of their
    requests in turn (a dying process) leave every thread valid: each listed checkpoint reads
    whole and a namespace with listed checkpoints has its head. Run again to the end, each
    gives the result it gives uninterrupted."""
    saver, store = memory_saver(), MemoryContainer()
    model = play(saver, store, steps)
    if not model.checkpoints:
        return

    def ops(s: Any) -> Any:
        if op == "delete_for_runs":
            return s._delete_for_runs_ops(["run-1"])
        if op == "prune":
            return s._prune_ops(["t"], "keep_latest")
        if op == "delete_thread":
            return s._delete_thread_ops("t")
        return s._copy_thread_ops("t", "copy")

    reference = MemoryContainer(docs=copy.deepcopy(store.docs))
    reference.run(ops(memory_saver()))
    expected = {t: [x.checkpoint for x in _listed(saver, reference, t)] for t in ("t", "copy")}
    for stop in range(reference.operations):
        trial = MemoryContainer(docs=copy.deepcopy(store.docs), fail_after=stop)
        with contextlib.suppress(Crash):
            trial.run(ops(memory_saver()))
        trial.fail_after = None
        for thread in ("t", "copy"):
            _assert_valid(memory_saver(), trial, thread)
        trial.run(ops(memory_saver()))
        for thread in ("t", "copy"):
            assert [x.checkpoint for x in _listed(memory_saver(), trial, thread)] == expected[
                thread
            ]


@EXAMPLES
@given(stop=st.integers(0, 8), size=st.sampled_from(["small", "big", "huge"]))
def test_a_first_put_cut_short_is_invisible_or_repaired(stop: int, size: str) -> None:
    """A thread's first put stopped after any number of requests leaves either nothing visible
    or a checkpoint with its head. Only when the service refuses even the two-document batch
    as too large (here: a batch limit of 0) can a checkpoint be left without a head, and then
    the first reader repairs it."""
    saver, store = memory_saver(), MemoryContainer(batch_limit=0 if size == "small" else 2**21)
    checkpoint = generate_checkpoint(
        channel_values={"a": value(1, size)}, channel_versions={"a": "1"}
    )
    store.fail_after = stop
    with contextlib.suppress(Crash):
        store.run(saver._put_ops(generate_config("t"), checkpoint, generate_metadata(), {"a": "1"}))
    store.fail_after = None
    listed = _assert_valid(memory_saver(), store, strict=size != "small")
    if listed:
        latest = _latest(memory_saver(), store)
        assert latest.checkpoint["channel_values"] == checkpoint["channel_values"]
        assert (partition_key("t"), head_id("")) in store.docs  # repaired


def test_a_headless_thread_is_repaired_never_backwards() -> None:
    """A reader that finds checkpoints but no head creates the head for the newest one; if a
    head appeared meanwhile it is kept (create-if-absent, never a blind overwrite)."""
    saver, store = memory_saver(), MemoryContainer()
    model = play(saver, store, [("put", 0, {"a": "small"}, "r"), ("put", 0, {"a": "small"}, "r")])
    del store.docs[(partition_key("t"), head_id(""))]
    latest = _latest(memory_saver(), store)
    assert latest.checkpoint["id"] == model.checkpoints[-1]["id"]
    assert store.docs[(partition_key("t"), head_id(""))]["checkpoint_id"] == latest.checkpoint["id"]


# --------------------------------------------------------------------------------------------
# Writes, batches, keep-N, ttl
# --------------------------------------------------------------------------------------------


def test_a_fan_out_writes_one_document_per_task_with_plain_creates() -> None:
    """100 tasks of one step record their writes with one request each, a transactional batch
    (the writes mark, a create of the task's own document, a read of the head): no point
    read, no replace, no compare-and-swap."""
    saver, store = memory_saver(), MemoryContainer()
    model = play(saver, store, [("put", 0, {"a": "small"}, "r")])
    store.counts.clear()
    for i in range(100):
        store.run(saver._put_writes_ops(model.configs[0], [("out", f"v{i}")], f"task-{i}", "p"))
    assert store.counts == {"Batch": 100}
    tup = _by_id(saver, store, model, model.checkpoints[0]["id"])
    assert len(tup.pending_writes) == 100


def test_a_repeated_task_keeps_its_first_writes_and_adds_new_indexes() -> None:
    """A second put_writes of the same task keeps the values it wrote first (as PostgresSaver)
    and adds the indexes it lacked; special channels replace."""
    saver, store = memory_saver(), MemoryContainer()
    model = play(saver, store, [("put", 0, {"a": "small"}, "r")])
    cfg = model.configs[0]
    store.run(saver._put_writes_ops(cfg, [("x", 1)], "task", "p"))
    store.run(saver._put_writes_ops(cfg, [("x", 2), ("y", 3)], "task", "p"))
    from langgraph.checkpoint.base import ERROR

    store.run(saver._put_writes_ops(cfg, [(ERROR, "e1")], "task", "p"))
    store.run(saver._put_writes_ops(cfg, [(ERROR, "e2")], "task", "p"))
    tup = _by_id(saver, store, model, model.checkpoints[0]["id"])
    assert sorted(w[1:] for w in tup.pending_writes) == [(ERROR, "e2"), ("x", 1), ("y", 3)]


def test_a_batch_refused_as_too_large_is_written_the_ordered_way() -> None:
    """When the service refuses the transactional batch as too large (413), nothing of it was
    applied, and the same checkpoint is stored with ordered writes (values, checkpoint, then
    the head by compare-and-swap)."""
    saver, store = memory_saver(), MemoryContainer()
    model = play(saver, store, [("put", 0, {"a": "small"}, "r")])
    store.batch_limit = 100
    store.counts.clear()
    parent = model.configs[0]
    checkpoint = generate_checkpoint(
        channel_values={"a": ["new"] * 50}, channel_versions={"a": "2"}
    )
    store.run(saver._put_ops(parent, checkpoint, generate_metadata(), {"a": "2"}))
    assert store.counts.get("Batch") == 1 and store.counts.get("Replace") == 1
    latest = _latest(memory_saver(), store)
    assert latest.checkpoint["channel_values"] == {"a": ["new"] * 50}


@EXAMPLES
@given(n=st.integers(1, 4), puts=st.integers(1, 12), big=st.booleans())
def test_keep_checkpoints_keeps_exactly_the_newest_n(n: int, puts: int, big: bool) -> None:
    """With keep_checkpoints=N, after every put the thread lists exactly its newest N
    checkpoints, each reads whole (inherited values included), and nothing else is stored but
    what they reach and the head."""
    saver, store = memory_saver(keep_checkpoints=n), MemoryContainer()
    steps: list[Any] = [("put", 0, {"a": "small", "b": "big" if big else "small"}, "r")]
    steps += [("put", 0, {"a": "small"}, "r")] * (puts - 1)

    def check(model: Model) -> None:
        listed = _listed(saver, store)
        assert [t.checkpoint["id"] for t in listed] == [
            c["id"] for c in reversed(model.checkpoints[-n:])
        ]
        for tup in listed:
            assert set(tup.checkpoint["channel_values"]) == {"a", "b"}

    play(saver, store, steps, on_put=check)
    index = list(store.docs.values())
    keep = {("", t.checkpoint["id"]) for t in _listed(saver, store)}
    assert {d["id"] for d in index} == reachable(index, keep)


def test_ttl_refresh_keeps_a_live_thread_whole() -> None:
    """With ttl=100 s, a thread put every 40 s keeps a value it wrote once, long after 100 s
    (the value is written again once its holder is older than half the ttl); the head expires
    no later than what it references; a thread left alone expires as a whole."""
    saver = memory_saver(ttl=100)
    store = MemoryContainer(default_ttl=-1)
    steps: list[Any] = [("put", 0, {"a": "small", "b": "big"}, "r")]
    model = play(saver, store, steps)
    big = model.checkpoints[0]["channel_values"]["b"]
    for _ in range(10):
        store.now += 40
        model = play(saver, store, [("put", 0, {"a": "small"}, "r")], model=model)
        latest = _latest(saver, store)
        assert latest is not None and latest.checkpoint["channel_values"]["b"] == big
        head = store.docs[(partition_key("t"), head_id(""))]
        for ref in references(head):
            holder = store.docs[(partition_key("t"), ref)]
            assert holder["_ts"] + holder.get("ttl", 100) >= head["_ts"] + head["ttl"]
    store.now += 101
    assert _latest(memory_saver(ttl=100), store) is None
    assert _listed(memory_saver(ttl=100), store) == []


def test_without_refresh_an_old_value_would_have_expired() -> None:
    """The control for the test above: the first checkpoint's own holder is gone after 400 s,
    so only the refresh kept the latest checkpoint whole."""
    saver = memory_saver(ttl=100)
    store = MemoryContainer(default_ttl=-1)
    model = play(saver, store, [("put", 0, {"a": "small", "b": "big"}, "r")])
    first_doc = (partition_key("t"), checkpoint_doc_id("", model.checkpoints[0]["id"]))
    for _ in range(10):
        store.now += 40
        model = play(saver, store, [("put", 0, {"a": "small"}, "r")], model=model)
    assert first_doc not in store.docs


# --------------------------------------------------------------------------------------------
# Missing documents, schema versions, setup
# --------------------------------------------------------------------------------------------


def test_a_missing_chunk_is_a_missing_document_error() -> None:
    """A chunk of a value over 1 MB that is gone raises CosmosMissingDocumentError naming it
    (not the 413 'item too large' class)."""
    saver, store = memory_saver(compression=None), MemoryContainer()
    model = play(saver, store, [("put", 0, {"b": "huge"}, "r")])
    chunk = next(k for k, d in store.docs.items() if d["kind"] == KIND_CHUNK)
    del store.docs[chunk]
    with pytest.raises(CosmosMissingDocumentError) as info:
        _by_id(saver, store, model, model.checkpoints[0]["id"])
    assert info.value.document_id == chunk[1]


def test_a_newer_layout_is_refused() -> None:
    """A document written by a newer layout (schema above SCHEMA_VERSION) is refused with
    CosmosSchemaError instead of being misread."""
    saver, store = memory_saver(), MemoryContainer()
    model = play(saver, store, [("put", 0, {"a": "small"}, "r")])
    for doc in store.docs.values():
        if doc["kind"] in (KIND_CHECKPOINT, KIND_HEAD):
            doc["schema"] = 99
    with pytest.raises(CosmosSchemaError, match="layout 99"):
        _by_id(saver, store, model, model.checkpoints[0]["id"])


def test_setup_turns_ttl_on_when_allowed_and_says_what_to_set_otherwise() -> None:
    """ttl= on a container whose time-to-live is off: setup turns it on (defaultTtl -1) when the
    saver may change the container; with create_if_missing=False it raises a
    CosmosConfigurationError that says what to set."""
    store = MemoryContainer(default_ttl=None)
    store.run(memory_saver(ttl=60)._connect_ops())
    assert store.default_ttl == -1
    store = MemoryContainer(default_ttl=None)
    with pytest.raises(CosmosConfigurationError, match="Time to Live"):
        store.run(memory_saver(ttl=60, create_if_missing=False)._connect_ops())
    assert store.default_ttl is None


def test_setup_creates_a_missing_container_with_the_narrow_index() -> None:
    """A missing container is created (time-to-live on when ttl= is given) unless
    create_if_missing=False, which raises saying what to create."""
    store = MemoryContainer(exists=False)
    with pytest.raises(CosmosContainerNotFoundError, match="partition key path '/pk'"):
        store.run(memory_saver(create_if_missing=False)._connect_ops())
    store.run(memory_saver(ttl=5)._connect_ops())
    assert store.exists and store.default_ttl == -1
    paths = {p["path"] for p in INDEXING_POLICY["includedPaths"]}
    assert {"/kind/?", "/thread_id/?", "/ns/?", "/checkpoint_id/?", "/metadata/*"} <= paths
    assert {"path": "/*"} in INDEXING_POLICY["excludedPaths"]


def test_the_head_moves_forward_only() -> None:
    """A put of an older checkpoint id after a newer one (a slow concurrent writer) stores the
    checkpoint but leaves the head on the newer one."""
    saver, store = memory_saver(), MemoryContainer()
    older, newer = str(uuid6(clock_seq=1)), str(uuid6(clock_seq=2))
    for cp_id in (newer, older):
        checkpoint = generate_checkpoint(
            checkpoint_id=cp_id, channel_values={"a": [cp_id]}, channel_versions={"a": cp_id}
        )
        store.run(
            memory_saver()._put_ops(
                generate_config("t"), checkpoint, generate_metadata(), {"a": cp_id}
            )
        )
    assert _latest(saver, store).checkpoint["id"] == newer
    assert len(_listed(saver, store)) == 2


def test_list_streams_page_by_page() -> None:
    """list(None) sends one page query per page: taking the first checkpoint of a container
    with 100 of them costs one checkpoint query, not a load of the container."""
    saver, store = memory_saver(), MemoryContainer()
    for thread in range(10):
        play(saver, store, [("put", 0, {"a": "small"}, "r")] * 10, thread=f"t{thread}", seed=thread)
    store.queries.clear()
    first = next(store.iterate(saver._list_ops(None)))
    assert first is not None
    pages = [q for q in store.queries if "FROM c WHERE c.kind = 'checkpoint'" in q]
    assert len(pages) == 1  # one page of checkpoints (plus the writes of its threads)
    assert len(store.stream(saver._list_ops(None))) == 100


def test_ops_written_are_never_raw_replaces_of_the_head() -> None:
    """Every head update is conditional: the generators never upsert a head blindly."""
    saver, store = memory_saver(), MemoryContainer()
    seen: list[Any] = []
    ops = saver._put_ops(
        generate_config("t"),
        generate_checkpoint(channel_values={"a": [1]}, channel_versions={"a": "1"}),
        generate_metadata(),
        {"a": "1"},
    )
    step = next(ops)
    try:
        while True:
            seen.append(step)
            step = ops.send(store._step(step))
    except StopIteration:
        pass
    flat = [o for s in seen for o in (s.ops if hasattr(s, "ops") else [s])]
    heads = [o for o in flat if hasattr(o, "doc") and o.doc.get("kind") == KIND_HEAD]
    assert heads and all(isinstance(o, (Create, Replace)) for o in heads)


def test_the_drivers_turn_only_expected_refusals_into_results() -> None:
    """Both drivers map an SDK exception through ``_refused``: the refusals a generator waits
    for become results (a missing item, a lost compare-and-swap, a refused batch), any other
    status is raised as a CosmosSaverError naming the action, with the SDK error as its cause."""
    from agentstate_cosmosdb import (
        CosmosDBSaver,
        CosmosOperationError,
        CosmosThrottledError,
        CosmosUnavailableError,
    )
    from agentstate_cosmosdb import ops as o
    from azure.cosmos import exceptions as sdk

    saver = CosmosDBSaver("db", "c", endpoint="https://localhost:1", credential="a2V5")
    doc = {"id": "d", "pk": "p"}
    read, create = o.Read("d", "p"), o.Create(doc)
    replace, batch = o.Replace(doc, etag="e"), o.Batch("p", (o.Upsert(doc),))

    def http(status: int) -> sdk.CosmosHttpResponseError:
        return sdk.CosmosHttpResponseError(status_code=status, message=f"HTTP {status}")

    assert (
        saver._refused(
            read, sdk.CosmosResourceNotFoundError(status_code=404, message="gone"), "read"
        )
        is None
    )
    assert saver._refused(create, http(409), "create") is o.Outcome.CONFLICT
    assert saver._refused(replace, http(412), "swap") is o.Outcome.PRECONDITION_FAILED
    assert saver._refused(replace, http(404), "swap") is o.Outcome.PRECONDITION_FAILED
    assert saver._refused(o.Delete("d", "p"), http(404), "delete") is False
    assert saver._refused(batch, http(413), "batch") is o.Outcome.TOO_LARGE
    in_batch = sdk.CosmosBatchOperationError(
        error_index=0, headers={}, status_code=409, message="taken", operation_responses=[]
    )
    assert saver._refused(batch, in_batch, "batch") is o.Outcome.CONFLICT
    assert saver._refused(o.CreateDatabase(), http(403), "setup") is o.Outcome.FORBIDDEN

    with pytest.raises(CosmosOperationError, match="HTTP 400 while trying to store") as info:
        saver._refused(create, http(400), "store")
    assert isinstance(info.value.__cause__, sdk.CosmosHttpResponseError)
    with pytest.raises(CosmosContainerNotFoundError, match="db/c no longer exists"):
        saver._refused(create, http(404), "store")  # a write's 404: the container went away
    for status in (408, 503):
        with pytest.raises(CosmosUnavailableError, match=f"HTTP {status}"):
            saver._refused(read, http(status), "read")
    with pytest.raises(CosmosThrottledError):
        saver._refused(read, http(429), "read")
    with pytest.raises(CosmosOperationError):
        saver._refused(o.Upsert(doc), http(409), "upsert")  # an upsert never conflicts


# --------------------------------------------------------------------------------------------
# Pending writes: split under the item limit, repeated calls leave nothing behind
# --------------------------------------------------------------------------------------------


def test_a_task_with_ten_thousand_writes_is_split_under_the_item_limit() -> None:
    """A task writing 12,000 small values (each entry mostly field names and quoting): every
    document stays under 1 MB of JSON (the service refuses items over 2 MB), and the writes read
    back whole, in order."""
    import json

    saver, store = memory_saver(), MemoryContainer()
    model = play(saver, store, [("put", 0, {"a": "small"}, "r")])
    writes = [("__pregel_tasks", {"n": i}) for i in range(12_000)]
    store.run(saver._put_writes_ops(model.configs[0], writes, "fan", "~__pregel_pull, fan"))
    sizes = [len(json.dumps(d)) for d in store.docs.values() if d["kind"].startswith("writes")]
    assert len(sizes) >= 3 and max(sizes) < 1_050_000
    tup = _by_id(saver, store, model, model.checkpoints[0]["id"])
    assert [w[2] for w in tup.pending_writes] == [v for _, v in writes]


@pytest.mark.parametrize("size", ["small", "big"])
def test_a_task_writing_again_leaves_no_document_behind(size: str) -> None:
    """The same task's writes stored twice (a migration run again, a retried task), with values
    large enough for documents of their own: the first writes stay, and the second call leaves
    no document behind; special writes (an interrupt) replace the earlier one in place."""
    from langgraph.checkpoint.base import INTERRUPT

    saver, store = memory_saver(), MemoryContainer()
    model = play(saver, store, [("put", 0, {"a": "small"}, "r")])
    cfg = model.configs[0]
    first, second = value(1, size), value(2, size)
    store.run(saver._put_writes_ops(cfg, [("x", first)], "task", "p"))
    store.run(saver._put_writes_ops(cfg, [(INTERRUPT, first)], "asker", "p"))
    before = sorted(store.docs)
    store.run(saver._put_writes_ops(cfg, [("x", second)], "task", "p"))
    assert sorted(store.docs) == before
    store.run(saver._put_writes_ops(cfg, [(INTERRUPT, second)], "asker", "p"))
    assert sorted(store.docs) == before
    tup = _by_id(saver, store, model, model.checkpoints[0]["id"])
    assert sorted((w[0], w[1]) for w in tup.pending_writes) == [("asker", INTERRUPT), ("task", "x")]
    got = {w[0]: w[2] for w in tup.pending_writes}
    assert got == {"task": first, "asker": second}


@settings(max_examples=15, deadline=None)
@given(steps=histories, keep=st.integers(min_value=1, max_value=3), big_value=st.booleans())
def test_a_put_with_retention_cut_short_leaves_a_valid_thread(
    steps: list[Any], keep: int, big_value: bool
) -> None:
    """A put with keep_checkpoints (its batch, then its clean-up) stopped after each of its
    requests in turn (a dying process) leaves a valid thread; the put run again completes, and
    the thread then lists what an uninterrupted put leaves."""
    saver, store = memory_saver(keep_checkpoints=keep), MemoryContainer()
    model = play(saver, store, steps)
    if not model.checkpoints:
        return
    parent = model.configs[-1]
    serial = 10_000 + len(model.checkpoints)
    values = dict(model.checkpoints[-1]["channel_values"])
    values["a"] = value(serial, "big" if big_value else "small")
    versions = dict(model.checkpoints[-1]["channel_versions"])
    versions["a"] = f"{serial:08}.9"
    checkpoint = generate_checkpoint(
        checkpoint_id=str(uuid6(clock_seq=serial)), channel_values=values, channel_versions=versions
    )

    def put(s: Any) -> Any:
        return s._put_ops(parent, checkpoint, generate_metadata(), {"a": versions["a"]})

    reference = MemoryContainer(docs=copy.deepcopy(store.docs))
    reference.run(put(memory_saver(keep_checkpoints=keep)))
    expected = [x.checkpoint for x in _listed(saver, reference)]
    for stop in range(reference.operations):
        trial = MemoryContainer(docs=copy.deepcopy(store.docs), fail_after=stop)
        with contextlib.suppress(Crash):
            trial.run(put(memory_saver(keep_checkpoints=keep)))
        trial.fail_after = None
        _assert_valid(memory_saver(), trial, "t")
        trial.run(put(memory_saver(keep_checkpoints=keep)))
        assert [x.checkpoint for x in _listed(memory_saver(), trial)] == expected
