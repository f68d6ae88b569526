"""Users' own data, named by `task.path`: CoNLL-style tagging files and CSV/TSV text classification files.

conll_file
    One token per line, its tag in the last whitespace-separated column
    (`token tag`, or CoNLL-2003's `token POS chunk NER`); a blank line — or a
    line of only whitespace — ends a sentence; `-DOCSTART-` lines are skipped.
text_classification_file
    A header row naming the columns, then one example per row. `.tsv` and
    `.tab` files are tab-separated, anything else comma-separated (quoted
    fields may hold commas and newlines). A column name appears once in the
    header; a quote that never closes is an error at the line it opens on.
    Every row is read when the spec is validated.

A text over tasks.limits.MAX_TEXT_CHARACTERS, a sentence over MAX_SENTENCE_TOKENS
and a file with more than MAX_CLASSES distinct classes or tags are refused at the
line where they pass the limit.

Either reads `test_path` as the test set when given, else holds out a seeded
`test_share` of `path`; then `validation_path` (a file of the same format) or a
seeded `validation_share` of what is left for training gives validation data
(tasks.validation), never taken from the test set. Every problem with a file is a
`SpecError` naming the file and, where it helps, the line.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from pydantic import Field, ValidationInfo, field_validator, model_validator

from seqkeras.errors import SpecError, excerpt, listed, shown
from seqkeras.user_files import MISSING, open_regular_file, size_in_words
from seqkeras.tasks.base import SequenceData, named_files
from seqkeras.tasks.data_checks import TagCensus, check_classes, check_split, check_tags
from seqkeras.tasks.duplicates import drop_seen
from seqkeras.tasks.limits import (
    check_class_count, check_padded_size, check_sentence_length, check_text_length,
)
from seqkeras.tasks.validation import (
    ValidationParams, validation_examples, validation_path_field, validation_share_field,
)
from seqkeras.tasks.text import (
    ClassificationTextParams,
    LabelledText,
    TaggedSentence,
    TaggingTextParams,
    split_examples,
    text_classification_data,
    text_tagging_data,
)

DOCSTART = "-DOCSTART-"
MAX_DATA_BYTES = 2 << 30  # 2 GiB: far above any corpus a laptop trains on, far below a disk image
MAX_LINE_BYTES = 1 << 20  # a "line" longer than 1 MiB means the file is not line-based text
UTF16_OR_32 = (b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")  # byte-order marks (UTF-32-LE starts \xff\xfe)


# --------------------------------------------------------------------------- #
# Opening a user's data file: checked when the spec is validated, and again when read
# --------------------------------------------------------------------------- #


PATH_SHOWN = 1000  # characters of a data file's path an error shows: more than any real folder's, less than 5 MB


def open_data_file(path: str | Path, key: str = "task.path") -> BinaryIO:
    """The file, opened for binary reading, or a `SpecError` at `key` saying why it cannot be."""
    try:
        return open_regular_file(Path(path).expanduser(), limit=MAX_DATA_BYTES)
    except SpecError as error:
        # The whole path, however deep the folder: it is what the user must find (cut only past PATH_SHOWN).
        message = (f"no such file: {shown(str(path), PATH_SHOWN)}" if error.message == MISSING
                   else f"{shown(str(path), PATH_SHOWN)} {error.message}")
        raise SpecError(message, path=key) from None


def check_data_file(value: str | None, info: ValidationInfo) -> str | None:
    """A field validator: the file named by this field exists and is a readable regular file.

    Raises `SpecError` (which pydantic passes through) rather than ValueError,
    so the message keeps its absolute key path (task.path) wherever it is raised.
    """
    if value is not None:
        open_data_file(value, f"task.{info.field_name}").close()
    return value


def utf8_pieces(path: str | Path, key: str = "task.path") -> Iterator[str]:
    """The file's text, streamed one line (ending in a newline byte) at a time, a UTF-8 BOM dropped.

    Holds at most one line of MAX_LINE_BYTES in memory. UTF-8 never uses the
    newline byte inside a character, so each piece decodes alone, a decoding
    error has an exact line number, and `piece.splitlines()` over all pieces
    gives the lines `text.splitlines()` gives for the whole text.
    """
    with open_data_file(path, key) as file:
        number = 0
        while raw := file.readline(MAX_LINE_BYTES + 1):
            number += 1
            if len(raw) > MAX_LINE_BYTES:
                raise SpecError(f"{path}, line {number}: longer than {size_in_words(MAX_LINE_BYTES)}; "
                                "is it a text file?", path=key)
            if number == 1:
                if raw.startswith(UTF16_OR_32):
                    raise SpecError(f"{path} is UTF-16 or UTF-32 (a byte-order mark); save it as UTF-8", path=key)
                raw = raw.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte-order mark is not part of the first token
            if b"\0" in raw:  # UTF-16 without a byte-order mark would decode, a NUL in every other byte
                raise SpecError(f"{path}, line {number}: a NUL byte; the file must be UTF-8 text (is it UTF-16?)",
                                path=key)
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise SpecError(f"{path}, line {number}: byte 0x{raw[error.start]:02x} is not UTF-8; "
                                "the file must be UTF-8 text", path=key) from None


def read_text(path: str | Path, key: str = "task.path") -> str:
    """The whole text of a UTF-8 file (at most MAX_DATA_BYTES)."""
    return "".join(utf8_pieces(Path(path).expanduser(), key))


# --------------------------------------------------------------------------- #
# The two tasks
# --------------------------------------------------------------------------- #


class ConllParams(TaggingTextParams, ValidationParams):
    path: str = Field(description="CoNLL-style file: `token tag` per line, a blank line between sentences.")
    test_path: str | None = Field(None, description="A separate test file; default: hold out test_share of path.")
    validation_path: str | None = validation_path_field()
    validation_share: float | None = validation_share_field()

    @field_validator("path", "test_path", "validation_path")
    @classmethod
    def _tagged_file(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None:
            check_data_file(value, info)
        return value

    @model_validator(mode="after")
    def _rows_readable(self) -> ConllParams:
        # Every line is read now (no TensorFlow), so a line without a tag, a malformed tag or data the
        # task cannot split (tasks.data_checks) is refused before a sweep starts, not when its first run
        # builds data.
        sentences = {key: read_conll(file, key) for key, file in _files(self)}
        check_split(self, sentences)
        every = [tokens for part in sentences.values() for tokens, _ in part]
        check_padded_size(_names(self), len(every), max(len(tokens) for tokens in every), "task.path",
                          "split the longest sentences, or use fewer")
        return self

    def input_files(self) -> dict[str, Path]:
        """The files this task reads, by key: each is part of the run's identity (execution.identity)."""
        return named_files(self, "path", "test_path", "validation_path")


