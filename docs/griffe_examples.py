"""A griffe extension for the API reference: read Google-style ``Example:`` sections (the
singular, which griffe treats as a plain admonition) as ``Examples:``, so the doctest lines
render as code instead of as Markdown, where ``[m["content"] ...]`` reads as a link."""

from __future__ import annotations

import re
from typing import Any

from griffe import Extension, Object

_SINGULAR = re.compile(r"^(\s*)Example:\s*$", re.M)


class ExampleSections(Extension):
    """Rename ``Example:`` section headers to ``Examples:`` in every loaded docstring."""

    def on_instance(self, *, obj: Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _SINGULAR.sub(r"\1Examples:", obj.docstring.value)
