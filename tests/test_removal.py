"""results/removal.py: what a delete or a replace may hit, and a walk over every call of the package that removes,
renames or replaces a path (each is the removal module's, or a listed move inside a folder the suite made)."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

import seqkeras
from seqkeras.errors import SpecError
from seqkeras.results import removal

PACKAGE = Path(seqkeras.__file__).parent

# The calls outside results/removal.py that remove, rename or replace a path, each with why it cannot hit what it
# should not: (module, function) → why. A new one fails test_every_removal_in_the_package_is_known until it is
# listed here, or goes through results.removal.
KNOWN = {
    ("results/folder.py", "write_atomic"): "its own temporary file, renamed onto the file it writes",
    ("results/rerun.py", "recover"): "a run folder's own entries, moved back from its .replaced folder",
    ("results/rerun.py", "replace_with_rerun"): "a run folder's own entries, moved between it and its .rerun folder",
    ("training/trainer.py", "save"): "the checkpoint folder's own epoch*.weights.h5 files",
    ("reporting/plots.py", "_remove_stale"): "PNGs plots.json lists, each a plain name matched by a strict pattern",
    ("kept/reevaluation.py", "merge_files"): "the evaluator's new files moved into the run folder under new names",
    ("kept/export.py", "export_model"): "an empty folder (rmdir removes nothing else)",
    ("tracking/mlflow_store.py", "writable_folder"): "its own probe file, made by mkstemp",
    ("execution/sweep.py", "run_all"): "its own probe file, made by mkstemp",
    ("backends/compile_cache.py", "for_command"): "its own mkdtemp folder (backends import nothing of results)",
}
PATH_CALLS = {"rmtree", "rmdir", "unlink", "rename", "replace", "remove", "removedirs", "renames"}


def removing_calls(tree: ast.AST):
    """(function name, call) for each call that removes, renames or replaces a path: os.*, shutil.rmtree and
    pathlib's methods (a DataFrame's or a string's rename and replace are not, told apart by their arguments)."""
    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) and child.func.attr in PATH_CALLS:
                owner = child.func.value
                module_call = isinstance(owner, ast.Name) and owner.id in ("os", "shutil")
                keywords = {keyword.arg for keyword in child.keywords}
                if module_call or _path_method(child, keywords):
                    yield name, child
            yield from visit(child, name)

    yield from visit(tree, "<module>")


def _path_method(call: ast.Call, keywords: set) -> bool:
    attribute = call.func.attr
    if attribute in ("rename", "replace"):  # pathlib's take one path; str.replace two texts, DataFrame's columns=
        return len(call.args) == 1 and not keywords and not isinstance(call.args[0], ast.Constant)
    if attribute == "remove":  # list.remove: pathlib has no remove
        return False
    return True


def test_every_removal_in_the_package_is_known():
    unknown, seen = [], set()
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module == "results/removal.py":
            continue
        for function, call in removing_calls(ast.parse(path.read_text(encoding="utf-8"))):
            if (module, function) in KNOWN:
                seen.add((module, function))
            else:
                unknown.append(f"{module}:{call.lineno} in {function}: {ast.unparse(call)}")
    assert not unknown, "remove or replace through seqkeras.results.removal, or list the call in KNOWN:\n" + \
        "\n".join(unknown)
    assert seen == set(KNOWN), f"listed but gone (take them out of KNOWN): {set(KNOWN) - seen}"


def test_the_walk_finds_what_it_looks_for():
    source = "import os, shutil\ndef f(p, frame, text):\n    shutil.rmtree(p)\n    p.rename(q)\n" \
             "    frame.rename(columns={})\n    text.replace('a', 'b')\n    os.replace(a, b)\n"
    found = [ast.unparse(call) for _, call in removing_calls(ast.parse(source))]
    assert found == ["shutil.rmtree(p)", "p.rename(q)", "os.replace(a, b)"]


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """A current folder with a note, a results folder beside it and a folder of one's own."""
    here = tmp_path / "here"
    (here / "sub").mkdir(parents=True)
    (here / "note.txt").write_text("keep")
    run = tmp_path / "results" / "exp" / "seed=0_abc"
    run.mkdir(parents=True)
    (run / "metrics.json").write_text("{}")
    (tmp_path / "results" / "exp" / "runs.csv").write_text("run_id\n")
    monkeypatch.chdir(here)
    return tmp_path


