"""A results folder someone else wrote is read safely: `report`, `table`, `compare` and `run`'s reuse check.

A shared results folder (a colleague's sweep, a course's reference results) is
input this machine did not write. Each case here takes a copy of a committed
results folder, makes it hostile in one way, and runs a command on it through
the command line, in a thread with a deadline (a FIFO opened for reading would
block forever). Every case checks that:

- a name taken from a record (a plot's file in plots.json, a run id in runs.csv)
  that leaves the folder is refused with a warning naming it;
- a symbolic link below the folder the user named (a plot, experiment.yaml, a run
  folder, a metrics.json) is refused with a warning naming it, and what it points
  at is never copied, inlined or listed: its content never appears in the site;
- a FIFO or an oversized file is named, never opened for long or read whole;
- the rest of the report or table still renders;
- nothing is written outside the `--out` (or results folder) the user named.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
from pathlib import Path
from urllib.parse import quote

import pandas as pd
import pytest

from seqkeras.errors import SpecError
from seqkeras.reporting.metric_chart import CHART_FILE
from seqkeras.results import files
from tests.conftest import REPO, TINY_TRAINING_SPEC
from tests.helpers import run_cli_within

DEADLINE_S = 60  # each case takes a few seconds; a hang is what this catches
BASE = "lesson-memory-lstm"  # a probe: three runs, a memory.png, a memory.csv per run
SECRET = "SECRET-CONTENT-4f1c9"  # what files outside the results folder hold: it must never reach the site


def no_folder_plot_shown(page: str) -> bool:
    """No image of the results folder's own plots on the page: only the report's chart of the main metric,
    which the report draws from runs.csv (reporting.metric_chart), may be there."""
    return all(src.startswith(CHART_FILE) for src in re.findall(r'<img src="([^"]+)"', page))


def cli(capsys, *args):
    """`seqkeras ARGS...` in this process, within DEADLINE_S."""
    return run_cli_within(DEADLINE_S, capsys, *args)


def tree(root: Path, leave_out: Path | None = None) -> dict[str, tuple[int, int, int]]:
    """Every entry below `root` (links not followed) but `leave_out`'s: (kind, size, mtime) by relative name."""
    entries = {}
    for folder, dirs, names in os.walk(root, followlinks=False):
        for name in dirs + names:
            path = Path(folder) / name
            if leave_out is not None and (path == leave_out or leave_out in path.parents):
                continue
            info = os.lstat(path)
            kind = stat.S_IFMT(info.st_mode)  # a folder's own times change with what is made in it: its entries tell
            entries[path.relative_to(root).as_posix()] = (kind, 0, 0) if stat.S_ISDIR(info.st_mode) \
                else (kind, info.st_size, info.st_mtime_ns)
    return entries


def site_text(out: Path) -> str:
    """The text of every regular file the report wrote (links are not followed: none should be there)."""
    texts = []
    for _, path in files.regular_files(out):
        texts.append(path.read_bytes().decode("utf-8", errors="replace"))
    return "\n".join(texts)


