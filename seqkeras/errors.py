"""The one exception type for user mistakes.

Everything a user can get wrong (a spec, a command-line value, a data file)
raises `SpecError`; the command line prints its message and exits with status 2
instead of a traceback. Bugs in seqkeras itself stay ordinary exceptions.
The helpers here word such errors the same way everywhere: close matches,
allowed choices, a received value shown at a bounded length (why a file a user
named cannot be read is `seqkeras.user_files`).

`translate_validation_error` is the one translator of a pydantic validation
error into such a line, for a spec and for every file the suite reads back
(preprocessing.json, model.ngram.json, a saved experiment's tables and claims) or
value a user passes (a decoder, a length): pydantic knows where a value was
wrong; users need the dotted key path, the value they wrote, what is allowed, and
a did-you-mean. It walks the schema along the error's location to find the
allowed keys or choices, and through a tagged union (a decoder `{name: beam, ...}`)
to the member its tag chose: the tag is pydantic's, not part of the user's key path.
A tagged union's annotation may carry `UnionOf("decoder")`, which names its members
in the messages of a missing or unknown tag.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ValidationError

MAX_PATH = 200


class SpecError(Exception):
    """A user error, with where it happened and what would have been allowed."""

    def __init__(self, message: str, *, file: str | None = None, path: str | None = None):
        self.message = message
        self.file = file
        # A key path is the user's text too (a 5,000-character key is valid YAML); no real one is this long.
        self.path = path if path is None or len(path) <= MAX_PATH else f"{path[:MAX_PATH]}… ({len(path):,} characters)"
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ": ".join(part for part in (self.file, self.path) if part)
        return f"{where}: {self.message}" if where else self.message

    def located(self, *, file: str | None = None, path_prefix: str | None = None) -> SpecError:
        """The same error, placed in a file and/or under a parent key path."""
        path = self.path
        if path_prefix:
            path = f"{path_prefix}.{path}" if path else path_prefix
        return SpecError(self.message, file=file or self.file, path=path)


def did_you_mean(received: object, choices: Iterable[str]) -> str:
    """' Did you mean 'lstm'?' when a close choice exists, else ''."""
    text = received if isinstance(received, str) else repr(received)
    if len(text) > 200:  # no name is that long, and difflib's cost grows with it
        return ""
    matches = difflib.get_close_matches(text, list(choices), n=1, cutoff=0.6)
    return f" Did you mean '{matches[0]}'?" if matches else ""


def unknown_choice(what: str, received: object, choices: Iterable[str]) -> str:
    """The message for a name that is not one of the allowed choices."""
    choices = sorted(choices)
    return f"unknown {what} {shown(received)}.{did_you_mean(received, choices)} Allowed: {listed(choices)}."


def listed(names: Iterable[object], limit: int = 600) -> str:
    """'a, b, c', cut to about `limit` characters with how many more there are."""
    names = [str(name) for name in names]
    text, count = "", 0
    for name in names:
        if len(text) + len(name) > limit:
            return f"{text}, … ({len(names) - count} more)"
        text, count = f"{text}, {name}" if text else name, count + 1
    return text


def shown(value: object, limit: int = 80) -> str:
    """`repr(value)`, cut to `limit` characters: a 5 MB value must not make a 5 MB message."""
    if isinstance(value, str) and len(value) > limit:  # cut before repr: repr of 5 MB costs 5 MB
        return f"{value[:limit]!r}… ({len(value):,} characters)"
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


EXCERPT = 24  # characters of a file that is not the user's spec a message may quote


def excerpt(value: object, limit: int = EXCERPT) -> str:
    """A short, escaped excerpt of a value read from a file that is not the user's spec (a word-vector file, a kept
    tokenizer): at most `limit` characters of it, as repr writes them, so a secret the file holds, a terminal
    escape or a line break never reaches a message, runs.csv or a report whole."""
    text = value if isinstance(value, str) else repr(value)
    return f"{text[:limit]!r}…" if len(text) > limit else repr(text)


# --------------------------------------------------------------------------- pydantic validation errors

# What a field expected, in words, for pydantic's (strict) type errors.
EXPECTED = {
    "int_type": "a whole number (integer)",
    "float_type": "a number",
    "finite_number": "a finite number",
    "bool_type": "true or false",
    "string_type": "text",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}


@dataclass(frozen=True)
class UnionOf:
    """Annotated metadata of a tagged union: what its members are, in the words of its messages.

    `Annotated[Union[...], Field(discriminator="name"), UnionOf("decoder")]` makes a wrong tag read
    "unknown decoder 'bean'. Did you mean 'beam'? ..." and a missing one name the decoders to choose from.
    """

    what: str


def translate_validation_error(
    error: ValidationError, model: Any, raw: Any, *, path_prefix: str | None
) -> SpecError:
    """The first error of a pydantic ValidationError, in our words.

    `model` is what was validated: a model class, or the annotation a TypeAdapter validated with.
    """
    first = _most_useful(error.errors())
    kind = first["type"]
    location, node, _ = _walk(model, first["loc"])
    received = first.get("input")
    union = _tagged_union(node) if kind in ("union_tag_invalid", "union_tag_not_found") else None
    if union:  # the wrong or missing value is the tag's key, within the mapping
        location.append(union.key)
    if kind == "bool_for_number":  # raised by the model (registry.Params), which names the key
        location.append(first["ctx"]["field"])
    path = _dotted(([path_prefix] if path_prefix else []) + location)

    if kind == "extra_forbidden":
        allowed = _allowed_keys(model, first["loc"][:-1])
        key = location[-1]
        hint = did_you_mean(key, allowed)
        message = f"unknown key {shown(key)}.{hint} Allowed keys here: {listed(allowed) or 'none'}."
    elif kind == "missing":
        message = f"missing required key {location[-1]!r}"
    elif kind == "literal_error":
        choices = re.findall(r"'([^']*)'|(\d+)", first["ctx"]["expected"])
        choices = [a or b for a, b in choices]
        message = f"{shown(received)} is not allowed.{did_you_mean(received, choices)} Allowed: {listed(choices)}."
    elif kind == "union_tag_invalid" and union:
        tag = received.get(union.key) if isinstance(received, dict) else first["ctx"]["tag"]
        message = unknown_choice(union.what, tag, union.members)
    elif kind == "union_tag_invalid":
        choices = re.findall(r"'([^']*)'", first["ctx"]["expected_tags"])
        tag = first["ctx"]["tag"]
        message = f"unknown name {shown(tag)}.{did_you_mean(tag, choices)} Allowed: {listed(choices)}."
    elif kind == "union_tag_not_found" and union:
        message = f"missing required key {union.key!r}: which {union.what}, one of {listed(sorted(union.members))}."
    elif kind in EXPECTED:
        message = f"expected {EXPECTED[kind]}, got {as_written(received)}"
    elif kind.startswith("value_error") or kind in ("assertion_error", "bool_for_number"):
        message = first["msg"].removeprefix("Value error, ")
    else:
        message = f"{first['msg'][0].lower()}{first['msg'][1:]} (received {shown(received)})"
    return SpecError(message, path=path or None)


def as_written(value: Any) -> str:
    """A received value as YAML spells it (true, null), bounded; text says it is text."""
    if isinstance(value, bool):
        return str(value).lower()
    if value is None:
        return "null"
    if isinstance(value, str):
        return f"the text {shown(value)}"
    if isinstance(value, list):
        return f"a list {shown(value)}"
    if isinstance(value, dict):
        return f"a mapping {shown(value)}"
    return shown(value)


def _most_useful(errors: list[dict[str, Any]]) -> dict[str, Any]:
    """Prefer errors about the user's keys over the noise of Optional/union branches."""
    order = ["extra_forbidden", "union_tag_invalid", "literal_error", "missing"]
    for kind in order:
        for item in errors:
            if item["type"] == kind:
                return item
    return errors[0]


