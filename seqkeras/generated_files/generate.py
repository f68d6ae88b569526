"""Every generated file, how to render it, and `python -m seqkeras.generated_files` (`make generate`).

A file is generated whole (the schema, the components page), or is a hand-written page with generated
regions (README.md, docs/spec.md): each region is

    <!-- generated: NAME -->

    (generated text)

    <!-- end generated -->

and only the text between its marks is rewritten, by the renderer of its NAME.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from seqkeras import catalog
from seqkeras.cli import COMMANDS
from seqkeras.generated_files.cli_reference import command_table, option_table
from seqkeras.generated_files.matrix import matrix_markdown
from seqkeras.spec.json_schema import FILE_NAME, schema_text
from seqkeras.spec.reference import components_markdown

REPO = Path(__file__).resolve().parents[2]
COMMAND = "make generate"  # what the message about a stale file says to run
REGION = re.compile(r"^<!-- generated: (?P<name>[^\n]+?) -->\n(?P<body>.*?)^<!-- end generated -->$",
                    re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class GeneratedFile:
    path: str  # relative to the repository's root
    render: Callable[[str], str]  # the file's committed text (its hand-written parts) → the text it must hold


def whole_file(text: Callable[[], str]) -> Callable[[str], str]:
    """A file generated whole: its committed text plays no part."""
    return lambda committed: text()


def regions(renderers: Mapping[str, Callable[[], str]]) -> Callable[[str], str]:
    """A hand-written page with generated regions: each region's text rewritten by the renderer of its name.
    A region the renderers do not know, or one they expect that the page lacks, is a ValueError naming it."""
    def render(committed: str) -> str:
        found = [match["name"] for match in REGION.finditer(committed)]
        unknown = sorted(set(found) - set(renderers))
        missing = sorted(set(renderers) - set(found))
        if unknown or missing:
            raise ValueError(f"generated regions unknown: {unknown}, missing: {missing} (each region is a "
                             "`<!-- generated: NAME -->` line, then its text, then `<!-- end generated -->`)")
        # Blank lines around the text: a table right after an HTML comment's line might not be read as a table.
        return REGION.sub(lambda match: (f"<!-- generated: {match['name']} -->\n\n"
                                         f"{renderers[match['name']]().strip()}\n\n<!-- end generated -->"),
                          committed)
    return render


GENERATED = (
    GeneratedFile(FILE_NAME, whole_file(schema_text)),
    GeneratedFile("docs/components.md", whole_file(partial(components_markdown, catalog.ALL))),
    GeneratedFile("docs/matrix.md", whole_file(matrix_markdown)),
    GeneratedFile("README.md", regions({"cli-commands": command_table})),
    GeneratedFile("docs/spec.md", regions({f"cli-options {command.name}": partial(option_table, command.name)
                                           for command in COMMANDS})),
)


def committed_and_expected(generated: GeneratedFile, root: Path = REPO) -> tuple[str, str]:
    """(the committed text, the text it must hold) of one generated file; "" for a file that is not there."""
    path = root / generated.path
    committed = path.read_text(encoding="utf-8") if path.is_file() else ""
    return committed, generated.render(committed)


def main(argv: list[str] | None = None, root: Path = REPO) -> int:
    parser = argparse.ArgumentParser(prog="python -m seqkeras.generated_files",
                                     description="rewrite every generated file that is stale")
    parser.add_argument("--check", action="store_true", help="rewrite nothing; exit 1 naming each stale file")
    args = parser.parse_args(argv)
    if not (root / "pyproject.toml").is_file():  # an installed package: no README.md or docs/ to rewrite
        print(f"error: {root} is not a source checkout of seqkeras; run this in one", file=sys.stderr)
        return 2
    stale = []
    for generated in GENERATED:
        try:
            committed, expected = committed_and_expected(generated, root)
        except ValueError as error:  # a page's marks are not as they should be: it needs a hand
            print(f"error: {generated.path}: {error}", file=sys.stderr)
            return 2
        if committed == expected:
            continue
        stale.append(generated.path)
        if not args.check:
            with open(root / generated.path, "w", encoding="utf-8", newline="\n") as file:
                file.write(expected)
            print(f"wrote {generated.path}")
    if args.check and stale:
        print(f"stale: {', '.join(stale)}; regenerate with `{COMMAND}`", file=sys.stderr)
        return 1
    if not stale:
        print("every generated file is up to date")
    return 0
