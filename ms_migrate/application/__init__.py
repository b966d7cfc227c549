"""The application layer: what a run is, resolved once, under every front end.

``settings`` (``RunSettings``: everything besides a file's bytes that decides a result; the cache
key is made of its fields), ``target`` (the target and the release the code was written for),
``config`` (the project's ``[tool.ms-migrate]`` table), ``runner`` (files to outcomes: read,
triage, cache, the engine, write), ``pool`` and ``collector`` (worker processes, the garbage
collector's pace), ``check`` and ``explain`` (what ``check`` and ``explain`` make of a file or a
code, in the terminal and in an editor).

The command line (``frontends.cli``) and the language server (``lsp``) turn what they are given
into a ``RunSettings`` and hand it down; nothing below them assembles a run's settings again.
May import every layer below (the engine, rules, facts, files, reporting, ``verify``); never a
front end.
"""
