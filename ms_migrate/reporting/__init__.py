"""What a run shows people and programs: text, json, sarif and GitHub annotations, diffs,
``--report`` files, sharded documents joined, the findings baseline, and a stdout that may close.

May import the engine and the rules (``core.codes``, ``rules.base``, the rule API), ``files`` and
``facts``; never verify, the application or a front end: they call it with results
(tests/test_layers.py).
"""