class TextClassificationParams(ClassificationTextParams, ValidationParams):
    path: str = Field(description="CSV (or .tsv) file with a header row, one example per row.")
    test_path: str | None = Field(None, description="A separate test file; default: hold out test_share of path.")
    text_column: str = Field("text", description="The column holding the text.")
    label_column: str = Field("label", description="The column holding the class.")
    validation_path: str | None = validation_path_field()
    validation_share: float | None = validation_share_field()

    check_files = field_validator("path", "test_path", "validation_path")(check_data_file)

    def input_files(self) -> dict[str, Path]:
        """The files this task reads, by key: each is part of the run's identity (execution.identity)."""
        return named_files(self, "path", "test_path", "validation_path")

    @model_validator(mode="after")
    def _rows_readable(self) -> TextClassificationParams:
        # Every row is read now (no TensorFlow), after the columns are known (they may be
        # defaults, which field validators skip): a bad row is refused before a sweep starts,
        # and so are data the task cannot split or learn from (tasks.data_checks).
        examples = {key: read_labelled_texts(file, self.text_column, self.label_column, key=key)
                    for key, file in _files(self)}
        check_classes(self.path, {label for rows in examples.values() for _, label in rows}, self.label_column)
        check_split(self, examples)
        check_texts_size(self, [text for rows in examples.values() for text, _ in rows])
        return self


def check_texts_size(params: TextClassificationParams, texts: list[str]) -> None:
    """The texts of every file, padded to the longest (at most max_length), stay within MAX_DATA_TOKENS; counted
    without tokenizing: in whitespace-separated words (at most the tokens at level word; at a subword level, whose
    pieces are counted again once learnt: subwords.vectorize_texts), or characters at level char."""
    def tokens(text: str) -> int:
        return len(text) if params.level == "char" else len(text.split())

    width = max(tokens(text) for text in texts)
    check_padded_size(_names(params), len(texts), min(width, params.max_length or width), "task.max_length",
                      "set max_length to keep fewer tokens per text")


def _names(params) -> str:
    """The task's files, for a message about all of them."""
    return " and ".join(file for _, file in _files(params))


def _files(params) -> list[tuple[str, str]]:
    """(key, file) of each file the task's params name, the training file first."""
    return [(f"task.{key}", getattr(params, key)) for key in ("path", "test_path", "validation_path")
            if getattr(params, key)]


