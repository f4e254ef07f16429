"""Setup: check (and create, when missing and allowed) the database and container, and turn
time-to-live on for ``ttl=``.
"""

from __future__ import annotations

from agentstate_cosmosdb._state import SaverState, backoff
from agentstate_cosmosdb.errors import CosmosConfigurationError, CosmosContainerNotFoundError
from agentstate_cosmosdb.ops import (
    CreateContainer,
    CreateDatabase,
    Document,
    Ops,
    Outcome,
    ReadContainer,
    ReplaceContainer,
    Sleep,
    control,
)
from agentstate_cosmosdb.schema import INDEXING_POLICY, PARTITION_KEY_PATH
from agentstate_cosmosdb.settings import missing_container_message, wrong_partition_key_message


class SetupOps(SaverState):
    """The generators of ``setup``."""

    def _connect_ops(self) -> Ops[None]:
        """Check (and create, when missing and allowed) the database and container.

        Raises:
            CosmosContainerNotFoundError: Missing and not created (not allowed, or refused).
            CosmosConfigurationError: Wrong partition key, or ``ttl=`` with time-to-live off
                and no right to turn it on.
        """
        s = self._settings
        props: Document | None = yield from control(ReadContainer())
        if props is None:
            if not s.create_if_missing:
                raise CosmosContainerNotFoundError(
                    missing_container_message(s, "create_if_missing=False"), status_code=404
                )
            # "If not exists" is a read then a create: savers starting together may race and
            # the loser sees 409 Conflict; the resource exists then, so try again.
            for attempt in range(4):
                created = yield from control(CreateDatabase())
                if created is Outcome.CONFLICT:
                    yield Sleep(backoff(attempt))
                    continue
                if created is Outcome.FORBIDDEN:
                    raise CosmosContainerNotFoundError(
                        missing_container_message(s, "the credential may not create databases"),
                        status_code=403,
                    )
                created = yield from control(
                    CreateContainer(
                        PARTITION_KEY_PATH,
                        default_ttl=-1 if self.ttl is not None else None,
                        indexing_policy=INDEXING_POLICY,
                    )
                )
                if created is Outcome.FORBIDDEN:
                    raise CosmosContainerNotFoundError(
                        missing_container_message(s, "the credential may not create containers"),
                        status_code=403,
                    )
                if created is Outcome.CONFLICT:
                    yield Sleep(backoff(attempt))
                    continue
                break
            props = yield from control(ReadContainer())
            if props is None:
                raise CosmosContainerNotFoundError(
                    missing_container_message(s, "still missing after creating it"),
                    status_code=404,
                )
        paths = (props.get("partitionKey") or {}).get("paths")
        if paths != [PARTITION_KEY_PATH]:
            raise CosmosConfigurationError(wrong_partition_key_message(s, paths))
        if self.ttl is not None and props.get("defaultTtl") is None:
            yield from self._enable_ttl_ops(props)

    def _enable_ttl_ops(self, props: Document) -> Ops[None]:
        s = self._settings
        fix = (
            f"turn time-to-live on for container {s.container_name!r} (Azure portal: Settings > "
            "Time to Live > On (no default); CLI: az cosmosdb sql container update ... --ttl -1)"
        )
        if not s.create_if_missing:
            raise CosmosConfigurationError(
                f"ttl={self.ttl} has no effect: the container's time-to-live is off, so the "
                f"service never expires items. {fix}, or let the saver do it "
                "(create_if_missing=True with an account key)."
            )
        replaced = yield from control(
            ReplaceContainer(
                PARTITION_KEY_PATH, default_ttl=-1, indexing_policy=props.get("indexingPolicy")
            )
        )
        if replaced is Outcome.FORBIDDEN:
            raise CosmosConfigurationError(
                f"ttl={self.ttl} has no effect: the container's time-to-live is off and the "
                f"credential may not change it. {fix}."
            )
