"""One decoder parser: `decoding.decoders.parse_decoder` reads a decoder in every form a user writes it, through
the spec's own `DecoderChoice` union, and says what is wrong in one line."""

from __future__ import annotations

import pytest

from seqkeras.decoding import decoders
from seqkeras.decoding.decoders import CHOICES, build_decoder, decoder_choice, decoder_label, parse_decoder
from seqkeras.errors import SpecError
from seqkeras.kept import predict, reevaluation
from seqkeras.spec.sections import EvaluateSpec


def test_every_form_reads_as_the_spec_reads_the_mapping():
    mapping = {"name": "beam", "width": 5, "length_penalty": 0.6}
    from_spec = EvaluateSpec.model_validate({"decoders": [mapping]}).decoders[0]
    for written in ("beam(width=5, length_penalty=0.6)", '{"name": "beam", "width": 5, "length_penalty": 0.6}',
                    "{name: beam, width: 5, length_penalty: 0.6}", mapping, from_spec):
        choice = parse_decoder(written)
        assert type(choice) is type(from_spec) and choice == from_spec, written
    assert parse_decoder("sample") == CHOICES["sample"]()


def test_a_label_reads_back_as_its_decoder():
    choice = parse_decoder({"name": "sample", "temperature": 0.5, "top_k": 3})
    assert parse_decoder(decoder_label(choice)) == choice


def test_predict_and_reevaluation_read_decoders_with_the_one_parser():
    assert predict.parse_decoder is decoders.parse_decoder and reevaluation.parse_decoder is decoders.parse_decoder


@pytest.mark.parametrize("written, message", [
    ("bean", "--decoder 'bean': unknown decoder 'bean'. Did you mean 'beam'? Allowed: beam, greedy, sample."),
    ({"width": 2}, "--decoder {'width': 2}: unknown decoder None. Allowed: beam, greedy, sample."),
    ("beam(width=0)", "--decoder 'beam(width=0)': width: input should be greater than or equal to 1 (received 0)"),
    ("beam(widht=2)", "--decoder 'beam(widht=2)': widht: unknown key 'widht'. Did you mean 'width'? "
                      "Allowed keys here: width, length_penalty."),
    ("greedy(width=2)", "--decoder 'greedy(width=2)': width: unknown key 'width'. Allowed keys here: none."),
    ("beam(width)", "--decoder 'beam(width)': expected name(key=value, ...), got 'width'"),
    ("[1, 2]", "--decoder '[1, 2]': neither a decoder's name, its label nor a mapping"),
    (3, "--decoder 3: a decoder is a name, a label or a mapping, not a value of type int"),
])
def test_a_wrong_decoder_is_one_line_naming_the_option_the_value_and_the_key(written, message):
    with pytest.raises(SpecError) as error:
        parse_decoder(written, "--decoder")
    assert str(error.value) == message


def test_a_mapping_s_error_has_the_key_as_its_path():
    with pytest.raises(SpecError) as error:
        decoder_choice({"name": "sample", "top_k": -1})
    assert error.value.path == "top_k" and "received -1" in error.value.message
    with pytest.raises(SpecError) as error:
        build_decoder("beam", {"length_penalty": 0.6, "widht": 3})
    assert error.value.path == "widht" and "Did you mean 'width'?" in error.value.message
