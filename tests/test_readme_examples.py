"""README.md's first experiment, run exactly as printed: it works and prints the table the README shows.

The spec is read from the README itself (the ```yaml block under "## A first experiment"),
never copied here, and run by `seqkeras run` in a fresh process with the defaults a reader
has: no --backend, no $KERAS_BACKEND, no $SEQKERAS_JOBS (so the backend is auto's choice,
torch when installed, not this process's TensorFlow).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO

README = REPO / "README.md"
SECTION = "## A first experiment"


def first_experiment_section() -> str:
    text = README.read_text(encoding="utf-8")
    assert SECTION in text, f"README.md has no section {SECTION!r}"
    section = text.split(SECTION, 1)[1]
    return re.split(r"^## ", section, maxsplit=1, flags=re.MULTILINE)[0]


def printed_spec(section: str) -> str:
    found = re.search(r"^```yaml\n(.*?)^```", section, flags=re.MULTILINE | re.DOTALL)
    assert found, f"README.md's {SECTION!r} shows no ```yaml block"
    return found.group(1)


def included_table(section: str) -> list[str]:
    """The table rows between the section's <!-- include: … --> and <!-- end include --> marks."""
    found = re.search(r"<!-- include: [^>]*-->\n(.*?)<!-- end include -->", section, flags=re.DOTALL)
    assert found, f"README.md's {SECTION!r} includes no table"
    rows = [line for line in found.group(1).splitlines() if line.startswith("|")]
    assert rows, "the included part has no table rows"
    return rows


@pytest.mark.slow
def test_the_readmes_first_experiment_runs_as_printed_and_prints_its_table(tmp_path):
    section = first_experiment_section()
    spec = tmp_path / "first.yaml"
    spec.write_text(printed_spec(section), encoding="utf-8")
    environment = {key: value for key, value in os.environ.items() if key not in ("KERAS_BACKEND", "SEQKERAS_JOBS")}

    result = subprocess.run([sys.executable, "-m", "seqkeras", "run", str(spec), "--out", str(tmp_path / "results")],
                            cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=600)

    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    printed = [line.rstrip() for line in result.stdout.splitlines()]
    rows = included_table(section)
    starts = [i for i, line in enumerate(printed) if line == rows[0]]
    assert any(printed[i:i + len(rows)] == rows for i in starts), (
        "the run did not print the README's table:\n" + "\n".join(rows) + "\n--- it printed:\n" + result.stdout[-3000:])
