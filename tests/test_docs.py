"""The documentation: README.md, docs/**/*.md and benchmarks/README.md.

What is checked:
- every include block holds exactly the text of the file (or section) it names,
  so results tables in the docs are copies of the committed ones, never retyped;
- README.md is a front page: at most 200 lines, showing `make run` and `make test`;
- every relative Markdown link and image points to a file that exists (and a
  `#anchor` into a Markdown file to one of its headings);
- every `seqkeras ...` command shown in a fenced code block runs and exits as the
  docs say (0 unless the line ends in a comment `# exit N`): `run` as a dry run
  (`--dry-run` appended), the others on copies of the results they read, with
  their output folders in a temporary folder; nothing is written in the repository;
- every complete experiment shown in a ```yaml block (one with `version:`) validates.

Include blocks (paths relative to the repository root):

    <!-- include: results/<name>/table.md -->             the whole file
    <!-- include: results/<name>/table.md#<heading> -->   one section: the lines under the
                                                          heading `## <heading>` up to the next
                                                          heading, without the heading itself
    <!-- include: benchmarks/results/<file>.csv -->       a benchmark CSV, as `make bench` prints it
    <!-- include: benchmarks/results/<file>.csv#<a>,<b> -->  its rows of benchmarks a and b
    (the included text)
    <!-- end include -->

`python tests/test_docs.py --update` rewrites every block from the file it names; never
edit a block by hand. benchmarks/README.md shows each benchmark's newest figures: the
newest CSV, then each older CSV's rows of the benchmarks no newer one measured (a
partial `run_all.py --only` run leaves the others' figures shown).

Shown commands run in this process (`seqkeras.cli.main`, from the repository's root), as a user's shell
would run them but without a new interpreter each; those that log to MLflow (`--track`, `track`) run in a
subprocess of their own, so that MLflow's process-wide state stays theirs.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
BENCH_RESULTS = REPO / "benchmarks" / "results"
BENCH_COLUMNS = ["benchmark", "figure", "value", "unit", "baseline", "ratio", "goal", "met"]
MAX_README_LINES = 200


def doc_files() -> list[Path]:
    """README.md, every Markdown file under docs/, and benchmarks/README.md."""
    files = [README, *sorted((REPO / "docs").rglob("*.md")), REPO / "benchmarks" / "README.md"]
    return [f for f in files if f.is_file()]


def rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def fenced_lines(text: str) -> list[tuple[int, str, str]]:
    """(line number, info string of the block, line) for every line inside a fenced code block."""
    found, fence, info = [], None, ""
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if fence is None:
            opening = re.match(r"(`{3,}|~{3,})\s*([\w+-]*)", stripped)
            if opening:
                fence, info = opening[1], opening[2]
        elif stripped.startswith(fence) and not stripped.strip(fence[0]):
            fence = None
        else:
            found.append((number, info, line))
    return found


# --------------------------------------------------------------------------- #
# Include blocks
# --------------------------------------------------------------------------- #

INCLUDE = re.compile(
    r"^<!-- include: (?P<target>[^#\n]+?)(?:#(?P<section>[^\n]+?))? -->\n(?P<body>.*?)^<!-- end include -->$",
    re.MULTILINE | re.DOTALL,
)
HEADING = re.compile(r"^#{1,6} ")


@dataclass
class Include:
    doc: Path
    line: int
    target: str
    section: str | None
    body: str

    @property
    def label(self) -> str:
        return f"{rel(self.doc)}:{self.line} ({self.target}{'#' + self.section if self.section else ''})"


def include_matches(text: str) -> list[re.Match]:
    """The include blocks of a Markdown text; one shown inside a code block is an example, not a block."""
    fenced = {number for number, _, _ in fenced_lines(text)}
    return [m for m in INCLUDE.finditer(text) if text.count("\n", 0, m.start()) + 1 not in fenced]


def includes(doc: Path) -> list[Include]:
    text = doc.read_text(encoding="utf-8")
    return [
        Include(doc, text.count("\n", 0, m.start()) + 1, m["target"].strip(), m["section"], m["body"].strip("\n"))
        for m in include_matches(text)
    ]


def render(target: str, section: str | None) -> str:
    """The text an include block must hold."""
    path = (REPO / target).resolve()
    if REPO not in path.parents or not path.is_file():
        raise FileNotFoundError(f"{target}: no such file in the repository")
    if path.suffix == ".csv":
        return benchmark_table(path, section.split(",") if section else None)
    lines = path.read_text(encoding="utf-8").splitlines()
    if section is None:
        return "\n".join(lines).strip("\n")
    try:
        start = lines.index(f"## {section}") + 1
    except ValueError:
        found = [line[3:] for line in lines if line.startswith("## ")]
        raise ValueError(f"{target}: no section '## {section}'; its sections: {found}") from None
    end = next((i for i in range(start, len(lines)) if HEADING.match(lines[i])), len(lines))
    return "\n".join(lines[start:end]).strip("\n")


def benchmark_table(path: Path, benchmarks: list[str] | None = None) -> str:
    """A bench-*.csv as benchmarks/run_all.py prints it (blanks, not nan), under the machine and time it names;
    only the rows of `benchmarks` when given."""
    import pandas as pd

    frame = pd.read_csv(path)
    if benchmarks is not None:
        missing = sorted(set(benchmarks) - set(frame["benchmark"]))
        if missing:
            raise ValueError(f"{rel(path)} has no benchmark {missing}")
        frame = frame[frame["benchmark"].isin(benchmarks)]
    table = frame[BENCH_COLUMNS]
    caption = f"`{rel(path)}`: {frame['machine'].iloc[0]}; measured {frame['measured_at'].iloc[0]}."
    return caption + "\n\n" + table.astype(object).where(table.notna(), "").to_markdown(index=False)


def newest_benchmark_csv() -> Path:
    return max(p for p in BENCH_RESULTS.glob("bench-*.csv") if not p.name.startswith("bench-tiny"))


def newest_benchmark_includes() -> list[str]:
    """The include targets that show each benchmark's newest figures: the newest CSV whole, then each older
    CSV with the benchmarks no newer CSV has (`file.csv#a,b`), newest first."""
    import pandas as pd

    seen: set[str] = set()
    targets = []
    for path in sorted((p for p in BENCH_RESULTS.glob("bench-*.csv") if not p.name.startswith("bench-tiny")),
                       reverse=True):
        names = list(dict.fromkeys(pd.read_csv(path)["benchmark"]))
        new = [name for name in names if name not in seen]
        if new:
            targets.append(rel(path) if not seen else f"{rel(path)}#{','.join(new)}")
        seen.update(names)
    return targets


ALL_INCLUDES = [inc for doc in doc_files() for inc in includes(doc)]


def test_docs_have_include_blocks():
    assert ALL_INCLUDES, "no include blocks found: results tables must be included, not pasted"


@pytest.mark.parametrize("block", ALL_INCLUDES, ids=lambda b: b.label)
def test_include_block_matches_its_file(block: Include):
    expected = render(block.target, block.section)
    assert block.body == expected, (
        f"{block.label} differs from the file it names; run `python tests/test_docs.py --update`"
    )


def test_benchmark_table_is_the_newest():
    bench_readme = REPO / "benchmarks" / "README.md"
    if not bench_readme.is_file():
        pytest.skip("no benchmarks/README.md")
    shown = [inc.target + (f"#{inc.section}" if inc.section else "") for inc in includes(bench_readme)
             if inc.target.endswith(".csv")]
    assert shown[0] == rel(newest_benchmark_csv()) and shown == newest_benchmark_includes(), (
        f"benchmarks/README.md shows {shown}; each benchmark's newest figures are {newest_benchmark_includes()} "
        "(`python tests/test_docs.py --update` points it there)"
    )


def is_benchmark_include(match: re.Match) -> bool:
    target = match["target"].strip()
    return target.startswith("benchmarks/results/bench-") and target.endswith(".csv")


def block(target: str, section: str | None) -> str:
    head = f"<!-- include: {target}{'#' + section if section else ''} -->"
    return f"{head}\n\n{render(target, section)}\n\n<!-- end include -->"


def update() -> None:
    """Rewrite every include block from its file; the benchmark CSV includes become those of each benchmark's
    newest figures (`newest_benchmark_includes`), in the place of the first of them."""
    newest = newest_benchmark_includes() if BENCH_RESULTS.is_dir() else []

    def fill(match: re.Match, first_benchmark: bool) -> str:
        if newest and is_benchmark_include(match):
            if not first_benchmark:
                return ""
            return "\n\n".join(block(*(target.split("#") + [None])[:2]) for target in newest)
        return block(match["target"].strip(), match["section"])

    for doc in doc_files():
        text = doc.read_text(encoding="utf-8")
        new = text
        matches = include_matches(text)
        first = next((m for m in matches if is_benchmark_include(m)), None)
        for match in reversed(matches):
            filled = fill(match, match is first)
            end = match.end()
            if not filled:  # a later benchmark block, replaced by the first's series: its blank lines go too
                while new[end : end + 1] == "\n":
                    end += 1
            new = new[: match.start()] + filled + new[end:]
        if new != text:
            doc.write_text(new, encoding="utf-8")
            print(f"updated {rel(doc)}")


# --------------------------------------------------------------------------- #
# The front page
# --------------------------------------------------------------------------- #


def test_readme_is_a_front_page():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_README_LINES, f"README.md has {len(text.splitlines())} lines"
    shown = "\n".join(line for _, _, line in fenced_lines(text))
    for command in ("make run", "make test"):
        assert command in shown, f"README.md shows no `{command}` in a code block"


# --------------------------------------------------------------------------- #
# Links
# --------------------------------------------------------------------------- #

LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def prose(text: str) -> str:
    """The text outside fenced code blocks and inline code spans."""
    inside = {number for number, _, _ in fenced_lines(text)}
    lines = [line for number, line in enumerate(text.splitlines(), 1) if number not in inside]
    return re.sub(r"`[^`\n]*`", "", "\n".join(lines))


def anchors(doc: Path) -> set[str]:
    """GitHub's anchors for the headings of a Markdown file."""
    seen: dict[str, int] = {}
    result = set()
    text = doc.read_text(encoding="utf-8")
    fenced = {number for number, _, _ in fenced_lines(text)}
    for number, line in enumerate(text.splitlines(), 1):
        if number in fenced or not HEADING.match(line):
            continue
        slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        result.add(slug if count == 0 else f"{slug}-{count}")
    return result