# --------------------------------------------------------------------------- #
# Reading them
# --------------------------------------------------------------------------- #


def conll_sentences(path: str | Path, key: str = "task.path",
                    census: TagCensus | None = None) -> Iterator[TaggedSentence]:
    """Sentences as (tokens, tags), streamed; the tag is the last column, the token the first. `census` is told
    each tag and its line (for data_checks.check_tags)."""
    tokens: list[str] = []
    tags: list[str] = []
    tag_set: set[str] = set()  # the distinct tags so far (tasks.limits.MAX_CLASSES)
    number = 0
    for piece in utf8_pieces(path, key):
        for line in piece.splitlines():
            number += 1
            fields = line.split()
            if not fields or fields[0] == DOCSTART:
                if tokens:
                    yield tokens, tags
                    tokens, tags = [], []
                continue
            if len(fields) < 2:
                raise SpecError(
                    f"{path}, line {number}: expected a token and its tag separated by whitespace, "
                    f"got {shown(line.strip())}",
                    path=key,
                )
            tokens.append(fields[0])
            tags.append(fields[-1])
            check_sentence_length(path, number, len(tokens), key)
            if fields[-1] not in tag_set:
                tag_set.add(fields[-1])
                check_class_count(path, len(tag_set), "tags", key, number)
            if census is not None:
                census.add(number, fields[-1])
    if tokens:
        yield tokens, tags


def read_conll(path: str | Path, key: str = "task.path") -> list[TaggedSentence]:
    census = TagCensus()
    sentences = list(conll_sentences(path, key, census))
    if not sentences:
        raise SpecError(f"{path} holds no tagged tokens", path=key)
    check_tags(path, census, key)
    return sentences


def _delimiter(file: Path) -> str:
    return "\t" if file.suffix.lower() in (".tsv", ".tab") else ","


def _csv_records(path: str | Path, key: str) -> Iterator[tuple[int, list[str]]]:
    """(the line it starts on, its fields) for each record of a CSV/TSV file; a blank line is a record of none.

    Parsed as `csv` parses it (quoted fields may hold delimiters and newlines), streamed, with
    one check more: a quote that never closes, which `csv` would answer by reading the rest of
    the file into that one field (reporting any problem at the file's last line, or none at
    all), is an error at the line where that quoted field starts.
    """
    file = Path(path).expanduser()
    delimiter = _delimiter(file)
    taken: list[str] = []  # the lines of the record being read, as csv splits them

    def lines() -> Iterator[str]:
        # Each piece split as io.StringIO(text, newline="") splits the whole text.
        for piece in utf8_pieces(file, key):
            for line in io.StringIO(piece, newline=""):
                taken.append(line)
                yield line

    reader = csv.reader(lines(), delimiter=delimiter)
    start, held = 1, None  # held: the last record read, with its lines, until the next shows it was not the last
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as error:  # e.g. a field over csv's 128 KiB limit: often a quote that never closes
            opened = _unclosed_quote(taken, delimiter)
            where = f"line {start + opened}: a quoted field starts here and does not close" if opened is not None \
                else f"line {reader.line_num}"
            raise SpecError(f"{file}, {where} ({error})", path=key) from None
        if held is not None:
            yield held[0], held[1]
        held = (start, row, taken.copy())
        taken.clear()
        start = reader.line_num + 1
    if held is not None:
        opened = _unclosed_quote(held[2], delimiter)
        if opened is not None:
            raise SpecError(f"{file}, line {held[0] + opened}: a quoted field starts here and its closing quote "
                            "never comes (the rest of the file would be read into it)", path=key)
        yield held[0], held[1]


def _unclosed_quote(lines: list[str], delimiter: str) -> int | None:
    """Which of a record's lines (0 = its first) opens a quoted field that the record never closes, read by
    csv's default dialect (a quote opens a field only at its start; "" inside is a quote); None if none."""
    state, opened = "start", None
    for index, line in enumerate(lines):
        for char in line:
            if state == "quoted":
                state = "quote" if char == '"' else "quoted"
            elif state == "quote":  # after a quote inside a quoted field: "" is a quote; else the field closed
                state = "quoted" if char == '"' else ("start" if char in (delimiter, "\r", "\n") else "field")
            elif char == '"' and state == "start":
                state, opened = "quoted", index
            else:
                state = "start" if char in (delimiter, "\r", "\n") else "field"
    return opened if state == "quoted" else None


