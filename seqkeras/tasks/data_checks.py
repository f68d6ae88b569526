"""The rules a user's data files must keep beyond being readable, checked when the spec is validated.

`tasks.files` reads every row of a file task's files at validation (no
TensorFlow), refusing what cannot be read (a short row, an empty field, a line
without a tag) at its file and line. The rules here need more than one line:

- a tag set that is chunk-tagged (some tag is B-X, I-X, E-X or S-X, the IOB2 /
  IOBES schemes the entity metrics read) must be so throughout: every tag is O
  or one of those prefixes with a type (`B-` alone, `b-PER`, `B_PER`, `PER` are
  refused at the first line that has them). A file with no such tag (POS tags,
  say) is tagged in a scheme of its own and left as it is;
- classification needs at least two classes over the task's files, and at most
  tasks.limits.MAX_CLASSES (each file is also checked alone, at the line where
  its labels pass the limit);
- a split needs examples on both sides: at least 2 distinct examples (exact
  duplicates are collapsed before the split: tasks.duplicates) for a held-out
  `test_share`; a test file with an example not in the training file; a
  `validation_share` at least 2 training examples to take it from.

Each problem is a `SpecError` naming the file, the line where there is one, and
the key (`task.path`, `task.label_column`, ...): `seqkeras validate` exits 2 and
`seqkeras run` trains nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from seqkeras.errors import SpecError, listed, shown
from seqkeras.tasks import duplicates
from seqkeras.tasks.limits import check_class_count

CHUNK_PREFIXES = ("B-", "I-", "E-", "S-")  # IOB2 and IOBES: what the entity metrics read (evaluation.tagging)
OUTSIDE = "O"


class TagCensus:
    """Each distinct tag of a file with the first line it is on (few: a tag set is small), for `check_tags`."""

    def __init__(self) -> None:
        self.first_line: dict[str, int] = {}

    def add(self, line: int, tag: str) -> None:
        self.first_line.setdefault(tag, line)


def _well_formed(tag: str) -> bool:
    return tag == OUTSIDE or (tag[:2] in CHUNK_PREFIXES and len(tag) > 2)


def check_tags(path: str | Path, census: TagCensus, key: str) -> None:
    """A chunk-tagged file's tags are all O, B-X, I-X, E-X or S-X; the first that is not is refused at its line."""
    chunked = [tag for tag in census.first_line if tag[:2] in CHUNK_PREFIXES and len(tag) > 2]
    if not chunked:
        return
    bad = [(line, tag) for tag, line in census.first_line.items() if not _well_formed(tag)]
    if bad:
        line, tag = min(bad)
        examples = listed(shown(t, 20) for t in sorted(chunked)[:3])
        raise SpecError(f"{path}, line {line}: the tag (last column) {shown(tag, 40)} is not O or B-, I-, E-, S- "
                        f"followed by a type, as the file's other tags are ({examples}, ...)", path=key)


def check_classes(path: str | Path, labels: set[str], column: str) -> None:
    """Classification needs two classes or more over the task's files."""
    check_class_count(path, len(labels), "classes over the task's files", "task.label_column")
    if len(labels) < 2:
        only = shown(next(iter(labels)), 40) if labels else "none"
        raise SpecError(f"{path}: every example has the class {only} (column {shown(column, 40)}); "
                        "classification needs at least 2", path="task.label_column")


def check_split(params, examples: dict[str, Sequence]) -> None:
    """The split the task will make leaves examples on each side. `examples`: each file's examples, by its key
    ("task.path", "task.test_path", ...); `params`: the task's (test_path, test_share, validation_share)."""
    path = params.path
    train = examples["task.path"]
    if params.test_path:
        test, _ = duplicates.drop_seen(train, examples["task.test_path"])
        if not test:
            raise SpecError(f"every example of {params.test_path} is also in {path} (the test file's are removed "
                            "from it); no test example is left", path="task.test_path")
    else:
        distinct, notes = duplicates.collapse(train)
        if len(distinct) < 2:
            removed = notes[duplicates.REMOVED]
            why = f" once {removed} duplicate(s) are removed" if removed else ""
            raise SpecError(f"{path} has {len(distinct)} distinct example(s){why}; holding out test_share "
                            f"{params.test_share} for testing needs at least 2", path="task.path")
        n_test = min(max(1, round(len(distinct) * params.test_share)), len(distinct) - 1)
        train = distinct[:len(distinct) - n_test]  # as many as the split leaves to train on
    if getattr(params, "validation_share", None) is not None and len(train) < 2:
        raise SpecError(f"{path} leaves {len(train)} training example(s) after the test split; holding out "
                        f"validation_share {params.validation_share} needs at least 2", path="task.validation_share")
