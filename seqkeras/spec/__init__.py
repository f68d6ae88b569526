"""The spec stage: YAML experiment files become validated `Experiment` and `RunSpec` objects.

`sections` holds the pydantic schemas of an experiment file's fixed structure
(a leaf: training, evaluation and reporting read it); `runs` the run objects
and run ids; `checks` the named cross-section rules, with `outputs` (what each
run will write) and `selection` (`--only`); `loader` reads YAML,
applies --set, expands the matrix and resolves components against the catalog
(pydantic errors become one `SpecError` sentence through
`errors.translate_validation_error`, which every reader shares); `json_schema`
and `reference` describe the same registries for editors and for docs. The
`train` and `evaluate.generate` sections are the schemas of those stages
(`training.settings`, `evaluation.settings`), composed here.

May import: errors, problems, registry, user_files, yaml_reader, backends, catalog, tasks, models, decoding, training,
evaluation, tuning.
"""
