"""The MLflow store of a results root that is not to be trusted, and a tracking server that cannot be reached or
whose URI holds a password.

- The store's paths below the results root (`mlflow.db`, its lock and journals, `mlflow-artifacts/`, an explicit
  store inside the root) are made from the root resolved once; a link or a non-regular file there is refused in
  one line before MLflow is called, and nothing is written through it. A store the user named outside the root may
  be a link: the user's choice.
- A tracking server that refuses is said at once, before any MLflow call; MLflow's own call is tried once, with a
  short timeout, its settings put back after; the suite's writes try a few times unless the user set MLflow's
  settings. A password in the URI is shown as *** everywhere: errors, progress lines, warnings, results files.
"""

from __future__ import annotations

import http.server
import json
import os
import socket
import sqlite3
import threading
from pathlib import Path

import pytest

pytest.importorskip("mlflow", reason="pip install -r requirements-tracking.txt")

from seqkeras.errors import SpecError  # noqa: E402
from seqkeras.tracking import mlflow_store  # noqa: E402
from seqkeras.tracking.mlflow_store import check_store, hidden_credentials, parse_track, store_write  # noqa: E402
from seqkeras.tracking.mlflow_tracking import MlflowTracker  # noqa: E402
from tests.helpers import run_cli  # noqa: E402
from tests.test_tracking_stores import fake_results, store_runs  # noqa: E402

RULE = "the store writes only into real files and folders inside the results root"
PASSWORD = "s3cret-Pa55"


@pytest.fixture
def no_mlflow_client(monkeypatch):
    """Every MlflowClient made from here on, recorded (and refused): a refusal must come before MLflow is called."""
    import mlflow.tracking

    made = []

    def refused_client(*args, **kwargs):
        made.append(kwargs.get("tracking_uri", args[0] if args else None))
        raise RuntimeError("an MlflowClient was made")

    monkeypatch.setattr(mlflow.tracking, "MlflowClient", refused_client)
    return made


@pytest.fixture
def no_proxy(monkeypatch):
    """No HTTP proxy in the environment: the check connects to the server itself."""
    for name in list(os.environ):
        if name.lower().endswith("_proxy"):
            monkeypatch.delenv(name)


def sqlite_file(path: Path) -> bytes:
    """A real SQLite database with a row at `path` (someone's file that a link points at); its bytes."""
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE notes (text TEXT)")
        connection.execute("INSERT INTO notes VALUES ('mine')")
    connection.close()
    return path.read_bytes()


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --------------------------------------------------------------------------- #
# The store's paths below the results root
# --------------------------------------------------------------------------- #


def plant_database_link(root: Path, victim: Path) -> None:
    sqlite_file(victim)
    (root / "mlflow.db").symlink_to(victim)


def plant_dangling_link(root: Path, victim: Path) -> None:
    (root / "mlflow.db").symlink_to(victim)  # a file that does not exist yet: SQLite would create it


def plant_lock_link(root: Path, victim: Path) -> None:
    victim.write_text("someone's notes\n")
    (root / "mlflow.db.lock").symlink_to(victim)


def plant_journal_link(root: Path, victim: Path) -> None:
    victim.write_text("someone's notes\n")
    (root / "mlflow.db-journal").symlink_to(victim)


def plant_hard_link(root: Path, victim: Path) -> None:
    sqlite_file(victim)
    os.link(victim, root / "mlflow.db")


def plant_artifacts_link(root: Path, victim: Path) -> None:
    victim.mkdir()
    (root / "mlflow-artifacts").symlink_to(victim, target_is_directory=True)


def plant_fifo(root: Path, victim: Path) -> None:
    os.mkfifo(root / "mlflow.db")


