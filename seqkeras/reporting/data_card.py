"""An experiment's data card: data_card.md and data_card.json in its results folder, and the report's section.

Each training run writes its data described (tasks.data_card) as its folder's
data_card.json. An experiment's card holds, for each task configuration it
trains on, the card of that task's first run (the lowest seed): a split, and a
generator's draw, depend on the seed, so the card says whose data it is.

Run folders may be someone else's: their cards are read through
`results.files` (regular files inside the folder, bounded), and a card that
cannot be read or does not read as a card is a warning, never a crash; the
experiment's card goes on without it.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from seqkeras.errors import SpecError
from seqkeras.results.files import present, read_text
from seqkeras.results.folder import DATA_CARD, DATA_CARD_PAGE, write_atomic, write_json

FORMAT = 1
Block = tuple[str, Any]  # ("text", a sentence) or ("table", (header, rows)): one card, for Markdown or HTML

SEED_NOTE = ("Each task's data as its first run (lowest seed) drew it: the train/test split, and a generator's "
             "draw, depend on the seed, so runs of other seeds have other examples in each split (the same counts "
             "for a split, not always for a generator).")
DUPLICATES_NOTE = ("Duplicates here are inputs as the model sees them (token ids after lowercasing and stripping, "
                   "a rare word as <unk>): two texts that differ only in case count as one.")


def write_experiment_card(folder: Path, name: str, tasks: list[tuple[str, list[str]]],
                          echo: Callable[[str], None] = print) -> bool:
    """data_card.md and data_card.json of the experiment in `folder`; `tasks`: each task configuration's label and
    its runs' ids, first seed first. Written only when some run has a card (a probe has no data); True if so."""
    def warn(message: str) -> None:
        echo(f"warning: {message}")

    cards = []
    for label, run_ids in tasks:
        for run_id in run_ids:
            card = read_run_card(folder, run_id, warn)
            if card is not None:
                cards.append({"task": label, "run_id": run_id, "card": card})
                break
    if not cards:
        return False
    write_json(folder / DATA_CARD, {"format": FORMAT, "experiment": name, "cards": cards})
    write_atomic(folder / DATA_CARD_PAGE, markdown(name, cards))
    return True


def read_run_card(folder: Path, run_id: str, warn: Callable[[str], None]) -> dict[str, Any] | None:
    """A run folder's data_card.json, or None (absent: silently; unreadable or not a card: with a warning)."""
    name = f"{run_id}/{DATA_CARD}"
    if not present(folder, name):
        return None
    card = _read_json(folder, name, warn)
    if card is None:
        return None
    try:
        blocks(card)  # what the page will show: a card of another shape is refused here, not half-written there
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as error:
        warn(f"{folder / name} does not read as a data card ({type(error).__name__}: {error}); it is left out")
        return None
    return card


def read_experiment_card(folder: Path, warn: Callable[[str], None]) -> list[dict[str, Any]]:
    """The cards of an experiment's data_card.json (for the report); [] when absent, or, with a warning, damaged."""
    if not present(folder, DATA_CARD):
        return []
    saved = _read_json(folder, DATA_CARD, warn)
    if saved is None:
        return []
    cards = saved.get("cards") if isinstance(saved, dict) else None
    if not isinstance(cards, list) or not all(isinstance(c, dict) and isinstance(c.get("card"), dict)
                                              for c in cards):
        warn(f"{folder / DATA_CARD} is not an experiment's data card (no list of cards); the report shows none")
        return []
    return cards


def _read_json(folder: Path, name: str, warn: Callable[[str], None]) -> Any:
    try:
        return json.loads(read_text(folder, name))
    except SpecError as error:  # a link, a FIFO, too big, not UTF-8
        warn(f"{error}; it is left out of the data card")
    except ValueError as error:  # json.JSONDecodeError
        warn(f"{folder / name} is not JSON ({error}); it is left out of the data card")
    return None