def _is_union_tag(part: Any) -> bool:
    # pydantic puts the name of an untagged union's member in the location
    # (e.g. ('table', 'TableSpec', 'rows') or 'list[...]'); users never wrote it.
    return isinstance(part, str) and (part[:1].isupper() or part.startswith(("list[", "dict[")) or "-" in part)


@dataclass(frozen=True)
class _TaggedUnion:
    key: str  # the discriminator: the key whose value chooses the member
    what: str  # what the members are ("decoder"), from UnionOf; the key itself otherwise
    members: dict[str, type[BaseModel]]  # by tag


def _walk(root: Any, location: Iterable[Any]) -> tuple[list[Any], Any, str | None]:
    """Follow pydantic's error `location` from `root` through the annotations: the user's key path (union
    members' names and tags left out), the annotation reached (None once lost), and, when that is a member a
    tag chose, the tag's key (which the user wrote already)."""
    node, path, tag_key = root, [], None
    for part in location:
        union = _tagged_union(node)
        if union and isinstance(part, str) and part in union.members:
            node, tag_key = union.members[part], union.key
            continue
        if _is_union_tag(part):
            continue
        path.append(part)
        node, tag_key = (_step(node, part) if node is not None else None), None
    return path, node, tag_key


def _tagged_union(annotation: Any) -> _TaggedUnion | None:
    """The tagged union `annotation` is (Annotated with a discriminator's Field, maybe Optional), or None."""
    if typing.get_origin(annotation) in (Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _tagged_union(members[0]) if len(members) == 1 else None
    metadata = _metadata(annotation)
    key = next((item.discriminator for item in metadata if isinstance(getattr(item, "discriminator", None), str)),
               None)
    if key is None:
        return None
    members = {}
    for member in typing.get_args(_unwrap_optional(annotation)):
        model = _unwrap_model(member)
        field = model.model_fields.get(key) if model else None
        if field is not None and typing.get_origin(field.annotation) is Literal:
            members.update({str(tag): model for tag in typing.get_args(field.annotation)})
    what = next((item.what for item in metadata if isinstance(item, UnionOf)), key)
    return _TaggedUnion(key, what, members)


def _metadata(annotation: Any) -> list[Any]:
    """An Annotated's metadata, with that of the pydantic Fields in it (where a model field keeps its own)."""
    if typing.get_origin(annotation) is not Annotated:
        return []
    items = []
    for item in typing.get_args(annotation)[1:]:
        items += [item, *getattr(item, "metadata", [])]
    return items


def _dotted(parts: list[Any]) -> str:
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            part = str(part) if len(str(part)) <= 80 else shown(str(part))  # a key is the user's text too
            text += f".{part}" if text else part
    return text


def _allowed_keys(root: Any, location: Iterable[Any]) -> list[str]:
    """The keys of the model at pydantic's `location`; a union member's tag key, which chose it, is not listed."""
    _, node, tag_key = _walk(root, location)
    model = _unwrap_model(node) if node is not None else None
    return [key for key in model.model_fields if key != tag_key] if model else []


def _step(annotation: Any, part: Any) -> Any:
    annotation = _unwrap_optional(annotation)
    model = _unwrap_model(annotation)
    if model is not None:
        if isinstance(part, str) and part in model.model_fields:
            field = model.model_fields[part]
            # A field keeps its Annotated metadata (a union's discriminator, UnionOf) in its FieldInfo.
            return Annotated[field.annotation, field] if field.discriminator or field.metadata else field.annotation
        return None
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (list, tuple) and isinstance(part, int) and args:
        return args[0]
    if origin is dict and args:
        return args[1]
    if origin in (Union, types.UnionType):
        for member in args:
            found = _step(member, part)
            if found is not None:
                return found
    return None


def _unwrap_optional(annotation: Any) -> Any:
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(members) == 1:
            return _unwrap_optional(members[0])
    return annotation


def _unwrap_model(annotation: Any) -> type[BaseModel] | None:
    annotation = _unwrap_optional(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (Union, types.UnionType):
        for member in typing.get_args(annotation):
            model = _unwrap_model(member)
            if model is not None:
                return model
    return None