@pytest.mark.parametrize("plant, entry, why", [
    (plant_database_link, "mlflow.db", "is a symbolic link"),
    (plant_dangling_link, "mlflow.db", "is a symbolic link"),
    (plant_lock_link, "mlflow.db.lock", "is a symbolic link"),
    (plant_journal_link, "mlflow.db-journal", "is a symbolic link"),
    (plant_hard_link, "mlflow.db", "is a hard link: the file has 2 names"),
    (plant_artifacts_link, "mlflow-artifacts", "is a symbolic link"),
    (plant_fifo, "mlflow.db", "is not a regular file"),
], ids=["database-link", "dangling-link", "lock-link", "journal-link", "hard-link", "artifacts-link", "fifo"])
def test_track_refuses_a_link_or_special_file_where_the_default_store_writes(tmp_path, capsys, no_mlflow_client,
                                                                             plant, entry, why):
    root = Path(os.path.realpath(tmp_path)) / "results"
    fake_results(root, "exp", 1)
    victim = tmp_path / "victim"
    plant(root, victim)
    before = sorted(victim.iterdir()) if victim.is_dir() else (victim.read_bytes() if victim.exists() else None)
    code, out, err = run_cli(capsys, "track", root, "--track", "mlflow")
    assert code == 2, out + err
    assert err.splitlines() == [
        f"error: --track mlflow=sqlite:///{root / 'mlflow.db'}: {root / entry} {why}; {RULE} {root}"]
    assert no_mlflow_client == []  # refused before MLflow was called
    after = sorted(victim.iterdir()) if victim.is_dir() else (victim.read_bytes() if victim.exists() else None)
    assert after == before  # nothing written through the link (a dangling one's file not created)


def test_run_refuses_a_linked_mlflow_db_before_anything_trains(tiny_spec, tmp_path, capsys, no_mlflow_client):
    out = Path(os.path.realpath(tmp_path)) / "out"
    out.mkdir()
    victim = tmp_path / "someone.db"
    plant_database_link(out, victim)
    before = victim.read_bytes()
    code, _, err = run_cli(capsys, "run", tiny_spec, "--out", out, "--track", "mlflow")
    assert code == 2, err
    assert err.splitlines() == [
        f"error: --track mlflow=sqlite:///{out / 'mlflow.db'}: {out / 'mlflow.db'} is a symbolic link; {RULE} {out}"]
    assert not (out / "tiny").exists() and no_mlflow_client == []
    assert victim.read_bytes() == before


def test_an_explicit_store_inside_the_results_root_is_held_to_the_same_rule(tmp_path, no_mlflow_client):
    real = Path(os.path.realpath(tmp_path)) / "real"
    (real / "exp").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)  # the root the user named is a link: that is allowed
    victim = tmp_path / "victim"
    victim.mkdir()
    (real / "sub").symlink_to(victim, target_is_directory=True)
    # Named through the root's link: checked below the resolved root, and named so.
    with pytest.raises(SpecError) as refused:
        check_store(f"sqlite:///{link / 'sub' / 'store.db'}", link)
    assert refused.value.message == (f"--track mlflow=sqlite:///{link / 'sub' / 'store.db'}: {real / 'sub'} is a "
                                     f"symbolic link; {RULE} {real}")
    (real / "store.db").symlink_to(victim / "store.db")
    with pytest.raises(SpecError, match=f"{real / 'store.db'} is a symbolic link; {RULE}"):
        check_store(f"sqlite:///{real / 'store.db'}", link)
    # A folder store inside the root holds no link anywhere.
    (real / "mlruns" / "0").mkdir(parents=True)
    (real / "mlruns" / "0" / "meta.yaml").symlink_to(victim / "meta.yaml")
    with pytest.raises(SpecError, match=f"{real / 'mlruns' / '0' / 'meta.yaml'} is a symbolic link; {RULE}"):
        check_store(str(link / "mlruns"), link)
    assert list(victim.iterdir()) == [] and no_mlflow_client == []


def test_a_store_the_user_named_outside_the_results_root_may_be_a_link(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "mine.db").symlink_to(elsewhere / "real.db")
    uri = f"sqlite:///{tmp_path / 'mine.db'}"
    store = check_store(uri, tmp_path / "results")
    assert store.uri == uri  # as the user named it
    assert (elsewhere / "real.db").read_bytes().startswith(b"SQLite format 3\x00")  # the user's choice: used


def test_a_results_root_that_is_a_link_is_resolved_once(tmp_path):
    real, other = Path(os.path.realpath(tmp_path)) / "real", tmp_path / "other"
    fake_results(real, "exp", 2)
    other.mkdir()
    link = tmp_path / "results"
    link.symlink_to(real, target_is_directory=True)
    tracker = MlflowTracker(parse_track("mlflow", link), link)
    assert tracker.uri == f"sqlite:///{real / 'mlflow.db'}" and tracker.artifacts == real / "mlflow-artifacts"
    first, second = real / "exp" / "seed=0_00000000", real / "exp" / "seed=1_00000001"
    assert tracker.log(json.loads((first / "metrics.json").read_text()), first) is None
    link.unlink()
    link.symlink_to(other, target_is_directory=True)  # re-pointed while the command runs
    assert tracker.log(json.loads((second / "metrics.json").read_text()), second) is None
    assert list(other.iterdir()) == []  # the store stayed in the root as it was resolved
    assert len(store_runs(tracker.uri, "exp")[1]) == 2


