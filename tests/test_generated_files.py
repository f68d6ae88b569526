"""The generated files (seqkeras/generated_files/): each committed one is up to date, `make generate` rewrites
them, and the command line's tables in the docs come from its parser.

This file imports neither TensorFlow nor Keras.
"""

from __future__ import annotations

import argparse
import difflib
import re
import shutil
import subprocess
import sys
from dataclasses import fields

import pytest

from seqkeras.api import RunOptions
from seqkeras.cli import COMMANDS, build_parser, main
from seqkeras.generated_files import generate
from seqkeras.generated_files.cli_reference import cell, command_parsers, command_table, option_table
from seqkeras.generated_files.generate import GENERATED, committed_and_expected, regions
from tests.conftest import REPO


@pytest.mark.parametrize("generated", GENERATED, ids=lambda generated: generated.path)
def test_every_generated_file_is_up_to_date(generated):
    committed, expected = committed_and_expected(generated)
    difference = "".join(list(difflib.unified_diff(committed.splitlines(True), expected.splitlines(True),
                                                   "committed", "generated", n=1))[:20])
    assert committed == expected, (f"{generated.path} is stale: regenerate it with `{generate.COMMAND}` "
                                   f"(python -m seqkeras.generated_files)\n{difference}")


def test_a_region_is_rewritten_and_the_prose_around_it_kept():
    page = "# Title\n\nprose before\n\n<!-- generated: table -->\nold text\n<!-- end generated -->\n\nprose after\n"

    rewritten = regions({"table": lambda: "| a |\n|:--|\n| 1 |\n"})(page)

    assert rewritten == ("# Title\n\nprose before\n\n<!-- generated: table -->\n\n| a |\n|:--|\n| 1 |\n\n"
                         "<!-- end generated -->\n\nprose after\n")
    assert regions({"table": lambda: "| a |\n|:--|\n| 1 |"})(rewritten) == rewritten  # settled: nothing to change


@pytest.mark.parametrize("page, named", [
    ("no region at all\n", "missing: ['table']"),
    ("<!-- generated: tabel -->\n<!-- end generated -->\n", "unknown: ['tabel']"),
])
def test_a_page_without_its_region_or_with_an_unknown_one_is_an_error(page, named):
    with pytest.raises(ValueError, match=named.replace("[", r"\[").replace("]", r"\]")):
        regions({"table": lambda: "text"})(page)


@pytest.fixture
def checkout(tmp_path):
    """A copy of the repository's generated files (and the pyproject.toml that marks a source checkout)."""
    for relative in ["pyproject.toml", *(generated.path for generated in GENERATED)]:
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / relative, tmp_path / relative)
    return tmp_path


def test_check_names_a_stale_file_and_the_command_then_generate_rewrites_it(checkout, capsys):
    readme = checkout / "README.md"
    fresh = readme.read_text(encoding="utf-8")
    stale = fresh.replace("`--relative-tolerance R`", "")
    readme.write_text(stale, encoding="utf-8")

    assert generate.main(["--check"], root=checkout) == 1
    assert "stale: README.md; regenerate with `make generate`" in capsys.readouterr().err
    assert readme.read_text(encoding="utf-8") == stale  # --check rewrites nothing

    assert generate.main([], root=checkout) == 0
    assert capsys.readouterr().out == "wrote README.md\n"
    assert readme.read_text(encoding="utf-8") == fresh
    assert generate.main(["--check"], root=checkout) == 0


def test_a_page_that_lost_a_region_is_one_line_naming_it(checkout, capsys):
    spec = checkout / "docs" / "spec.md"
    spec.write_text(spec.read_text(encoding="utf-8").replace("<!-- generated: cli-options list -->", ""),
                    encoding="utf-8")

    assert generate.main([], root=checkout) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: docs/spec.md: ") and "missing: ['cli-options list']" in error


def test_outside_a_source_checkout_nothing_is_written(tmp_path, capsys):
    assert generate.main([], root=tmp_path) == 2
    assert "not a source checkout" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- #
# The command line's tables, from its parser
# --------------------------------------------------------------------------- #

def options_of(parser: argparse.ArgumentParser) -> list[str]:
    return [max(a.option_strings, key=len) for a in parser._actions
            if a.option_strings and not isinstance(a, argparse._HelpAction)]


def test_the_command_table_has_a_row_per_command_with_every_option():
    rows = command_table().splitlines()[2:]
    parsers = command_parsers()
    assert [row.split("`")[1].split()[1] for row in rows] == [command.name for command in COMMANDS]
    for command, row in zip(COMMANDS, rows):
        for option in options_of(parsers[command.name]):
            assert re.search(rf"(?<![\w-]){option}(?![\w-])", row), (command.name, option)
    run, compare = rows[0], rows[3]  # the options the hand-written table had lost
    for option in ("--reference", "--executor", "--address", "--cpus-per-run", "--gpus-per-run"):
        assert f"`{option}" in run
    assert "`--relative-tolerance R`" in compare and "`--no-timings`" in compare


def test_each_option_table_has_a_row_per_option_with_its_help():
    for command in COMMANDS:
        parser = command_parsers()[command.name]
        table = option_table(command.name).splitlines()
        assert table[:2] == ["| option | meaning |", "|:--|:--|"]
        assert [row.split("`")[1].split()[0] for row in table[2:]] == options_of(parser)


def test_what_a_user_must_type_is_in_the_command_column():
    rows = {row.split("`")[1].split()[1]: row.split(" | ")[0] for row in command_table().splitlines()[2:]}
    assert rows["run"] == "| `seqkeras run PATH...`"
    assert rows["compare"] == "| `seqkeras compare A B`"
    assert rows["predict"] == "| `seqkeras predict RUN (--text TEXT... \\| --file FILE)`"


def test_a_cell_escapes_pipes_everywhere_and_tags_outside_code():
    assert cell("|B − A| in `results/<name>` and <name>") == "\\|B − A\\| in `results/<name>` and \\<name>"
    assert cell("`a|b`") == "`a\\|b`"


def test_every_command_and_argument_is_described_and_its_help_prints(capsys):
    parsers = command_parsers()
    for command in COMMANDS:
        assert command.summary and command.exit_status.startswith("0"), command.name
        for action in parsers[command.name]._actions:
            assert action.help, (command.name, action.dest)
        with pytest.raises(SystemExit) as exited:
            main([command.name, "--help"])
        assert exited.value.code == 0
        printed = " ".join(capsys.readouterr().out.split())
        assert printed.startswith(f"usage: seqkeras {command.name}") and "exit status: 0" in printed


def test_run_options_are_the_run_commands_options():
    """cli.command_run builds RunOptions from the arguments by name: each field is an option's dest, and back."""
    run = command_parsers()["run"]
    destinations = {action.dest for action in run._actions if action.option_strings and action.dest != "help"}
    assert destinations == {field.name for field in fields(RunOptions)}
    args = build_parser().parse_args(["run", "x.yaml", "--jobs", "2", "--set", "a=1", "--executor", "ray"])
    options = RunOptions(**{field.name: getattr(args, field.name) for field in fields(RunOptions)})
    assert (options.jobs, options.overrides, options.executor, options.out) == (2, ["a=1"], "ray", "results")


def test_the_command_line_does_not_import_the_generators():
    code = ("import sys; from seqkeras.cli import build_parser; build_parser(); "
            "print(sorted(m for m in sys.modules if m.startswith('seqkeras.generated_files')))")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
