"""Duck-typed message objects: any object with a ``type`` or ``role`` attribute, or whose
class name is a known message class (``HumanMessage``, ``AIMessage``, ...).

Read attribute by attribute as :mod:`.chat` reads dicts (``content``, ``id``,
``tool_calls``, ``tool_call_id``, ``function_call``, ``name``, ``additional_kwargs``), with
the Chat family's pairing and validity rules; a list may mix them with Chat dicts and
LangChain messages. Rewritten copies are made with ``model_copy`` when the object has it,
else ``copy.copy`` and a new ``content`` attribute. The reducer cannot build a summary
block of an unknown class: a list of such objects needs ``summary_message_factory``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import AI, FUNCTION, HUMAN, SYSTEM, TOOL, describe, module_of
from .chat import EXPECTED, ChatFormat, normalise, raw_role

#: Class names read as a role when an object has neither ``type`` nor ``role``.
CLASS_NAME_ROLES: Mapping[str, str] = {
    "humanmessage": HUMAN,
    "aimessage": AI,
    "agentmessage": AI,
    "systemmessage": SYSTEM,
    "toolmessage": TOOL,
    "functionmessage": FUNCTION,
    "humanmessagechunk": HUMAN,
    "aimessagechunk": AI,
    "systemmessagechunk": SYSTEM,
    "toolmessagechunk": TOOL,
    "functionmessagechunk": FUNCTION,
}


#: SDK modules whose objects with a ``type`` but no ``role`` are parts of a message, not
#: messages (their messages have a role, or are Responses items read by that format).
_SDK_MODULES = ("anthropic.", "openai.")


class DuckFormat(ChatFormat):
    """Objects read by their attributes (see the module docstring)."""

    name = "duck"

    def role(self, msg: Any) -> str:
        raw = raw_role(msg)
        if raw is not None:
            if getattr(msg, "role", None) is None and module_of(msg).startswith(_SDK_MODULES):
                # An SDK object with a type and no role that is no Responses item: a content
                # block or tool definition (messages.extend(response.content)), which as a
                # message of role "text" or "tool_use" would be kept forever.
                raise TypeError(
                    f"{describe(msg)}: a content block or definition from the "
                    f"{module_of(msg).split('.')[0]} SDK, not a message ({EXPECTED}); "
                    "append the message that holds it, such as "
                    "{'role': 'assistant', 'content': response.content}"
                )
            return normalise(raw)
        by_class = CLASS_NAME_ROLES.get(type(msg).__name__.lower())
        if by_class is not None:
            return by_class
        raise TypeError(f"{describe(msg)}: {EXPECTED}")


DUCK_FORMAT = DuckFormat()
