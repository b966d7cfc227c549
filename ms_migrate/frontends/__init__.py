"""The command line: ``cli`` (every command), ``runtime_command`` (``ms-migrate runtime``) and
``interactive`` (``upgrade --interactive``'s questions). The language server (``ms_migrate.lsp``)
and ``ms_migrate.verify.command`` are front ends too.

Front ends are thin: they turn options into the application layer's values, call it and render
what it returns. They may import any layer's public names; nothing imports them, and the
language server does not import the command line (tests/test_layers.py).
"""
