"""Every committed file (or part of one) that is generated from the code, and the command that rewrites them.

    python -m seqkeras.generated_files            rewrite each one that is stale (`make generate`)
    python -m seqkeras.generated_files --check    rewrite nothing; exit 1 naming each stale one

- `seqkeras.schema.json`: the JSON Schema of experiment files (seqkeras.spec.json_schema), from the spec's
  models and the registries;
- `docs/components.md`: every component and its parameters (seqkeras.spec.reference), from the registries;
- `README.md`'s command table and `docs/spec.md`'s option table of each command (seqkeras.cli_reference),
  from the command line's parser. These are regions of hand-written pages, each between two marks,

      <!-- generated: NAME -->

      (generated text)

      <!-- end generated -->

  and only the text between the marks is rewritten; the prose around them is written by hand.

Run it from a source checkout, after changing a component, a spec section or a command-line option;
tests/test_generated_files.py fails while a file is stale. Not imported by the command line.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COMMAND = "make generate"  # what a stale file's message tells to run
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
    """A hand-written page with generated regions: each region's text rewritten by the renderer of its name."""
    def render(committed: str) -> str:
        found = [match["name"] for match in REGION.finditer(committed)]
        unknown = sorted(set(found) - set(renderers))
        missing = sorted(set(renderers) - set(found))
        if unknown or missing:
            raise ValueError(f"generated regions unknown: {unknown}, missing: {missing} (each is a "
                             "`<!-- generated: NAME -->` ... `<!-- end generated -->` pair)")
        # Blank lines around the text: a table or list right after an HTML comment may not be read as one.
        return REGION.sub(lambda match: (f"<!-- generated: {match['name']} -->\n\n"
                                         f"{renderers[match['name']]().strip()}\n\n<!-- end generated -->"),
                          committed)
    return render


def schema() -> str:
    from seqkeras.spec.json_schema import schema_text

    return schema_text()


def components() -> str:
    from seqkeras import catalog
    from seqkeras.spec.reference import components_markdown

    return components_markdown(catalog.ALL)


def command_table() -> str:
    from seqkeras.cli_reference import command_table

    return command_table()


def option_tables() -> dict[str, Callable[[], str]]:
    from seqkeras.cli import COMMANDS
    from seqkeras.cli_reference import option_table

    return {f"cli-options {command.name}": partial(option_table, command.name) for command in COMMANDS}


def generated_files() -> list[GeneratedFile]:
    from seqkeras.spec.json_schema import FILE_NAME

    return [
        GeneratedFile(FILE_NAME, whole_file(schema)),
        GeneratedFile("docs/components.md", whole_file(components)),
        GeneratedFile("README.md", regions({"cli-commands": command_table})),
        GeneratedFile("docs/spec.md", regions(option_tables())),
    ]


def expected_text(generated: GeneratedFile, root: Path = REPO) -> tuple[str, str]:
    """(the committed text, the text it must hold) of one generated file; "" for a file that is not there."""
    path = root / generated.path
    committed = path.read_text(encoding="utf-8") if path.is_file() else ""
    return committed, generated.render(committed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m seqkeras.generated_files", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="rewrite nothing; exit 1 naming each stale file")
    args = parser.parse_args(argv)
    if not (REPO / "pyproject.toml").is_file():
        print(f"error: {REPO} is not a source checkout of seqkeras; run this from one", file=sys.stderr)
        return 2
    stale = []
    for generated in generated_files():
        try:
            committed, expected = expected_text(generated)
        except ValueError as error:  # a page's marks are not as they should be: the page needs a hand
            print(f"error: {generated.path}: {error}", file=sys.stderr)
            return 2
        if committed == expected:
            continue
        stale.append(generated.path)
        if not args.check:
            with open(REPO / generated.path, "w", encoding="utf-8", newline="\n") as file:
                file.write(expected)
            print(f"wrote {generated.path}")
    if args.check and stale:
        print(f"stale: {', '.join(stale)}; regenerate with `{COMMAND}`", file=sys.stderr)
        return 1
    if not stale:
        print("every generated file is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
