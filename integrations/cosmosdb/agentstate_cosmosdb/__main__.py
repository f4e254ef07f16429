"""``python -m agentstate_cosmosdb migrate ...``: see :mod:`agentstate_cosmosdb.migrate`."""

import sys

from agentstate_cosmosdb.migrate import main

sys.exit(main())
