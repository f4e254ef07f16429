"""Hypothesis strategies for Cosmos thread histories, and a model of what they should store.

A history is a list of steps: a ``put`` of a checkpoint (built on the newest checkpoint or on
an earlier one, a fork; each channel changed or inherited; values small, big enough for a
blob document, or big enough to be chunked; some channels with a version and no value) or a
``writes`` of one task's pending writes (small or large values, regular or special channels).
:func:`play` runs a history through the operation generators and returns the model: every
checkpoint as put, and the pending writes each should have (PostgresSaver's rules: the first
regular write of a task and index stays, a special one replaces).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st
from langgraph.checkpoint.base import ERROR, INTERRUPT, WRITES_IDX_MAP, Checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.conformance.test_utils import (
    generate_checkpoint,
    generate_config,
    generate_metadata,
)

from .memory import MemoryContainer

CHANNELS = ("a", "b", "c", "d")
SIZES = ("small", "big", "huge", "empty")


def value(seed: int, size: str) -> Any:
    """A deterministic value: small (a list), big (300 KB, incompressible), huge (1.1 MB)."""
    if size == "small":
        return ["v", seed, "x" * (seed % 50)]
    rng = random.Random(seed)
    n = 300_000 if size == "big" else 1_100_000
    return {"blob": rng.randbytes(n), "seed": seed}


put_steps = st.tuples(
    st.just("put"),
    st.integers(min_value=0, max_value=3),  # 0: on the newest, k: fork from the k-th back
    st.dictionaries(st.sampled_from(CHANNELS), st.sampled_from(SIZES), max_size=4),
    st.sampled_from(["run-1", "run-2", "run-3"]),
)
write_steps = st.tuples(
    st.just("writes"),
    st.integers(min_value=0, max_value=3),  # which checkpoint, counted back from the newest
    st.sampled_from(["t1", "t2", "t3"]),
    st.lists(st.sampled_from(["small", "big"]), min_size=1, max_size=3),
    st.booleans(),  # special channel (error / interrupt) instead of regular ones
)
histories = st.lists(st.one_of(put_steps, put_steps, write_steps), min_size=1, max_size=8)


@dataclass
class Model:
    """What the history stored, checkpoint by checkpoint."""

    thread: str
    checkpoints: list[Checkpoint] = field(default_factory=list)
    configs: list[dict[str, Any]] = field(default_factory=list)
    run_of: dict[str, str] = field(default_factory=dict)
    writes: dict[str, dict[tuple[str, int], tuple[str, str, Any]]] = field(default_factory=dict)

    def expected_writes(self, checkpoint_id: str) -> list[tuple[str, str, Any]]:
        slots = self.writes.get(checkpoint_id, {})
        return [slots[k] for k in sorted(slots)]


def play(
    saver: Any,
    store: MemoryContainer,
    steps: list[Any],
    thread: str = "t",
    seed: int = 0,
    model: Model | None = None,
    on_put: Any = None,
) -> Model:
    """Run ``steps`` through ``saver``'s generators on ``store``; return the model.

    ``model`` continues an earlier history; ``on_put(model)`` runs after each put.
    """
    model = model or Model(thread)
    serial = seed * 1000 + len(model.checkpoints) * 7
    versions: dict[str, int] = {}
    for cp in model.checkpoints:
        for channel, ver in cp["channel_versions"].items():
            versions[channel] = max(versions.get(channel, 0), int(str(ver).split(".")[0]))
    for step in steps:
        serial += 1
        if step[0] == "put":
            _, back, changes, run_id = step
            if not model.checkpoints and not changes:
                changes = {"a": "small"}
            parent_index = max(0, len(model.checkpoints) - 1 - back) if model.checkpoints else -1
            parent = model.checkpoints[parent_index] if parent_index >= 0 else None
            values = dict(parent["channel_values"]) if parent else {}
            chan_versions = dict(parent["channel_versions"]) if parent else {}
            new_versions: dict[str, str] = {}
            for channel, size in changes.items():
                versions[channel] = versions.get(channel, 0) + 1
                ver = f"{versions[channel]:08}.{serial}"
                chan_versions[channel] = ver
                new_versions[channel] = ver
                if size == "empty":
                    values.pop(channel, None)
                else:
                    values[channel] = value(serial * 10 + CHANNELS.index(channel), size)
            checkpoint = generate_checkpoint(
                checkpoint_id=str(uuid6(clock_seq=serial)),
                channel_values=values,
                channel_versions=chan_versions,
            )
            config = model.configs[parent_index] if parent_index >= 0 else generate_config(thread)
            stored = store.run(
                saver._put_ops(config, checkpoint, generate_metadata(run_id=run_id), new_versions)
            )
            model.checkpoints.append(checkpoint)
            model.configs.append(stored)
            model.run_of[checkpoint["id"]] = run_id
            if on_put is not None:
                on_put(model)
        elif model.checkpoints:
            _, back, task, sizes, special = step
            index = max(0, len(model.checkpoints) - 1 - back)
            target = model.configs[index]
            if special:
                writes = [
                    (ERROR if i % 2 == 0 else INTERRUPT, value(serial + i, s))
                    for i, s in enumerate(sizes[:2])
                ]
                writes = list({ch: (ch, v) for ch, v in writes}.values())
            else:
                writes = [(f"out{i}", value(serial + i, s)) for i, s in enumerate(sizes)]
            store.run(saver._put_writes_ops(target, writes, task, f"path-{task}"))
            slots = model.writes.setdefault(model.checkpoints[index]["id"], {})
            is_special = all(ch in WRITES_IDX_MAP for ch, _ in writes)
            for i, (ch, v) in enumerate(writes):
                idx = WRITES_IDX_MAP.get(ch, i)
                if is_special or (task, idx) not in slots:
                    slots[(task, idx)] = (task, ch, v)
    return model
