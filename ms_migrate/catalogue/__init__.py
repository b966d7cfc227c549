"""The deprecated-API catalogue, derived from an installed MindSpore (``rules/deprecations/``).

This package imports only the standard library, MindSpore and the plain data of
``ms_migrate.facts.public_modules``: it runs in per-version environments that hold nothing else.
``python -m ms_migrate.catalogue build --out PATH`` writes one catalogue.
"""
