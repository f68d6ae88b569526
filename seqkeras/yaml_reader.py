"""Spec YAML → plain data, refusing YAML that is not a spec's kind of data.

PyYAML's safe loader already refuses tags that would build objects. This
reader also refuses, as a `SpecError` naming the file and line, what the safe
loader accepts but no spec means, and what would crash or hang later:

- a path that is not a regular file (a FIFO would block the open, /dev/zero
  never ends), or a file over `MAX_BYTES`;
- bytes that are not UTF-8 (a UTF-8 byte-order mark is fine);
- a key written twice in one mapping (PyYAML keeps the last one silently);
- nesting deeper than `MAX_DEPTH` (PyYAML's composer recurses: RecursionError);
- more than `MAX_VALUES` values once aliases are expanded ("billion laughs":
  a few lines of `&a [*b, *b, ...]` stand for billions of values that
  validation and hashing would walk). Counted while composing, before
  anything is expanded.

It also reads `1e-3` as the number YAML 1.2 says it is (PyYAML, following
YAML 1.1, reads it as text, which strict number fields would refuse).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from seqkeras.errors import SpecError, shown
from seqkeras.user_files import open_regular_file, size_in_words

MAX_BYTES = 1 << 20  # specs are a few KiB; a 5 GB file must not be read into memory
MAX_DEPTH = 100  # the deepest real spec nests about 5 levels
MAX_VALUES = 200_000  # values after alias expansion; the largest real spec has a few hundred

# UTF-32 before UTF-16: the UTF-32-LE mark begins with the UTF-16-LE one.
BYTE_ORDER_MARKS = [
    (b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"),
]
MERGE_TAG = "tag:yaml.org,2002:merge"


def load_spec_yaml(path: Path) -> Any:
    """The data of the spec file at `path`."""
    return parse_yaml(read_spec_text(path), file=str(path))


def read_spec_text(path: Path) -> str:
    try:
        file = open_regular_file(path, limit=MAX_BYTES)
    except SpecError as error:
        raise SpecError(f"the spec file {error.message}", file=str(path)) from None
    with file:
        data = file.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise SpecError(f"the spec file is larger than {size_in_words(MAX_BYTES)}", file=str(path))
    return decode_utf8(data, source=str(path))


def decode_utf8(data: bytes, *, source: str) -> str:
    for mark, encoding in BYTE_ORDER_MARKS:
        if data.startswith(mark):
            raise SpecError(f"the file is {encoding} (it starts with a {encoding} byte-order mark); "
                            "save it as UTF-8", file=source)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise SpecError(f"line {line}: byte 0x{data[error.start]:02x} is not UTF-8; the file must be UTF-8 text",
                        file=source) from None
    if "\0" in text:  # UTF-16 without a byte-order mark decodes as UTF-8 with a NUL in every other byte
        line = text.count("\n", 0, text.index("\0")) + 1
        raise SpecError(f"line {line}: a NUL byte; the file must be UTF-8 text (is it UTF-16?)", file=source)
    return text


def parse_yaml(text: str, *, file: str | None = None, path: str | None = None) -> Any:
    """The data of one YAML document, or a `SpecError` placed at `file` (a spec) or `path` (`--set KEY`)."""
    try:
        return yaml.load(text, Loader=_SpecLoader)  # a SafeLoader subclass: no tag builds objects
    except SpecError as error:
        message = error.message
    except yaml.MarkedYAMLError as error:
        what = ", ".join(part for part in (error.context, error.problem) if part)  # "expected a single document..."
        message = f"{_line(error.problem_mark or error.context_mark)}malformed YAML: {_cut(what)}"
    except yaml.YAMLError as error:
        message = f"malformed YAML: {_cut(str(error))}"
    except RecursionError:  # a backstop: MAX_DEPTH keeps the composer's recursion far from the limit
        message = f"the YAML is nested deeper than {MAX_DEPTH} levels"
    raise SpecError(message, file=file, path=path)


def _line(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""


def _cut(text: str | None, limit: int = 300) -> str:
    text = text or ""
    return text if len(text) <= limit else f"{text[:limit]}…"


class _SpecLoader(yaml.SafeLoader):
    """SafeLoader that bounds depth and expanded size and refuses duplicate keys."""

    def __init__(self, stream: str):
        super().__init__(stream)
        self._depth = 0
        # id(node) → (values, depth) of the node with its aliases expanded; nodes stay
        # alive in the tree being composed, so their ids are not reused meanwhile.
        self._extent: dict[int, tuple[int, int]] = {}

    def compose_node(self, parent: Any, index: Any) -> Any:
        is_alias = self.check_event(yaml.AliasEvent)
        mark = self.peek_event().start_mark
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise self._refuse(mark, f"nested deeper than {MAX_DEPTH} levels")
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if is_alias:
            if id(node) not in self._extent:  # the anchor's node is still being composed
                raise self._refuse(mark, "an alias used inside its own anchor (a structure that contains itself)")
            return node
        children = self._children(node)
        values = 1 + sum(self._extent[id(child)][0] for child in children)
        depth = 1 + max((self._extent[id(child)][1] for child in children), default=0)
        if values > MAX_VALUES:
            raise self._refuse(mark, f"more than {MAX_VALUES:,} values once aliases (*name) are expanded")
        if depth > MAX_DEPTH:
            raise self._refuse(mark, f"nested deeper than {MAX_DEPTH} levels once aliases (*name) are expanded")
        self._extent[id(node)] = (values, depth)
        if isinstance(node, yaml.MappingNode):
            self._refuse_duplicate_keys(node)
        return node

    @staticmethod
    def _children(node: Any) -> list[Any]:
        if isinstance(node, yaml.SequenceNode):
            return node.value
        if isinstance(node, yaml.MappingNode):
            return [part for pair in node.value for part in pair]
        return []

    def _refuse_duplicate_keys(self, node: yaml.MappingNode) -> None:
        # Checked on the keys as written, before merge keys (<<) are flattened:
        # a key overriding a merged one is what merging is for.
        first_line: dict[Any, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == MERGE_TAG:
                continue
            key = self.construct_object(key_node)  # `1` and `0x1` are the same key
            line = key_node.start_mark.line + 1
            if key in first_line:
                raise self._refuse(key_node.start_mark, f"the key {shown(key)} appears twice in one mapping "
                                                       f"(first on line {first_line[key]}); keep one")
            first_line[key] = line

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        # A scalar the resolver accepted can still fail to convert (an int of 5,000
        # digits, 2024-13-45 as a date): say which value, where.
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as error:
            value = shown(node.value) if isinstance(node, yaml.ScalarNode) else "this value"
            raise self._refuse(node.start_mark, f"cannot read {value}: {_cut(str(error), 120)}") from None

    @staticmethod
    def _refuse(mark: Any, message: str) -> SpecError:
        return SpecError(f"{_line(mark)}{message}")


# YAML 1.2 floats without a dot (1e-3, 5E+2); YAML 1.1, and so PyYAML, reads them as text.
_SpecLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)
