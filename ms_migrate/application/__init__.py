"""The application layer: what a run is, resolved once, under every front end.

The command line (``cli``) and the language server (``lsp``) turn what they are given into a
``RunSettings`` and hand it down; nothing below them assembles a run's settings again. This package
may import the engine, the rules, the sources and the caches; it never imports a front end.
"""
