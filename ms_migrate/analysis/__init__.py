"""Facts about code that any rule may ask for: import-aware names (``names``), the run-wide index
of project classes and the files that build each step (``project``), the autodiff sites the lints
share (``autodiff``), one call-argument binder (``arguments``), weights and instances, and the
`ast` walk every pass uses (``walk``).

Part of the engine layer (see ``ms_migrate.core``): may import the rule API, ``facts`` and
``files``; never the output formats, the application or a front end (tests/test_layers.py).
"""