def test_a_destination_is_resolved_before_anything_is_checked(workspace):
    assert removal.destination("sub/..") == workspace / "here"
    assert removal.destination(".") == workspace / "here"
    (workspace / "here" / "link").symlink_to(workspace / "results")
    # A link's folders above are resolved, the link itself stays the thing replaced...
    assert removal.destination("link") == workspace / "here" / "link"
    # ...and a path through it is the real one.
    assert removal.destination("link/exp") == workspace / "results" / "exp"


@pytest.mark.parametrize("given, why", [
    ("sub/..", "is the current folder"), (".", "is the current folder"), ("..", "holds the current folder"),
    ("/", "filesystem's root"), ("../results", "holds results of the suite"),
    ("../results/exp", "holds results of the suite"), ("../results/exp/seed=0_abc", "holds results of the suite"),
])
def test_what_must_not_be_hit_is_refused_in_one_line(workspace, given, why):
    with pytest.raises(SpecError, match=why) as caught:
        removal.check_replaceable(removal.destination(given))
    assert "\n" not in str(caught.value) and "never removed or replaced" in str(caught.value)
    assert (workspace / "here" / "note.txt").read_text() == "keep"


def test_the_home_folder_and_what_the_command_reads_are_refused(workspace, monkeypatch):
    monkeypatch.setenv("HOME", str(workspace / "home"))
    (workspace / "home").mkdir()
    with pytest.raises(SpecError, match="home folder"):
        removal.check_replaceable(workspace / "home")
    source = workspace / "mine" / "inner" / "model"
    source.mkdir(parents=True)
    with pytest.raises(SpecError, match="which this command reads"):
        removal.check_replaceable(workspace / "mine", reads=[source])
    removal.check_replaceable(workspace / "other", reads=[source])  # elsewhere: may be replaced


def test_a_link_is_replaced_as_a_link_and_what_it_points_to_stays(workspace):
    (workspace / "here" / "link").symlink_to(workspace / "results")
    target = removal.destination("link")
    removal.check_replaceable(target)  # the link itself is no results folder
    staging = removal.staging_beside(target)
    (staging / "export.json").write_text("{}")
    assert removal.swap_in(staging, target)
    assert (target / "export.json").is_file() and not target.is_symlink()
    assert (workspace / "results" / "exp" / "runs.csv").is_file()
    assert sorted(os.listdir(workspace / "here")) == ["link", "note.txt", "sub"]  # nothing left beside


def test_a_swap_that_fails_leaves_the_old_folder_whole(workspace, monkeypatch):
    old = workspace / "here" / "out"
    old.mkdir()
    (old / "mine.txt").write_text("old")
    staging = removal.staging_beside(old)
    real_rename = Path.rename

    def failing(self, target):
        if self == staging:
            raise OSError("no space left")
        return real_rename(self, target)

    monkeypatch.setattr(Path, "rename", failing)
    with pytest.raises(OSError):
        removal.swap_in(staging, old)
    assert (old / "mine.txt").read_text() == "old"


def test_remove_tree_stays_inside_its_container(workspace):
    inside = workspace / "here" / "sub" / "scratch"
    inside.mkdir()
    removal.remove_tree(inside, inside=workspace / "here" / "sub")
    assert not inside.exists()
    with pytest.raises(ValueError, match="not inside"):
        removal.remove_tree(workspace / "results", inside=workspace / "here")
    with pytest.raises(ValueError, match="current folder"):
        removal.remove_tree(workspace / "here", inside=workspace)
    link = workspace / "here" / "sub" / "link"
    link.symlink_to(workspace / "results")
    removal.remove_tree(link, inside=workspace / "here" / "sub")
    assert not os.path.lexists(link) and (workspace / "results" / "exp" / "runs.csv").is_file()
