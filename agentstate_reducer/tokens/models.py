"""What a chat model says about its own budget: its window and the tokenizer it counts with.

:func:`model_window` reads the input window (and the longest reply) from a LangChain chat
model's profile (``model.profile``, langchain-core 1.x: ``max_input_tokens`` and
``max_output_tokens``). :func:`model_token_counter` names the counter that counts the way
the model's provider does, where one works offline:

* OpenAI models (LangChain's ``ChatOpenAI``/``AzureChatOpenAI``, or a model name such as
  ``"gpt-4o"``): their tiktoken encoding (``"o200k_base"`` for GPT-4o, GPT-4.1, GPT-4.5,
  GPT-5, o1, o3, o4 and gpt-oss; ``"cl100k_base"`` for GPT-4 and GPT-3.5), loaded from the
  files the ``[tokens]`` extra ships: the provider's own tokenizer, on the text, with our
  message framing. Not ``ChatOpenAI.get_num_tokens_from_messages``: it asks tiktoken for
  the encoding by model name, which downloads it on first use.
* Every other provider: None, our estimate. Anthropic's and Google's
  ``get_num_tokens_from_messages`` call the provider's token-counting endpoint (network,
  a request per count), and LangChain's default one loads a GPT-2 tokenizer from the
  Hugging Face hub: neither is run. Calibration to the counts the responses report
  (``ReducerConfig(calibrate=True)``) is what brings those models' counts close.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["model_name", "model_token_counter", "model_window"]

#: Model name prefixes of the OpenAI models tokenised with o200k_base.
_O200K_PREFIXES = (
    "gpt-4o",
    "chatgpt-4o",
    "gpt-4.1",
    "gpt-4.5",
    "gpt-5",
    "o1",
    "o3",
    "o4",
    "gpt-oss",
)
#: Those tokenised with cl100k_base.
_CL100K_PREFIXES = ("gpt-4", "gpt-3.5", "gpt-35", "text-embedding-3", "text-embedding-ada")

#: LangChain chat model classes whose provider is OpenAI, by module.
_OPENAI_MODULES = ("langchain_openai.",)


def model_name(model: Any) -> str | None:
    """The model's name: ``model`` itself when it is a string, else the ``model_name``,
    ``model`` or ``deployment_name`` a LangChain chat model carries; None when none is a
    non-empty string."""
    if isinstance(model, str):
        return model or None
    for attribute in ("model_name", "model", "deployment_name"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return None


def _is_openai(model: Any, name: str | None) -> bool:
    if isinstance(model, str):
        return name is not None and _encoding_of(name) is not None
    module = getattr(type(model), "__module__", "") or ""
    return module.startswith(_OPENAI_MODULES)


def _encoding_of(name: str) -> str | None:
    lowered = name.lower().rsplit("/", 1)[-1]  # "openai/gpt-4o" as routers spell it
    if lowered.startswith(_O200K_PREFIXES):
        return "o200k_base"
    if lowered.startswith(_CL100K_PREFIXES):
        return "cl100k_base"
    return None


def model_token_counter(model: Any) -> str | None:
    """The ``token_counter`` that counts as ``model``'s provider does offline, or None for
    our estimate (see the module docstring).

    An OpenAI model of a name we do not know gets ``"o200k_base"``, the encoding of every
    OpenAI model since GPT-4o. None too when the encoding's files are not installed (the
    ``[tokens]`` extra): then the estimate, and calibration, count.
    """
    name = model_name(model)
    if not _is_openai(model, name):
        return None
    encoding = (_encoding_of(name) if name else None) or "o200k_base"
    from .encodings import tiktoken_encoding

    try:
        tiktoken_encoding(encoding)
    except ImportError:
        return None
    return encoding


def model_window(model: Any) -> tuple[int, int | None]:
    """``(max_input_tokens, max_output_tokens)`` from a LangChain chat model's profile; the
    second is None when the profile does not say.

    Raises:
        ValueError: The model has no profile, or its profile has no ``max_input_tokens``
            (or not a positive int): the message names the field and says to pass
            ``context_window=``.
    """
    profile = getattr(model, "profile", None) if not isinstance(model, str) else None
    described = f"{type(model).__name__} {model_name(model) or ''}".strip()
    if not isinstance(profile, Mapping):
        raise ValueError(
            f"{described} has no model profile to read max_input_tokens from "
            "(model.profile is not set); pass ReducerConfig.for_model(model, "
            "context_window=N) with the model's input window in tokens"
        )
    window = profile.get("max_input_tokens")
    if type(window) is not int or window < 1:
        raise ValueError(
            f"{described}: model.profile['max_input_tokens'] is {window!r}, not a positive "
            "int; pass ReducerConfig.for_model(model, context_window=N) with the model's "
            "input window in tokens"
        )
    output = profile.get("max_output_tokens")
    return window, output if type(output) is int and output > 0 else None