def test_a_store_file_replaced_by_a_link_after_the_check_is_not_written_through(tmp_path):
    """Checked again under the store's lock before each write."""
    root = Path(os.path.realpath(tmp_path)) / "results"
    folder = fake_results(root, "exp", 1)
    tracker = MlflowTracker(parse_track("mlflow", root), root)
    victim = tmp_path / "victim.txt"
    victim.write_text("someone's notes\n")
    (root / "mlflow.db-journal").symlink_to(victim)
    run = folder / "seed=0_00000000"
    problem = tracker.log(json.loads((run / "metrics.json").read_text()), run)
    assert problem == f"SpecError: {root / 'mlflow.db-journal'} is a symbolic link; {RULE} {root}"
    assert victim.read_text() == "someone's notes\n"


def planted_experiment_outside(root: Path, victim: Path) -> None:
    """Someone's store in the results root, whose experiment keeps its runs' files in a folder outside it."""
    from mlflow.tracking import MlflowClient

    MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}").create_experiment(
        "exp", artifact_location=victim.as_uri())


def planted_experiment_folder_link(root: Path, victim: Path) -> None:
    (root / "mlflow-artifacts").mkdir()
    (root / "mlflow-artifacts" / "exp").symlink_to(victim, target_is_directory=True)


@pytest.mark.parametrize("plant, why", [
    (planted_experiment_outside, "its artifact location file://{victim} is not inside the results root {root}, "
                                 "where the store is"),
    (planted_experiment_folder_link, "{root}/mlflow-artifacts/exp is a symbolic link; " + RULE + " {root}"),
], ids=["location-outside", "experiment-folder-link"])
def test_no_run_file_is_written_where_an_experiment_of_the_root_s_store_points_outside_it(tmp_path, capsys,
                                                                                          plant, why):
    root = Path(os.path.realpath(tmp_path)) / "results"
    fake_results(root, "exp", 1)
    victim = Path(os.path.realpath(tmp_path)) / "victim"
    victim.mkdir()
    plant(root, victim)
    code, out, err = run_cli(capsys, "track", root, "--track", "mlflow")
    assert code == 1, out + err
    reason = why.format(victim=victim, root=root)
    assert f"exp/seed=0_00000000: not logged (SpecError: the MLflow experiment 'exp': {reason})" in out
    assert list(victim.iterdir()) == []


# --------------------------------------------------------------------------- #
# A tracking server: reached at once, its password never shown
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("uri, shown", [
    (f"http://user:{PASSWORD}@127.0.0.1:5000", "http://user:***@127.0.0.1:5000"),
    (f"https://user:{PASSWORD}@mlflow.example.org/prefix?x=1", "https://user:***@mlflow.example.org/prefix?x=1"),
    (f"postgresql+psycopg2://me:{PASSWORD}@db:5432/mlflow", "postgresql+psycopg2://me:***@db:5432/mlflow"),
    ("http://user:p@ss:w@rd@host:5000", "http://user:***@host:5000"),  # an unencoded @ in it
    ("http://host:5000", "http://host:5000"),
    ("http://token@host:5000", "http://token@host:5000"),  # no password
    ("sqlite:////tmp/results/mlflow.db", "sqlite:////tmp/results/mlflow.db"),
])
def test_shown_uri_replaces_the_password(uri, shown):
    assert hidden_credentials(uri) == shown
    assert mlflow_store.hidden_credentials(f"API request to {uri}/api failed") == f"API request to {shown}/api failed"


def test_a_server_that_refuses_is_said_at_once_before_any_mlflow_call(tmp_path, capsys, no_mlflow_client, no_proxy):
    root = tmp_path / "results"
    fake_results(root, "exp", 1)
    port = closed_port()
    code, out, err = run_cli(capsys, "track", root, "--track", f"mlflow=http://user:{PASSWORD}@127.0.0.1:{port}")
    assert code == 2, out + err
    assert err.splitlines() == [f"error: --track mlflow=http://user:***@127.0.0.1:{port}: nothing answers at "
                                f"127.0.0.1:{port} (Connection refused)"]
    assert PASSWORD not in out + err and no_mlflow_client == []  # not MLflow's minutes of retries


