"""The engine: one file's text through the selected rules, to findings and a fixed text.

``engine`` (select, prefilter, check, suppress, fix, validate), ``parsing`` (the `ast` precheck
and the libcst parse), ``codes`` (the registry of every rule, reason and note code) and
``string_folding`` (long concatenations folded while libcst works). Pure: text in, results out.

One layer with the rule API (``ms_migrate.context``, ``ms_migrate.diagnostics``,
``ms_migrate.reasons``), ``rules``, ``analysis`` and ``rewrite``: the engine names every rule and
a rule's fix goes through the engine's import manager. May import ``facts`` and ``files`` below it
(the project index reads the files a step's network lives in); never the output formats, the
runtimes, verify, the application or a front end (tests/test_layers.py).
"""
