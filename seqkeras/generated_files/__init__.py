"""The committed files (and parts of files) that are generated from the code, and the command that rewrites them.

    python -m seqkeras.generated_files            rewrite each one that is stale (`make generate`)
    python -m seqkeras.generated_files --check    rewrite nothing; exit 1 naming each stale one

`generate` lists them: `seqkeras.schema.json` (the JSON Schema of experiment
files, `spec.json_schema`), `docs/components.md` (every component and its
parameters, `spec.reference`), `docs/matrix.md` (every model kind × every
training option × every way out of a run, `matrix`), and the README's command
table and docs/spec.md's option table of each command, which `cli_reference`
reads from the command line's parser. The last two are regions of hand-written pages, between
`<!-- generated: NAME -->` and `<!-- end generated -->`; only the text between
the marks is rewritten. Run it from a source checkout after changing a
component, a spec section or a command-line option; tests/test_generated_files.py
fails while a file is stale. Nothing here is imported by the command line.

May import: cli, catalog, problems, spec.
"""
