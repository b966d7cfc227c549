"""The rules ms-migrate knows: one module each, found by ``ms_migrate.rules.base.all_rules``.

Nothing here lists them: a new rule is one new file in this package.
"""