def _header(records: Iterator[tuple[int, list[str]]], path: str | Path, key: str) -> list[str]:
    """The header (the first record), its names stripped; refused when blank or when a name repeats."""
    line, fields = next(records, (1, []))
    header = [name.strip() for name in fields]
    if not any(header):
        raise SpecError(f"{path} is empty (or its first line, the header, is blank)", path=key)
    first: dict[str, int] = {}
    for position, name in enumerate(header, start=1):
        if name and name in first:
            raise SpecError(f"{path}, line {line}: the header names the column {shown(name, 40)} twice, as "
                            f"columns {first[name]} and {position}; rename one (which of the two is meant "
                            "cannot be told)", path=key)
        first.setdefault(name, position)
    return header


def _require_column(path: str | Path, header: list[str], column: str, key: str) -> None:
    if column not in header:
        raise SpecError(
            f"{path}: no column {shown(column)}; the header (line 1) has {listed(shown(name, 40) for name in header)}. "
            f"Name the columns with task.text_column and task.label_column.",
            path=key,
        )


def labelled_texts(path: str | Path, text_column: str, label_column: str,
                   key: str = "task.path") -> Iterator[LabelledText]:
    """(text, label) rows of a CSV/TSV file with a header, streamed; `key` names the file's setting."""
    file = Path(path).expanduser()
    records = _csv_records(file, key)
    header = _header(records, file, key)
    for column, column_key in ((text_column, "task.text_column"), (label_column, "task.label_column")):
        _require_column(file, header, column, column_key)
    text_at, label_at = header.index(text_column), header.index(label_column)
    classes: set[str] = set()  # the distinct labels so far (tasks.limits.MAX_CLASSES)
    for line, row in records:
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise SpecError(f"{file}, line {line}: {len(row)} fields, but the header has {len(header)}", path=key)
        text, label = row[text_at].strip(), row[label_at].strip()
        if not text or not label:
            empty = text_column if not text else label_column
            raise SpecError(f"{file}, line {line}: the {empty!r} field is empty", path=key)
        check_text_length(file, line, f"the {text_column!r} field", text, key)
        if label not in classes:
            classes.add(label)
            check_class_count(file, len(classes), "classes", "task.label_column", line)
        yield text, label


def read_labelled_texts(path: str | Path, text_column: str, label_column: str,
                        key: str = "task.path") -> list[LabelledText]:
    """(text, label) rows of a CSV/TSV file with a header."""
    examples = list(labelled_texts(path, text_column, label_column, key))
    if not examples:
        raise SpecError(f"{Path(path).expanduser()} has a header but no examples", path=key)
    return examples


def _train_test(params, seed: int, read, what: str, notes: dict[str, int] | None = None):
    """(train, test, validation): the test split first (no input on both sides: tasks.duplicates), then the
    validation data from what is left to train on; `notes`, when given, gets the counts of duplicates removed."""
    notes = {} if notes is None else notes
    train = read(params.path)
    if params.test_path:
        test, seen = drop_seen(train, read(params.test_path))
        notes.update(seen)
        if not test:
            raise SpecError(f"every example of {params.test_path} is also in {params.path}; no test example is "
                            "left", path="task.test_path")
    else:
        split = split_examples(train, params.test_share, seed, what=what)
        train, test = split
        notes.update(split.notes)
    train, validation = validation_examples(params, train, seed, read, what=what)
    return train, test, validation


def build_conll(params: ConllParams, seed: int) -> SequenceData:
    def read(path):
        return read_conll(path, _key_of(params, path))

    notes: dict[str, int] = {}
    train, test, validation = _train_test(params, seed, read, params.path, notes)
    data = text_tagging_data(train, test, params, validation)
    data.notes.update(notes)
    return data


def _key_of(params, path: str) -> str:
    """The key naming this file of the task, for its errors."""
    return next(f"task.{key}" for key in ("path", "test_path", "validation_path") if getattr(params, key) == path)


def build_text_classification(params: TextClassificationParams, seed: int) -> SequenceData:
    def read(path):
        return read_labelled_texts(path, params.text_column, params.label_column, _key_of(params, path))

    notes: dict[str, int] = {}
    train, test, validation = _train_test(params, seed, read, params.path, notes)
    label_names = sorted({label for _, label in train + test + validation})
    if len(label_names) < 2:
        raise SpecError(
            f"{params.path}: every example has the class {excerpt(label_names[0])}; classification needs at least 2",
            path="task.label_column",
        )
    data = text_classification_data(train, test, label_names, params, validation)
    data.notes.update(notes)
    return data