def links() -> list[tuple[Path, str]]:
    return [(doc, target) for doc in doc_files() for target in LINK.findall(prose(doc.read_text(encoding="utf-8")))]


@pytest.mark.parametrize("doc, target", links(), ids=lambda v: rel(v) if isinstance(v, Path) else v)
def test_relative_link_points_to_a_file(doc: Path, target: str):
    if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
        return
    path_part, _, anchor = target.partition("#")
    destination = (doc.parent / path_part).resolve() if path_part else doc
    assert destination.exists(), f"{rel(doc)}: link to {target}: no such file"
    assert REPO in destination.parents or destination == REPO, f"{rel(doc)}: link to {target} leaves the repository"
    if anchor and destination.suffix == ".md":
        assert anchor in anchors(destination), f"{rel(doc)}: link to {target}: no such heading"


# --------------------------------------------------------------------------- #
# Shown commands
# --------------------------------------------------------------------------- #

EXIT_NOTE = re.compile(r"#.*\bexit(?: status)? (\d+)")


@dataclass
class Shown:
    doc: Path
    line: int
    text: str
    argv: list[str]
    exit_status: int

    @property
    def label(self) -> str:
        return f"{rel(self.doc)}:{self.line}: {self.text}"


def shown_commands() -> list[Shown]:
    """Every line of a fenced code block that starts with `seqkeras ` (after an optional `$ `)."""
    commands = []
    for doc in doc_files():
        for number, _, line in fenced_lines(doc.read_text(encoding="utf-8")):
            text = line.strip()
            if text.startswith("$ "):
                text = text[2:].lstrip()
            if not text.startswith("seqkeras "):
                continue
            note = EXIT_NOTE.search(text)
            argv = shlex.split(text, comments=True)
            commands.append(Shown(doc, number, text.split(" #")[0].rstrip(), argv, int(note[1]) if note else 0))
    return commands


