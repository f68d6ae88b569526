"""Seeded task generators and file loaders; each returns a `SequenceData`."""
