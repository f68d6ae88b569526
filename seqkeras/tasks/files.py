"""Users' own data, named by `task.path`: CoNLL-style tagging files and CSV/TSV text classification files.

conll_file
    One token per line, its tag in the last whitespace-separated column
    (`token tag`, or CoNLL-2003's `token POS chunk NER`); a blank line — or a
    line of only whitespace — ends a sentence; `-DOCSTART-` lines are skipped.
text_classification_file
    A header row naming the columns, then one example per row. `.tsv` and
    `.tab` files are tab-separated, anything else comma-separated (quoted
    fields may hold commas and newlines).

Either reads `test_path` as the test set when given, else holds out a seeded
`test_share` of `path`. Every problem with a file is a `SpecError` naming the
file and, where it helps, the line.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from pydantic import Field, field_validator

from seqkeras.errors import SpecError
from seqkeras.tasks.base import SequenceData
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


def _existing_file(value: str | None) -> str | None:
    if value is not None and not Path(value).expanduser().is_file():
        raise ValueError(f"no such file: {value}")
    return value


class ConllParams(TaggingTextParams):
    path: str = Field(description="CoNLL-style file: `token tag` per line, a blank line between sentences.")
    test_path: str | None = Field(None, description="A separate test file; default: hold out test_share of path.")

    check_files_exist = field_validator("path", "test_path")(_existing_file)


class TextClassificationParams(ClassificationTextParams):
    path: str = Field(description="CSV (or .tsv) file with a header row, one example per row.")
    test_path: str | None = Field(None, description="A separate test file; default: hold out test_share of path.")
    text_column: str = Field("text", description="The column holding the text.")
    label_column: str = Field("label", description="The column holding the class.")

    check_files_exist = field_validator("path", "test_path")(_existing_file)


def read_text(path: str | Path) -> str:
    file = Path(path).expanduser()
    try:
        text = file.read_text(encoding="utf-8-sig")  # a UTF-8 byte-order mark is not part of the first token
    except FileNotFoundError:
        raise SpecError(f"no such file: {file}", path="task.path") from None
    except UnicodeDecodeError as error:
        raise SpecError(f"{file} is not UTF-8 text (byte {error.start})", path="task.path") from None
    except OSError as error:
        raise SpecError(f"cannot read {file}: {error.strerror}", path="task.path") from None
    return text


def read_conll(path: str | Path) -> list[TaggedSentence]:
    """Sentences as (tokens, tags); the tag is the last column, the token the first."""
    sentences: list[TaggedSentence] = []
    tokens: list[str] = []
    tags: list[str] = []
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        fields = line.split()
        if not fields or fields[0] == DOCSTART:
            if tokens:
                sentences.append((tokens, tags))
                tokens, tags = [], []
            continue
        if len(fields) < 2:
            raise SpecError(
                f"{path}, line {number}: expected a token and its tag separated by whitespace, got {line.strip()!r}",
                path="task.path",
            )
        tokens.append(fields[0])
        tags.append(fields[-1])
    if tokens:
        sentences.append((tokens, tags))
    if not sentences:
        raise SpecError(f"{path} holds no tagged tokens", path="task.path")
    return sentences


def read_labelled_texts(path: str | Path, text_column: str, label_column: str) -> list[LabelledText]:
    """(text, label) rows of a CSV/TSV file with a header."""
    file = Path(path).expanduser()
    delimiter = "\t" if file.suffix.lower() in (".tsv", ".tab") else ","
    text = read_text(file)
    if not text.strip():
        raise SpecError(f"{file} is empty", path="task.path")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = [name.strip() for name in next(reader)]
        missing = [name for name in (text_column, label_column) if name not in header]
        if missing:
            raise SpecError(
                f"{file}: no column {missing[0]!r}; the header (line 1) has {', '.join(map(repr, header))}. "
                f"Name the columns with task.text_column and task.label_column.",
                path="task.text_column" if missing[0] == text_column else "task.label_column",
            )
        text_at, label_at = header.index(text_column), header.index(label_column)
        examples = []
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue
            line = reader.line_num
            if len(row) != len(header):
                raise SpecError(
                    f"{file}, line {line}: {len(row)} fields, but the header has {len(header)}", path="task.path"
                )
            text, label = row[text_at].strip(), row[label_at].strip()
            if not text or not label:
                empty = text_column if not text else label_column
                raise SpecError(f"{file}, line {line}: the {empty!r} field is empty", path="task.path")
            examples.append((text, label))
    except csv.Error as error:
        raise SpecError(f"{file}, line {reader.line_num}: {error}", path="task.path") from None
    if not examples:
        raise SpecError(f"{file} has a header but no examples", path="task.path")
    return examples


def _train_test(params, seed: int, read, what: str):
    train = read(params.path)
    if params.test_path:
        return train, read(params.test_path)
    return split_examples(train, params.test_share, seed, what=what)


def build_conll(params: ConllParams, seed: int) -> SequenceData:
    train, test = _train_test(params, seed, read_conll, params.path)
    return text_tagging_data(train, test, params)


def build_text_classification(params: TextClassificationParams, seed: int) -> SequenceData:
    def read(path):
        return read_labelled_texts(path, params.text_column, params.label_column)

    train, test = _train_test(params, seed, read, params.path)
    label_names = sorted({label for _, label in train + test})
    if len(label_names) < 2:
        raise SpecError(
            f"{params.path}: every example has the class {label_names[0]!r}; classification needs at least 2",
            path="task.label_column",
        )
    return text_classification_data(train, test, label_names, params)