@pytest.fixture
def shared(tmp_path):
    """(a copy of a committed results folder inside tmp_path/colleague, tmp_path/outside holding secrets)."""
    folder = tmp_path / "colleague" / BASE
    shutil.copytree(REPO / "results" / BASE, folder, symlinks=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{SECRET}\n")
    (outside / "secret.yaml").write_text(f"secret_key: {SECRET}\n")
    (outside / "victim.png").write_text("the victim's own bytes\n")
    return folder, outside


def report(capsys, tmp_path, folder: Path, out: Path):
    """`seqkeras report FOLDER --out OUT`: (its result, the report page's text); asserts that nothing was
    written outside OUT and that no secret reached the site."""
    before = tree(tmp_path, leave_out=out)
    result = cli(capsys, "report", folder, "--out", out)
    assert "Traceback" not in result.output
    assert tree(tmp_path, leave_out=out) == before, "report wrote outside --out"
    if out.exists():
        assert not [p for p in out.rglob("*") if p.is_symlink()], "the site holds a link"
        assert SECRET not in site_text(out)
    page = out / folder.name / "report.html"
    return result, page.read_text() if page.is_file() else ""


def runs_of(folder: Path) -> list[str]:
    return list(pd.read_csv(folder / "runs.csv")["run_id"])


def write_manifest(folder: Path, names: list[str]) -> None:
    entries = ",".join(f'{{"file": "{name}", "title": "plot {index}", "source": "memory"}}'
                       for index, name in enumerate(names))
    (folder / "plots.json").write_text(f"[{entries}]\n")


def fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


# --------------------------------------------------------------------------- #
# Names taken from records that leave the folder
# --------------------------------------------------------------------------- #


def test_plot_names_that_leave_the_folder_are_refused_and_nothing_is_copied_outside_out(tmp_path, capsys, shared):
    folder, outside = shared
    out = tmp_path / "deeper" / "site"  # so that ../../victim.png read and written would be two different files
    (out.parent / "outside").mkdir(parents=True)  # where site/<name>/../../outside/ lands: a file of this machine
    (out.parent / "outside" / "victim.png").write_text("deeper's own bytes\n")
    write_manifest(folder, ["memory.png", "../../outside/victim.png", "../../outside/secret.txt",
                            str(outside / "secret.txt"), "sub/../../../outside/secret.txt"])
    result, page = report(capsys, tmp_path, folder, out)
    assert result.code == 0, result.err
    assert (out.parent / "outside" / "victim.png").read_text() == "deeper's own bytes\n"
    assert not (out.parent / "outside" / "secret.txt").exists()
    for name in ("../../outside/secret.txt", str(outside / "secret.txt"), "sub/../../../outside/secret.txt"):
        assert f"warning: {folder / 'plots.json'}: plot file {name!r}" in result.err
    assert '<img src="memory.png"' in page and (out / BASE / "memory.png").is_file()  # the rest renders
    assert "secret" not in page


def test_run_ids_that_are_paths_are_neither_listed_nor_linked(tmp_path, capsys, shared):
    folder, outside = shared
    (outside / "someone").mkdir()
    (outside / "someone" / "private-notes.txt").write_text(SECRET)
    runs = pd.read_csv(folder / "runs.csv")
    ids = list(runs["run_id"])
    runs.loc[0, "run_id"] = str(outside / "someone")
    runs.loc[1, "run_id"] = "../../outside/someone"
    runs.to_csv(folder / "runs.csv", index=False)
    out = tmp_path / "site"
    result, page = report(capsys, tmp_path, folder, out)
    assert result.code == 0, result.err
    assert "private-notes.txt" not in page and "outside/someone/" not in page
    assert f"run id {str(outside / 'someone')!r} is an absolute path" in result.err
    assert "run id '../../outside/someone' leaves its folder" in result.err
    assert f'href="../../colleague/{BASE}/{quote(ids[2])}/"' in page  # the well-formed run is linked


# --------------------------------------------------------------------------- #
# Symbolic links below the folder the user named
# --------------------------------------------------------------------------- #


def test_a_plot_that_is_a_link_is_not_copied(tmp_path, capsys, shared):
    folder, outside = shared
    (folder / "memory.png").unlink()
    (folder / "memory.png").symlink_to(outside / "secret.txt")
    result, page = report(capsys, tmp_path, folder, tmp_path / "site")
    assert result.code == 0, result.err
    assert f"warning: plot left out of the report: {folder / 'memory.png'} is a symbolic link" in result.err
    assert not os.path.lexists(tmp_path / "site" / BASE / "memory.png") and no_folder_plot_shown(page)
    assert "<h2>Tables</h2>" in page  # the rest renders


def test_an_experiment_yaml_that_is_a_link_is_not_inlined(tmp_path, capsys, shared):
    folder, outside = shared
    (folder / "experiment.yaml").unlink()
    (folder / "experiment.yaml").symlink_to(outside / "secret.yaml")
    result, page = report(capsys, tmp_path, folder, tmp_path / "site")
    assert result.code == 0, result.err
    assert f"warning: {folder / 'experiment.yaml'} is a symbolic link" in result.err
    assert "secret_key" not in page and '<img src="memory.png"' in page
    for args in (("table", folder), ("table", folder, "--rebuild"), ("compare", folder, folder)):
        before = tree(tmp_path, leave_out=folder)
        result = cli(capsys, *args)
        assert tree(tmp_path, leave_out=folder) == before
        assert result.code == 0 and SECRET not in result.output and "secret_key" not in result.output, result.err
        assert f"warning: {folder / 'experiment.yaml'} is a symbolic link" in result.err


def test_a_run_folder_that_is_a_link_is_not_listed_rebuilt_or_read(tmp_path, capsys, shared):
    folder, outside = shared
    run_id = runs_of(folder)[0]
    shutil.move(folder / run_id, outside / run_id)
    (outside / run_id / "private-notes.txt").write_text(SECRET)
    (folder / run_id).symlink_to(outside / run_id)
    result, page = report(capsys, tmp_path, folder, tmp_path / "site")
    assert result.code == 0, result.err
    assert "private-notes.txt" not in page and f"{quote(run_id)}/" not in page and f">{run_id}<" in page
    assert f"warning: {folder / run_id} is a symbolic link" in result.err
    before = tree(tmp_path, leave_out=folder)
    result = cli(capsys, "table", folder, "--rebuild")
    assert tree(tmp_path, leave_out=folder) == before
    assert result.code == 0 and f"{folder / run_id}" in result.err and "symbolic link" in result.err
    assert run_id not in runs_of(folder) and len(runs_of(folder)) == 2


def test_a_metrics_json_that_is_a_link_is_not_read(tmp_path, capsys, shared):
    folder, outside = shared
    run_id = runs_of(folder)[1]
    shutil.move(folder / run_id / "metrics.json", outside / "metrics.json")
    (folder / run_id / "metrics.json").symlink_to(outside / "metrics.json")
    before = tree(tmp_path, leave_out=folder)
    result = cli(capsys, "table", folder, "--rebuild")
    assert tree(tmp_path, leave_out=folder) == before
    assert result.code == 0, result.err
    assert f"{folder / run_id / 'metrics.json'}" in result.err and "symbolic link" in result.err
    assert run_id not in runs_of(folder)


def test_a_root_whose_experiment_folder_is_a_link_leaves_it_out(tmp_path, capsys, shared):
    folder, outside = shared
    shutil.copytree(folder, outside / "elsewhere")
    (folder.parent / "linked").symlink_to(outside / "elsewhere")
    result, _ = report(capsys, tmp_path, folder.parent, tmp_path / "site")
    assert result.code == 0, result.err
    assert f"warning: {folder.parent / 'linked'} is a symbolic link" in result.err
    assert not (tmp_path / "site" / "linked").exists() and (tmp_path / "site" / BASE / "report.html").is_file()
    result = cli(capsys, "compare", folder.parent, folder.parent)
    assert f"warning: {folder.parent / 'linked'} is a symbolic link" in result.err


# --------------------------------------------------------------------------- #
# FIFOs and oversized files
# --------------------------------------------------------------------------- #


def test_a_fifo_as_plots_json_is_named_and_the_page_renders_without_plots(tmp_path, capsys, shared):
    folder, _ = shared
    fifo(folder / "plots.json")
    result, page = report(capsys, tmp_path, folder, tmp_path / "site")
    assert result.code == 0, result.err
    assert f"warning: {folder / 'plots.json'} is a FIFO" in result.err
    assert no_folder_plot_shown(page) and "<h2>Tables</h2>" in page
    assert stat.S_ISFIFO(os.lstat(folder / "plots.json").st_mode)  # not redrawn over: the folder is not ours


def test_a_fifo_as_experiment_yaml_is_named(tmp_path, capsys, shared):
    folder, _ = shared
    fifo(folder / "experiment.yaml")
    result, page = report(capsys, tmp_path, folder, tmp_path / "site")
    assert result.code == 0, result.err
    assert f"warning: {folder / 'experiment.yaml'} is a FIFO" in result.err and "<h2>Tables</h2>" in page
    result = cli(capsys, "compare", folder, folder)
    assert f"warning: {folder / 'experiment.yaml'} is a FIFO" in result.err


def test_a_fifo_as_runs_csv_is_an_error_naming_it(tmp_path, capsys, shared):
    folder, _ = shared
    fifo(folder / "runs.csv")
    for args in (("table", folder), ("compare", folder, folder)):
        before = tree(tmp_path)
        result = cli(capsys, *args)
        assert result.code == 2 and f"{folder / 'runs.csv'} is a FIFO" in result.err, result.err
        assert tree(tmp_path) == before
    result, _ = report(capsys, tmp_path, folder, tmp_path / "site")
    assert result.code == 2 and f"{folder / 'runs.csv'} is a FIFO" in result.err, result.err


@pytest.mark.tensorflow  # the lesson's experiment, computed on TensorFlow
def test_a_fifo_as_metrics_json_is_skipped_by_rebuild_and_by_run_s_reuse_check(tmp_path, capsys, shared):
    folder, _ = shared
    run_id = runs_of(folder)[2]
    fifo(folder / run_id / "metrics.json")
    before = tree(tmp_path)
    result = cli(capsys, "run", REPO / "experiments/lesson/memory_lstm.yaml", "--out", folder.parent, "--dry-run")
    assert tree(tmp_path) == before
    assert result.code == 0, result.err
    assert run_id in result.output and "damaged" in result.output
    before = tree(tmp_path, leave_out=folder)
    result = cli(capsys, "table", folder, "--rebuild")
    assert tree(tmp_path, leave_out=folder) == before
    assert result.code == 0 and f"{folder / run_id / 'metrics.json'}" in result.err and "FIFO" in result.err
    assert len(runs_of(folder)) == 2


@pytest.mark.parametrize("name", ["plots.json", "memory.png"])
def test_a_link_to_dev_zero_is_refused_unread(tmp_path, capsys, shared, name):
    folder, _ = shared
    (folder / name).unlink()
    (folder / name).symlink_to("/dev/zero")
    result, page = report(capsys, tmp_path, folder, tmp_path / "site")
    assert result.code == 0, result.err
    assert f"{folder / name} is a symbolic link" in result.err and no_folder_plot_shown(page)


def test_a_run_s_metrics_json_linked_to_dev_zero_is_refused_unread(tmp_path, capsys, shared):
    folder, _ = shared
    run_id = runs_of(folder)[0]
    (folder / run_id / "metrics.json").unlink()
    (folder / run_id / "metrics.json").symlink_to("/dev/zero")
    result = cli(capsys, "table", folder, "--rebuild")
    assert result.code == 0 and f"{folder / run_id / 'metrics.json'}" in result.err, result.err


def test_oversized_files_are_refused_by_their_size_unread(tmp_path, capsys, shared):
    folder, _ = shared
    with open(folder / "memory.png", "r+b") as handle:  # sparse: no disk, and nothing may read it whole
        handle.truncate(files.FILE_LIMIT + 1)
    result, page = report(capsys, tmp_path, folder, tmp_path / "site")
    assert result.code == 0, result.err
    assert f"warning: plot left out of the report: {folder / 'memory.png'} is " in result.err
    assert "the limit is" in result.err and no_folder_plot_shown(page)
    assert not (tmp_path / "site" / BASE / "memory.png").exists()
    with open(folder / "plots.json", "r+b") as handle:
        handle.truncate(files.TEXT_LIMIT + 1)
    result, page = report(capsys, tmp_path, folder, tmp_path / "site")
    assert result.code == 0 and f"{folder / 'plots.json'} is " in result.err and "the limit is" in result.err


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs Linux's /proc")
def test_read_bytes_is_bounded_by_what_it_reads_not_by_the_size_it_claims():
    assert os.stat("/proc/self/status").st_size == 0  # claims nothing, holds a page
    with pytest.raises(SpecError, match="is over 16 bytes"):
        files.read_bytes(Path("/proc/self"), "status", limit=16)
    assert "Name:" in files.read_text(Path("/proc/self"), "status")


# --------------------------------------------------------------------------- #
# A report into the folder's own parent
# --------------------------------------------------------------------------- #


def test_a_report_into_the_folder_s_own_parent_writes_its_page_beside_its_results(tmp_path, capsys, shared):
    folder, _ = shared
    plot = (folder / "memory.png").read_bytes()
    result, page = report(capsys, tmp_path, folder, folder.parent)
    assert result.code == 0, result.err
    assert '<img src="memory.png"' in page and (folder / "memory.png").read_bytes() == plot
    assert (folder.parent / "index.html").is_file()


def test_an_experiment_yaml_of_aliases_that_expand_to_billions_is_refused_unexpanded(tmp_path, capsys, shared):
    folder, _ = shared
    laughs = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    laughs += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    (folder / "experiment.yaml").write_text("\n".join([*laughs, "name: lesson-memory-lstm", "matrix: *a9", ""]))
    for args in (("table", folder), ("compare", folder, folder)):
        result = cli(capsys, *args)
        assert result.code == 0 and "once aliases (*name) are expanded" in result.err, result.err
    result, page = report(capsys, tmp_path, folder, tmp_path / "site")
    assert result.code == 0 and "<h2>Tables</h2>" in page, result.err


def test_a_run_s_curve_or_outputs_file_that_is_a_link_is_neither_read_nor_listed(tmp_path, capsys, shared):
    folder, outside = shared
    run_id = runs_of(folder)[0]
    (outside / "outputs.csv").write_text(f"decoder,source,reference,output\ngreedy,{SECRET},a,b\n")
    (folder / run_id / "memory.csv").unlink()
    (folder / run_id / "memory.csv").symlink_to(outside / "secret.txt")
    (folder / run_id / "outputs.csv").symlink_to(outside / "outputs.csv")
    result, page = report(capsys, tmp_path, folder, tmp_path / "site")
    assert result.code == 0, result.err
    for name in ("memory.csv", "outputs.csv"):
        assert f"{folder / run_id / name} is a symbolic link" in result.err
        assert f"{quote(run_id)}/{name}" not in page
    assert f"{quote(runs_of(folder)[1])}/memory.csv" in page  # the other runs' files are listed
    before = tree(tmp_path, leave_out=folder)
    result = cli(capsys, "table", folder, "--rebuild")  # redraws the plots from the curves
    assert tree(tmp_path, leave_out=folder) == before
    assert result.code == 0 and f"{folder / run_id / 'memory.csv'} is a symbolic link" in result.err, result.err
    assert (folder / "memory.png").is_file() and SECRET not in result.output


def test_a_folder_without_plots_json_has_its_plots_drawn_into_out_not_into_itself(capsys, tmp_path, shared):
    """Results written before plots existed are drawn for the report, into --out: the shared folder is input."""
    folder, _ = shared
    (folder / "plots.json").unlink()
    for png in folder.glob("*.png"):
        png.unlink()
    out = tmp_path / "site"
    result, page = report(capsys, tmp_path, folder, out)
    assert result.code == 0, result.output
    drawn = sorted(p.name for p in (out / folder.name).glob("*.png"))
    assert drawn and all(f'src="{name}"' in page for name in drawn)
    assert not list(folder.glob("*.png")) and not (folder / "plots.json").exists()


@pytest.mark.parametrize("link", ["experiment", "run folder", "checkpoint folder"])
def test_run_refuses_to_write_through_a_linked_folder_in_its_results(capsys, tmp_path, shared, link):
    """A link to a folder inside the results would send a run's records or checkpoints outside --out: the
    command refuses before anything runs, naming the link."""
    folder, outside = shared
    root = folder.parent
    run_id = runs_of(folder)[0]
    if link == "experiment":
        moved = tmp_path / "elsewhere"
        folder.rename(moved)
        folder.symlink_to(moved)
        linked = folder
    elif link == "run folder":
        shutil.rmtree(folder / run_id)
        (folder / run_id).symlink_to(outside)
        linked = folder / run_id
    else:
        (folder / run_id / ".resume").symlink_to(outside)
        linked = folder / run_id / ".resume"
    before = tree(outside)
    result = cli(capsys, "run", REPO / "experiments" / "lesson" / "memory_lstm.yaml", "--out", root, "--force")
    assert result.code == 2, result.output
    assert result.err.startswith("error: ") and str(linked) in result.err and "symbolic link" in result.err
    assert tree(outside) == before


@pytest.mark.parametrize("planted", ["lock file linked", "lock file a FIFO", "vocabulary.json linked"])
def test_a_rerun_never_writes_through_a_file_planted_in_its_run_folder(capsys, tmp_path, write_spec, planted,
                                                                       trained_runs):
    """The files a run writes into its folder (its lock, its vocabulary) are replaced or refused when someone
    left a link or a FIFO in their place: no file outside --out is created or changed, nothing blocks."""
    spec = write_spec(TINY_TRAINING_SPEC)
    root = tmp_path / "colleague"
    trained_runs.copied_experiment(TINY_TRAINING_SPEC, root)  # a colleague's finished results of the spec
    run = sorted(p for p in (root / "tiny").iterdir() if p.is_dir())[0]
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.json").write_text("the victim's own bytes\n")
    if planted == "lock file linked":
        (run / ".lock").unlink()
        (run / ".lock").symlink_to(outside / "created-by-the-lock")
    elif planted == "lock file a FIFO":
        (run / ".lock").unlink()
        os.mkfifo(run / ".lock")
    else:
        (run / "vocabulary.json").unlink()
        (run / "vocabulary.json").symlink_to(outside / "victim.json")
    before = tree(outside)
    # The planted run alone is rerun (--only its cell and seed): the other runs of the spec hold nothing planted.
    record = json.loads((run / "metrics.json").read_text())
    only = [*(f"--only={key}={value}" for key, value in record["matrix"].items()), f"--only=seed={record['seed']}"]
    result = cli(capsys, "run", spec, "--out", root, "--force", *only)
    assert "Traceback" not in result.output
    assert tree(outside) == before, "the rerun wrote outside --out"
    if planted.startswith("lock file"):
        assert result.code == 1 and "the lock file is a symbolic link or a FIFO" in result.output
    else:
        assert result.code == 0 and not (run / "vocabulary.json").is_symlink()
