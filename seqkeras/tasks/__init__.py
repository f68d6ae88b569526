"""The data stage: seeded task generators and file loaders; each returns a `SequenceData` (or `Seq2SeqData`).

Generators are small seeded classes; loaders read the user's files or the
corpora installed packages ship, never the network. A task's `Params` is read
by spec validation, so modules here import no Keras.

May import: errors, problems, registry, user_files.
"""