SHOWN = shown_commands()


def option_value(argv: list[str], option: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == option and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(option + "="):
            return arg.split("=", 1)[1]
    return None


def experiment_names(paths: list[str]) -> list[str]:
    """The `name:` of every spec a run's PATHs name (read as plain YAML)."""
    import yaml

    names = []
    for arg in paths:
        path = REPO / arg
        files = sorted(path.rglob("*.yaml")) if path.is_dir() else [path] if path.suffix == ".yaml" else []
        for file in files:
            spec = yaml.safe_load(file.read_text(encoding="utf-8"))
            if isinstance(spec, dict) and "name" in spec:
                names.append(spec["name"])
    return names


@functools.cache  # the docs do not change during a session; reading every shown run's specs took a minute per command
def dry_run_outputs() -> dict[str, list[str]]:
    """The --out folder of each shown run, with the experiments it would write there.

    A dry run writes nothing, so a later shown command that reads such a folder
    reads a stand-in: the committed results of those experiments, which a real
    run reproduces.
    """
    outputs: dict[str, list[str]] = {}
    for shown in SHOWN:
        out = option_value(shown.argv, "--out") if shown.argv[1] == "run" else None
        if out:
            paths = [a for a in shown.argv[2:] if not a.startswith("-") and (REPO / a).exists()]
            outputs.setdefault(Path(out).as_posix(), []).extend(experiment_names(paths))
    return outputs


def stand_in(arg: str, sandbox: Path) -> str | None:
    """The stand-in path for `arg` when it lies in a dry run's output folder, else None."""
    for out, names in dry_run_outputs().items():
        if arg.rstrip("/") == out.rstrip("/") or arg.startswith(out.rstrip("/") + "/"):
            root = sandbox / "stand-in" / re.sub(r"[^\w.-]+", "_", out.strip("/"))
            for name in names:
                if not (root / name).exists() and (REPO / "results" / name).is_dir():
                    shutil.copytree(REPO / "results" / name, root / name)
            root.mkdir(parents=True, exist_ok=True)
            return str(root) + arg[len(out.rstrip("/")):]
    return None


def sandboxed(argv: list[str], sandbox: Path) -> list[str]:
    """The command as the test runs it: nothing it writes may land in the repository."""
    command, args = argv[1], list(argv[2:])
    if command == "run":
        return [command, *args] + ([] if "--dry-run" in args else ["--dry-run"])
    result, previous = [], None
    for arg in args:
        if previous == "--out":
            arg = str(sandbox / "out" / Path(arg).name)
        elif (replacement := stand_in(arg, sandbox)) is not None:
            arg = replacement
        elif not arg.startswith("-") and (REPO / arg).exists() and Path(arg).parts[0] == "results":
            copy = sandbox / arg
            if not copy.exists():
                copy.parent.mkdir(parents=True, exist_ok=True)
                (shutil.copytree if (REPO / arg).is_dir() else shutil.copy2)(REPO / arg, copy)
            arg = str(copy) + ("/" if arg.endswith("/") else "")
        result.append(arg)
        previous = arg if arg.startswith("-") else None
    return [command, *result]


def snapshot() -> dict[str, tuple[int, int]]:
    """Size and modification time of the files a command could write to by mistake."""
    files = [p for p in REPO.iterdir() if p.is_file()]
    for folder in ("results", "experiments", "docs"):
        files += [p for p in (REPO / folder).rglob("*") if p.is_file()]
    return {rel(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in files if p.exists()}


# Commands that set up MLflow tracking, which keeps process-wide state (its tracking URI, an active run).
IN_A_SUBPROCESS = ("--track", "track", "export")


def run_cli(args: list[str], capsys, monkeypatch):
    """`seqkeras ARGS...` as the docs show it, from the repository's root: its exit code, stdout and stderr
    (a `tests.helpers.CliRun`; imported here: `python tests/test_docs.py --update` runs without the package)."""
    from tests.helpers import CliRun
    from tests.helpers import run_cli as run_in_process

    if any(arg in IN_A_SUBPROCESS for arg in args):
        done = subprocess.run([sys.executable, "-m", "seqkeras", *args], cwd=REPO, capture_output=True, text=True,
                              timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
        return CliRun(done.returncode, done.stdout, done.stderr)
    monkeypatch.chdir(REPO)
    return run_in_process(capsys, *args)


def test_docs_show_commands():
    assert any(c.argv[1] == "run" for c in SHOWN) and len(SHOWN) >= 5


# An experiment computed on TensorFlow says so (the lesson's do): `backend: tensorflow`.
TENSORFLOW_SPEC = re.compile(r"^backend:\s*tensorflow\b", re.MULTILINE)


def runs_on_tensorflow(shown: Shown) -> bool:
    """Whether a shown `run` asks for TensorFlow or reads an experiment computed on it: the test runs in the
    TensorFlow test process (tests/conftest.py), where the command runs as a user's would, in process."""
    if shown.argv[1] != "run":
        return False
    if option_value(shown.argv, "--backend") == "tensorflow":
        return True
    for arg in shown.argv[2:]:
        path = REPO / arg
        specs = sorted(path.rglob("*.yaml")) if path.is_dir() else [path] if path.suffix == ".yaml" else []
        if any(spec.is_file() and TENSORFLOW_SPEC.search(spec.read_text(encoding="utf-8")) for spec in specs):
            return True
    return False


@pytest.mark.parametrize("shown", [
    pytest.param(shown, id=shown.label, marks=[pytest.mark.tensorflow] if runs_on_tensorflow(shown) else [])
    for shown in SHOWN
])
def test_shown_command_runs(shown: Shown, tmp_path: Path, capsys, monkeypatch):
    assert shown.argv[0] == "seqkeras" and len(shown.argv) > 1
    args = sandboxed(shown.argv, tmp_path)
    before = snapshot()
    done = run_cli(args, capsys, monkeypatch)
    changed = sorted(k for k, v in snapshot().items() if before.get(k) != v)
    assert done.code == shown.exit_status, (
        f"{shown.label}\nran: seqkeras {shlex.join(args)}\nexit status {done.code}, "
        f"the docs say {shown.exit_status}\n--- stdout\n{done.out[-3000:]}\n--- stderr\n{done.err[-3000:]}"
    )
    assert not changed, f"{shown.label} wrote into the repository: {changed[:10]}"


# --------------------------------------------------------------------------- #
# Shown experiments
# --------------------------------------------------------------------------- #


def shown_specs() -> list:
    """Every ```yaml block that is a whole experiment (it has a top-level `version:`)."""
    specs = []
    for doc in doc_files():
        blocks: dict[int, list[str]] = {}
        lines = fenced_lines(doc.read_text(encoding="utf-8"))
        start = None
        for i, (number, info, line) in enumerate(lines):
            if i == 0 or lines[i - 1][0] != number - 1:
                start = number
            if info == "yaml":
                blocks.setdefault(start, []).append(line)
        for start, body in blocks.items():
            text = textwrap.dedent("\n".join(body)) + "\n"
            if re.search(r"^version:", text, re.MULTILINE):
                specs.append(pytest.param(doc, start, text, id=f"{rel(doc)}:{start}"))
    return specs


@pytest.mark.parametrize("doc, line, text", shown_specs())
def test_shown_experiment_validates(doc: Path, line: int, text: str, tmp_path: Path, capsys, monkeypatch):
    spec = tmp_path / "shown.yaml"
    spec.write_text(text, encoding="utf-8")
    done = run_cli(["validate", str(spec)], capsys, monkeypatch)
    assert done.code == 0, f"{rel(doc)}:{line}: the experiment shown does not validate:\n{done.err}"


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python tests/test_docs.py --update   (rewrites every include block in the docs)")
    update()
