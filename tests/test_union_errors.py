"""A mistake inside a tagged union (a decoder `{name: beam, ...}`, the recurrence probe's `measure`) is told as
any other spec mistake, by the one translator (`errors.translate_validation_error`): the user's key path without
pydantic's tag, the chosen member's keys with a did-you-mean, and the choices when the name is wrong or missing."""

from __future__ import annotations

import pytest

from tests.helpers import run_cli

LANGUAGE_MODEL = """
    version: 1
    name: decoders
    task: {{name: char_lm, seq_length: 8}}
    model: {{kind: lm, cell: gru, units: 4, embedding_dim: 4}}
    evaluate:
      decoders: [{{name: greedy}}, {decoder}]
"""

DECODING_PROBE = """
    version: 1
    name: probe
    probe:
      name: decoding
      decoder: {decoder}
"""


def validate_error(write_spec, capsys, text: str) -> str:
    """The one line `seqkeras validate` prints for the spec `text`, which it must refuse with exit status 2."""
    path = write_spec(text)
    code, out, err = run_cli(capsys, "validate", path)
    assert code == 2, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"error: {path}: "), lines[0]
    return lines[0].removeprefix(f"error: {path}: ")


@pytest.mark.parametrize("decoder, message", [
    ("{name: beam, width: 0}", "evaluate.decoders[1].width: input should be greater than or equal to 1 (received 0)"),
    ("{name: beam, widht: 2}",
     "evaluate.decoders[1].widht: unknown key 'widht'. Did you mean 'width'? "
     "Allowed keys here: width, length_penalty."),
    ("{name: greedy, width: 2}", "evaluate.decoders[1].width: unknown key 'width'. Allowed keys here: none."),
    ("{name: sample, top_k: x}", "evaluate.decoders[1].top_k: expected a whole number (integer), got the text 'x'"),
    ("{width: 2}",
     "evaluate.decoders[1].name: missing required key 'name': which decoder, one of beam, greedy, sample."),
    ("{name: bean}", "evaluate.decoders[1].name: unknown decoder 'bean'. Did you mean 'beam'? Allowed: beam, greedy, "
                     "sample."),
    ("{name: 3}", "evaluate.decoders[1].name: unknown decoder 3. Allowed: beam, greedy, sample."),
])
def test_a_wrong_decoder_in_evaluate_names_its_own_keys_not_the_union_s_tag(write_spec, capsys, decoder, message):
    assert validate_error(write_spec, capsys, LANGUAGE_MODEL.format(decoder=decoder)) == message


@pytest.mark.parametrize("decoder, message", [
    ("{name: beam, widht: 2}",
     "probe.decoder.widht: unknown key 'widht'. Did you mean 'width'? Allowed keys here: width, length_penalty."),
    ("{name: sample, temperature: 0}", "probe.decoder.temperature: input should be greater than 0 (received 0)"),
    ("{width: 2}", "probe.decoder.name: missing required key 'name': which decoder, one of beam, greedy, sample."),
    ("{name: bean}", "probe.decoder.name: unknown decoder 'bean'. Did you mean 'beam'? Allowed: beam, greedy, sample."),
])
def test_a_wrong_decoder_in_the_decoding_probe_is_told_the_same_way(write_spec, capsys, decoder, message):
    assert validate_error(write_spec, capsys, DECODING_PROBE.format(decoder=decoder)) == message


@pytest.mark.parametrize("measure, message", [
    ("{name: step_tme}", "probe.measure.name: unknown measure 'step_tme'. Did you mean 'step_time'? "
                         "Allowed: agreement, generation, gradient_path, order, step_time."),
    ("{name: order, seq_lenght: 8}",
     "probe.measure.seq_lenght: unknown key 'seq_lenght'. Did you mean 'seq_length'? Allowed keys here: seq_length."),
])
def test_every_tagged_union_is_walked_through_its_chosen_member(write_spec, capsys, measure, message):
    spec = f"""
        version: 1
        name: probe
        probe: {{name: recurrence_vs_attention, model: lstm, measure: {measure}}}
    """
    assert validate_error(write_spec, capsys, spec) == message


@pytest.mark.parametrize("spec", [LANGUAGE_MODEL, DECODING_PROBE])
def test_the_same_specs_with_a_right_decoder_validate(write_spec, capsys, spec):
    code, out, err = run_cli(capsys, "validate", write_spec(spec.format(decoder="{name: beam, width: 2}")))
    assert code == 0, out + err