# --------------------------------------------------------------------------- #
# One card as blocks of text and tables, then as Markdown or HTML
# --------------------------------------------------------------------------- #


def blocks(card: dict[str, Any]) -> list[Block]:
    """One run's card as sentences and tables; raises (KeyError, TypeError, ...) on a card of another shape."""
    splits = card["splits"]
    if not isinstance(splits, list) or not all(isinstance(part, dict) for part in splits):
        raise TypeError("its splits are not a list of mappings")
    out: list[Block] = []
    header = ["split", "examples", "tokens", "min length", "median", "90th pct", "max length", "<unk> share",
              "duplicates inside"]
    rows = []
    for part in splits:
        length = part.get("length") or {}
        rows.append([str(part["name"]), _count(part["examples"]), _count(part.get("tokens")),
                     _count(length.get("min")), _number(length.get("median")), _number(length.get("p90")),
                     _count(length.get("max")), _percent(part.get("unknown_rate")), _count(part.get("duplicates"))])
    out.append(("table", (header, rows)))
    if card.get("vocabulary") is not None:
        out.append(("text", f"Vocabulary: {_count(card['vocabulary'])} ids (<pad> and <unk> included), from the "
                            f"training split; test out-of-vocabulary rate: {_percent(card.get('test_oov_rate'))} "
                            "of the test tokens are <unk>."))
    tokenizers = card.get("tokenizers")
    if tokenizers is not None:
        out.append(("table", _tokenizer_table(tokenizers)))
    embedding = card.get("embedding")
    if embedding is not None:  # model.embedding: how much of each vocabulary the word vectors cover
        out.append(("table", _embedding_table(embedding)))
    padding = card.get("padding")
    if padding is not None:  # train.batches: by_length
        if not isinstance(padding, dict):
            raise TypeError("its padding entry is not a mapping")
        out.append(("text", f"Padding: {_percent(padding.get('shuffled'))} of the training batches' token slots at "
                            f"the task's width; {_percent(padding.get('by_length'))} in batches by length "
                            "(train.batches: by_length)."))
    if card.get("pieces_per_word") is not None:  # a subword tokenizer's: what a token is worth
        out.append(("text", f"Subword pieces per word on the test set: {_number(card['pieces_per_word'])} (a "
                            "per-piece perplexity raised to this power is per word)."))
    across = card.get("across") or {}
    if across:
        said = [f"{_count(count)} {pair.split('/')[0]} example(s) with an input also in {pair.split('/')[1]}"
                for pair, count in across.items()]
        out.append(("text", "Across splits: " + "; ".join(said) + ". " + DUPLICATES_NOTE))
    removed = card.get("removed_before_split") or {}
    if removed:
        # The task's notes: duplicate counts, and whatever else a task counts of its data (pairs per part, pairs
        # too long, words and pieces); only the duplicate counts are of examples removed before the split.
        why = (" (duplicates_removed: exact duplicates of the raw input removed before the split, each kept once "
               "with its majority label, dropped when the labels tie)" if "duplicates_removed" in removed else "")
        out.append(("text", "The task's own counts" + why + ": "
                    + ", ".join(f"{key} {_count(value)}" for key, value in removed.items()) + "."))
    classes = [part for part in splits if isinstance(part.get("classes"), dict)]
    if classes:
        names = list(dict.fromkeys(name for part in classes for name in part["classes"]))
        header = ["class or tag"] + [f"{part['name']} {what}" for part in classes for what in ("count", "share")]
        rows = [[str(name)] + [cell for part in classes
                               for cell in _class_cells(part["classes"].get(name))] for name in names]
        out.append(("table", (header, rows)))
    return out


