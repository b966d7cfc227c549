"""What the MindSpore releases are: versions, and the release facts shipped in ``rules/``.

``versions`` (parsing a version, the spelling table, a specifier's bounds), ``releases`` (the names
and signatures each release has, generated from the runtimes by ``ms_migrate.catalogue``),
``deprecations``, ``release_notes`` and ``data`` (where the shipped data lies).

The lowest layer, beside the rule API's ``diagnostics``: it imports no other part of the tool
(a project's pins are read by ``files.pins``, above it; tests/test_layers.py).
"""
