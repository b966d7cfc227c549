"""Editing code: statements and their indentation, text edits, imports added and removed
(``import_changes``, the import manager the engine runs once per file), and the shapes a few
rewrites share (``cell_init``, ``set_device``).

Part of the engine layer (see ``ms_migrate.core``); never the output formats, the application or
a front end (tests/test_layers.py).
"""
