"""The command line as Markdown, read from its parser: the README's command table and docs/spec.md's table of
each command's options.

The help texts in `seqkeras.cli` are the one description of the command line; these tables are generated from
them (`make generate`, `generate`) and never edited by hand.
"""

from __future__ import annotations

import argparse
import re

from seqkeras.cli import COMMANDS, build_parser

CODE_SPAN = re.compile(r"(`[^`]*`)")


def command_table() -> str:
    """The README's table: each command as a user types it, what it does, its options and its exit status."""
    subparsers = command_parsers()
    lines = ["| command | what it does | options | exit status |", "|:--|:--|:--|:--|"]
    for command in COMMANDS:
        parser = subparsers[command.name]
        usage = " ".join(["seqkeras", command.name, *required_synopses(parser)])
        options = " ".join(option_synopsis(action) for action in optional_actions(parser, required=False))
        lines.append(f"| {cell(f'`{usage}`')} | {cell(command.summary)} | {cell(options) or '—'} | "
                     f"{cell(command.exit_status)} |")
    return "\n".join(lines)


def option_table(name: str) -> str:
    """docs/spec.md's table of one command's options (the required ones too), each with its help text."""
    parser = command_parsers()[name]
    actions = optional_actions(parser, required=None)
    if not actions:
        return "No options."
    lines = ["| option | meaning |", "|:--|:--|"]
    lines += [f"| {cell(f'`{synopsis(action)}`')} | {cell(action.help or '')} |" for action in actions]
    return "\n".join(lines)


def command_parsers() -> dict[str, argparse.ArgumentParser]:
    """Each command's parser, by name, as `seqkeras` builds them."""
    parser = build_parser()
    (subparsers,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(subparsers.choices)


def optional_actions(parser: argparse.ArgumentParser, required: bool | None) -> list[argparse.Action]:
    """The parser's options (not its positionals, not --help), in the order they were added; only those a user
    must give (a required option, or one of a required group) or must not, unless `required` is None."""
    found = []
    for action in parser._actions:
        if not action.option_strings or isinstance(action, argparse._HelpAction):
            continue
        if required is None or is_required(parser, action) == required:
            found.append(action)
    return found


def is_required(parser: argparse.ArgumentParser, action: argparse.Action) -> bool:
    return action.required or any(group.required and action in group._group_actions
                                  for group in parser._mutually_exclusive_groups)


def required_synopses(parser: argparse.ArgumentParser) -> list[str]:
    """What a user must type after the command: the positionals, then each required option or required group
    of options as `(--a A | --b B)`."""
    synopses = [synopsis(action) for action in parser._actions if not action.option_strings]
    for group in parser._mutually_exclusive_groups:
        if group.required:
            synopses.append("(" + " | ".join(synopsis(action) + repeats(action) for action in group._group_actions)
                            + ")")
    synopses += [synopsis(action) + repeats(action) for action in parser._actions
                 if action.option_strings and action.required]
    return synopses


def option_synopsis(action: argparse.Action) -> str:
    """An option as the README lists it: in code, followed by ... when it may be given again."""
    return f"`{synopsis(action)}`{repeats(action)}"


def repeats(action: argparse.Action) -> str:
    """... after an option that may be given again (`--set KEY=VALUE`...), as a usage line writes it; one that takes
    several values (`--text TEXT...`, given again or not) has its ... already."""
    return "..." if isinstance(action, argparse._AppendAction) and action.nargs not in ("+", "*") else ""


def synopsis(action: argparse.Action) -> str:
    """An argument as a user writes it: `PATH...`, `--out DIR`, `--format md|csv`, `--rows KEY...`, `--force`."""
    if action.option_strings:
        flag = max(action.option_strings, key=len)
        if action.nargs == 0:  # store_true, store_false
            return flag
        value = action.metavar or ("|".join(map(str, action.choices)) if action.choices else action.dest.upper())
        return f"{flag} {value}" + ("..." if action.nargs in ("+", "*") else "")
    return action.metavar + ("..." if action.nargs in ("+", "*") else "")


def cell(text: str) -> str:
    """`text` as one Markdown table cell: | escaped everywhere (a code span too would end the cell at one), and
    outside code spans < escaped, so that `<name>` is shown, not read as an HTML tag."""
    parts = CODE_SPAN.split(text)
    return "".join(part if index % 2 else part.replace("<", "\\<") for index, part in enumerate(parts)).replace(
        "|", "\\|")

