"""A kept model.keras from someone else is a zip archive: one that would unpack far beyond its size is refused
before Keras unpacks it (into memory and the temporary folder), in one line naming the file."""

from __future__ import annotations

import io
import zipfile

import keras
import pytest

from seqkeras.errors import SpecError
from seqkeras.kept.saving import (
    MAX_MEMBERS, UNPACKED_FLOOR, UNPACKED_RATIO, keras_image, read_model, unpacked_size_problem,
)
from seqkeras.registry import KERAS_NATIVE


def archive(members: dict[str, bytes], compression=zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as written:
        for name, data in members.items():
            written.writestr(name, data)
    return buffer.getvalue()


def test_a_small_archive_that_unpacks_to_gigabytes_is_refused_before_keras_reads_it(tmp_path):
    bomb = archive({"config.json": b"{}", "model.weights.h5": bytes(UNPACKED_FLOOR + (1 << 20))})
    assert len(bomb) * UNPACKED_RATIO < UNPACKED_FLOOR  # small: its size does not excuse what it unpacks to
    (tmp_path / "model.keras").write_bytes(bomb)
    with pytest.raises(SpecError) as refused:
        read_model(tmp_path, KERAS_NATIVE)
    message = str(refused.value)
    assert message.startswith(f"{tmp_path / 'model.keras'} is refused: its archive of {len(bomb)} bytes unpacks to")
    assert "\n" not in message and "64 MiB" in message


def test_an_archive_of_many_files_is_refused(tmp_path):
    (tmp_path / "model.keras").write_bytes(archive({f"f{index}": b"" for index in range(MAX_MEMBERS + 1)}))
    with pytest.raises(SpecError, match=f"holds {MAX_MEMBERS + 1} files"):
        read_model(tmp_path, KERAS_NATIVE)


def test_a_model_keras_wrote_is_within_the_bounds_and_loads():
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(2)(inputs))
    model.compile(optimizer="adam", loss="mse")
    image = io.BytesIO(keras_image(model))
    assert unpacked_size_problem(image) == "" and image.tell() == 0
    assert KERAS_NATIVE.loader()(image).count_params() == model.count_params()
