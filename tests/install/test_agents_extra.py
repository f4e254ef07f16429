"""On a real install of ``agentstate-reducer[langgraph]`` (from the built wheel, no
``langchain``), the agent helpers say to install the ``[agents]`` extra and keep the
original error as the cause; the rest of the LangGraph support works."""

from __future__ import annotations

import json

from tests.install.conftest import Dist, MakeVenv, clean_env, run

_PROBE = """
import json, sys
try:
    exec(sys.argv[1])
except ImportError as error:
    cause = error.__cause__
    print(json.dumps([str(error), type(cause).__name__, getattr(cause, "name", None)]))
else:
    print(json.dumps(None))
"""


def test_agent_helpers_on_a_langgraph_only_install_name_the_agents_extra(
    dist: Dist, make_venv: MakeVenv
) -> None:
    venv = make_venv(
        "langgraph-no-agents", [f"agentstate-reducer[langgraph] @ {dist.core_wheel.as_uri()}"]
    )
    assert "langchain" not in venv.distributions()
    for statement in (
        "import agentstate_reducer.langgraph.agents",
        "from agentstate_reducer.langgraph import ReducerMiddleware",
    ):
        proc = run([venv.python, "-c", _PROBE, statement], env=clean_env())
        message, cause, name = json.loads(proc.stdout.strip().splitlines()[-1])
        assert 'pip install "agentstate-reducer[agents]"' in message, message
        assert "needs langchain>=" in message and "which is not installed" in message
        assert (cause, name) == ("ModuleNotFoundError", "langchain"), statement
    proc = run(
        [
            venv.python,
            "-c",
            _PROBE,
            "from agentstate_reducer.langgraph import ReducingCheckpointSaver",
        ],
        env=clean_env(),
    )
    assert json.loads(proc.stdout.strip().splitlines()[-1]) is None
