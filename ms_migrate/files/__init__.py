"""The user's files and the tool's own: finding, reading, writing, ignoring, caching.

``sources`` (the only module that reads or writes a user's file; writes are atomic and keep
encoding, BOM, newlines, mode and owner), ``gitignore``, ``notebooks`` (a notebook as one
module and back), ``project_root``, ``pins`` (where a project names MindSpore), ``cache``
(per-file results of earlier runs) and ``provenance`` (the git checkout, for SARIF).

May import ``facts`` and the rule API's ``diagnostics`` (what a cached result holds); never the
engine, the rules, the output formats, the application or a front end (tests/test_layers.py).
"""
