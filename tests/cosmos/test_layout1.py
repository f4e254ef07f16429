"""Documents of storage layout 1 (this package before the per-task writes) still read: a
thread written by the layout-1 saver, taken from the repository's history, reads the same
through the current saver."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest
from agentstate_cosmosdb import CosmosDBSaver

from .conftest import DATABASE, CosmosTestServer, new_container, saver_kwargs

pytestmark = pytest.mark.cosmos

LAYOUT1_COMMIT = "0dad27f"  # the last commit with layout 1
ROOT = Path(__file__).resolve().parents[2]

WRITER = r"""
import json, os, sys
from agentstate_cosmosdb import CosmosDBSaver
from langgraph.checkpoint.conformance import test_utils as u
out = {}
with CosmosDBSaver("@DB@", "@CONTAINER@", endpoint=os.environ["E"], credential=os.environ["K"],
                   connection_verify=os.environ["CA"]) as saver:
    parent = u.generate_config("layout1")
    for i in range(4):
        values = {"small": [i], "big": ["x%d" % i * 200_000] if i % 2 == 0 else ["kept"], "n": i}
        versions = {"small": str(i + 1), "big": str(i // 2 + 1), "n": str(i + 1)}
        cp = u.generate_checkpoint(channel_values=values, channel_versions=versions)
        new = {"small": str(i + 1), "n": str(i + 1)}
        if i % 2 == 0:
            new["big"] = str(i // 2 + 1)
        parent = saver.put(parent, cp, u.generate_metadata(step=i), new)
        saver.put_writes(parent, [("out", "w%d" % i), ("large", "y" * 50_000)], "task-%d" % i)
    for tup in saver.list(u.generate_config("layout1")):
        out[tup.config["configurable"]["checkpoint_id"]] = [
            repr(sorted(tup.checkpoint["channel_values"].items())),
            repr(sorted(tup.pending_writes or [])),
        ]
print(json.dumps(out))
"""


def _layout1_package(tmp_path: Path) -> Path:
    proc = subprocess.run(
        ["git", "archive", LAYOUT1_COMMIT, "integrations/cosmosdb/agentstate_cosmosdb"],
        cwd=ROOT,
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        pytest.skip(f"the layout-1 code is not in this checkout's history: {proc.stderr[:200]!r}")
    with tarfile.open(fileobj=BytesIO(proc.stdout)) as archive:
        archive.extractall(tmp_path, filter="data")
    return tmp_path / "integrations" / "cosmosdb"


def test_layout1_documents_read_the_same(server: CosmosTestServer, tmp_path: Path) -> None:
    """Checkpoints, inherited and chunked values, and pending writes (inline and large)
    stored by the layout-1 saver read back identically through the current saver."""
    package = _layout1_package(tmp_path)
    container = new_container()
    script = WRITER.replace("@DB@", DATABASE).replace("@CONTAINER@", container)
    env = {
        **os.environ,
        "PYTHONPATH": str(package),
        "E": server.endpoint,
        "K": server.key,
        "CA": str(server.ca_file),
    }
    proc = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    expected: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(expected) == 4
    with CosmosDBSaver(DATABASE, container, **saver_kwargs(server)) as saver:
        got = {
            t.config["configurable"]["checkpoint_id"]: [
                repr(sorted(t.checkpoint["channel_values"].items())),
                repr(sorted(t.pending_writes or [])),
            ]
            for t in saver.list({"configurable": {"thread_id": "layout1"}})
        }
        assert got == expected
        latest = saver.get_tuple({"configurable": {"thread_id": "layout1"}})
        assert latest is not None and max(expected) == latest.checkpoint["id"]