def test_the_server_check_tries_once_with_a_short_timeout_and_puts_the_settings_back(tmp_path, monkeypatch,
                                                                                     no_proxy):
    import mlflow.utils.rest_utils as rest_utils
    import requests

    asked = []

    def request(method, url, max_retries, backoff_factor, *args, **kwargs):
        asked.append({"url": url, "max_retries": max_retries, "timeout": kwargs.get("timeout")})
        raise requests.exceptions.ConnectionError("Connection refused")

    monkeypatch.setattr(rest_utils, "_get_http_response_with_retries", request)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "7")  # the user's own
    monkeypatch.delenv("MLFLOW_HTTP_REQUEST_TIMEOUT", raising=False)
    with socket.socket() as listening:  # takes connections (the kernel's backlog): the socket check passes
        listening.bind(("127.0.0.1", 0))
        listening.listen(8)
        port = listening.getsockname()[1]
        uri = f"http://user:{PASSWORD}@127.0.0.1:{port}"
        with pytest.raises(SpecError) as refused:
            check_store(uri, tmp_path)
    assert [(a["max_retries"], a["timeout"]) for a in asked] == [(0, mlflow_store.PROBE_SECONDS)]
    assert asked[0]["url"].startswith(f"http://user:{PASSWORD}@127.0.0.1:{port}/")  # MLflow's URL holds it...
    assert refused.value.message.startswith(
        f"--track mlflow=http://user:***@127.0.0.1:{port}: the store cannot be opened: API request to "
        f"http://user:***@127.0.0.1:{port}/api/2.0/mlflow/experiments/search failed")
    assert PASSWORD not in refused.value.message  # ...the message does not
    assert os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == "7" and "MLFLOW_HTTP_REQUEST_TIMEOUT" not in os.environ


@pytest.mark.parametrize("users, during", [
    ({}, {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "3", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1"}),
    ({"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0"},
     {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1"}),
])
def test_the_suites_writes_try_a_server_a_few_times_unless_the_user_set_it(monkeypatch, users, during):
    names = ("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR")
    for name in names:
        monkeypatch.delenv(name, raising=False)
    for name, value in users.items():
        monkeypatch.setenv(name, value)
    seen = {}
    store_write(None, lambda: seen.update({name: os.environ.get(name) for name in names}))
    assert seen == during
    assert {name: os.environ.get(name) for name in names} == {name: users.get(name) for name in names}


class HalfServer(http.server.BaseHTTPRequestHandler):
    """An MLflow server that answers the store's check, then drops every other request: each write fails, with
    MLflow's error naming the URL as given."""

    def answer(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.startswith("/api/2.0/mlflow/experiments/search"):
            body = b'{"experiments": []}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.close_connection = True  # no answer at all

    do_GET = do_POST = do_PATCH = do_DELETE = answer

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def half_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), HalfServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_a_password_reaches_no_progress_line_warning_or_results_file(tiny_spec, tmp_path, capfd, monkeypatch,
                                                                     no_proxy, half_server):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")  # the user's: each failing write fails at once
    out = tmp_path / "out"
    uri = f"http://user:{PASSWORD}@127.0.0.1:{half_server}"
    code, stdout, stderr = run_cli(capfd, "run", tiny_spec, "--out", out, "--only", "seed=0", "--only",
                                   "model.cell=lstm", "--track", f"mlflow={uri}")
    output = stdout + stderr
    assert code == 0, output  # tracking never fails a run
    assert f"tracking: each run is logged to MLflow at http://user:***@127.0.0.1:{half_server}" in output
    assert f"not logged to the tracker (MlflowException: API request to http://user:***@127.0.0.1:{half_server}/" \
        in output  # the write failed, and said so, with the URL's password hidden
    assert "live logging to the tracker stopped" in output
    assert PASSWORD not in output
    written = [path for path in out.rglob("*") if path.is_file() and not path.is_symlink()]
    assert any(path.name == "runs.csv" for path in written) and any(path.name == "metrics.json" for path in written)
    assert not [path for path in written if PASSWORD.encode() in path.read_bytes()]
