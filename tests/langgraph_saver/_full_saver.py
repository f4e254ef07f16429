"""An InMemorySaver with all eight conformance capabilities, for the delegation tests.

None of the savers installed here implements ``copy_thread`` or ``delete_for_runs``
(PostgreSQL has ``prune`` only), so this subclass adds the three extended capabilities on
InMemorySaver's own storage. It is a working saver (it passes LangGraph's conformance
suite on its own, which the tests check), so the wrapper can be shown to pass all eight.
"""

from __future__ import annotations

from collections.abc import Sequence

from langgraph.checkpoint.memory import InMemorySaver
from typing_extensions import override


class FullInMemorySaver(InMemorySaver):
    """InMemorySaver plus copy_thread, delete_for_runs and prune (sync and async)."""

    @override
    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        for ns, checkpoints in list(self.storage.get(source_thread_id, {}).items()):
            self.storage[target_thread_id][ns].update(checkpoints)
        for (thread, ns, checkpoint_id), writes in list(self.writes.items()):
            if thread == source_thread_id:
                self.writes[(target_thread_id, ns, checkpoint_id)] = dict(writes)
        for (thread, ns, channel, version), blob in list(self.blobs.items()):
            if thread == source_thread_id:
                self.blobs[(target_thread_id, ns, channel, version)] = blob

    @override
    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self.copy_thread(source_thread_id, target_thread_id)

    @override
    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        doomed = set(run_ids)
        for thread, namespaces in list(self.storage.items()):
            for ns, checkpoints in list(namespaces.items()):
                for checkpoint_id, (_, metadata, _) in list(checkpoints.items()):
                    if self.serde.loads_typed(metadata).get("run_id") in doomed:
                        del checkpoints[checkpoint_id]
                        self.writes.pop((thread, ns, checkpoint_id), None)

    @override
    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        self.delete_for_runs(run_ids)

    @override
    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"unknown prune strategy {strategy!r}")
        for thread in thread_ids:
            if strategy == "delete":
                self.delete_thread(thread)
                continue
            for ns, checkpoints in list(self.storage.get(thread, {}).items()):
                latest = max(checkpoints, default=None)
                for checkpoint_id in [c for c in checkpoints if c != latest]:
                    del checkpoints[checkpoint_id]
                    self.writes.pop((thread, ns, checkpoint_id), None)

    @override
    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self.prune(thread_ids, strategy=strategy)