def _tokenizer_table(tokenizers: Any) -> tuple[list[str], list[list[str]]]:
    """A subword level's learnt models, one row per side: what each did to the test split."""
    if not isinstance(tokenizers, list) or not all(isinstance(entry, dict) for entry in tokenizers):
        raise TypeError("its tokenizers are not a list of mappings")
    header = ["tokenizer (side)", "level", "vocabulary", "test words", "test pieces", "pieces per word",
              "<unk> share of pieces"]
    rows = [[_text(entry["side"]), _text(entry["level"]), _count(entry.get("vocabulary")),
             _count(entry.get("test_words")), _count(entry.get("test_pieces")), _number(entry.get("pieces_per_word")),
             _percent(entry.get("unknown_rate"))] for entry in tokenizers]
    return header, rows


def _embedding_table(embedding: Any) -> tuple[list[str], list[list[str]]]:
    """The pretrained word vectors' coverage, one row per embedding (tokens; an encoder-decoder's source, target)."""
    if not isinstance(embedding, dict) or not all(isinstance(entry, dict) for entry in embedding.values()):
        raise TypeError("its embedding entry is not a mapping of mappings")
    header = ["word vectors (embedding)", "file", "words", "words with a vector", "share", "training tokens covered"]
    rows = [[_text(side), _text(entry["file"]), _count(entry.get("words")), _count(entry.get("words_with_vectors")),
             _percent(entry.get("word_coverage")), _percent(entry.get("train_token_coverage"))]
            for side, entry in embedding.items()]
    return header, rows


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{value!r} is not a name")
    return value


def _class_cells(entry: Any) -> list[str]:
    if not isinstance(entry, dict):
        return ["0", "0%"]
    return [_count(entry.get("count")), _percent(entry.get("share"))]


def _count(value: Any) -> str:
    return _shown(value, "a count", lambda number: f"{int(number):,}")


def _number(value: Any) -> str:
    return _shown(value, "a number", lambda number: f"{number:g}")


def _percent(value: Any) -> str:
    return _shown(value, "a share", lambda number: f"{100 * number:.1f}%")


def _shown(value: Any, what: str, form) -> str:
    """A card's number as its cell: "—" for none; anything but a number (a card may be someone else's) is a
    TypeError naming what it should be."""
    if value is None:
        return "—"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{value!r} is not {what}")
    return form(value)


def _title(entry: dict[str, Any]) -> str:
    card = entry["card"]
    seed = f", seed {card['seed']}" if "seed" in card else ""
    return f"{entry['task']} (run {entry['run_id']}{seed})"


def markdown(name: str, cards: list[dict[str, Any]]) -> str:
    lines = [f"# Data card: {name}", "", SEED_NOTE, ""]
    for entry in cards:
        lines += [f"## {_title(entry)}", ""]
        for kind, content in blocks(entry["card"]):
            if kind == "text":
                lines += [content, ""]
            else:
                header, rows = content
                lines += ["| " + " | ".join(_md_cell(h) for h in header) + " |",
                          "|" + "|".join(":--" if i == 0 else "--:" for i in range(len(header))) + "|"]
                lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
                lines.append("")
    return "\n".join(lines)


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def html_section(cards: list[dict[str, Any]], warn: Callable[[str], None]) -> list[str]:
    """The report's Data section; a card that does not read as one is left out with a warning."""
    e = html.escape
    parts = []
    for entry in cards:
        try:
            title, shown = _title(entry), blocks(entry["card"])
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as error:
            warn(f"a data card of {entry.get('run_id', '?')!s:.80} is left out of the report: it does not read as "
                 f"a card ({type(error).__name__})")
            continue
        parts.append(f"<h3>{e(str(title))}</h3>")
        for kind, content in shown:
            if kind == "text":
                parts.append(f"<p>{e(content)}</p>")
            else:
                header, rows = content
                head = "".join(f"<th>{e(str(h))}</th>" for h in header)
                body = "".join("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in row) + "</tr>" for row in rows)
                parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    if parts:
        parts.insert(0, f"<p>{e(SEED_NOTE)}</p>")
    return parts
