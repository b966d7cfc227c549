"""The language server (`ms-migrate server`): check's diagnostics and upgrade's fixes in an editor.

``settings`` reads a file's project settings, ``buffers`` turns open documents and notebooks
into the text the rules read, ``analysis`` runs the pipeline on it, ``convert`` makes LSP values
of the results, and ``server`` speaks the protocol (pygls). Only ``convert`` and ``server`` need
the `lsp` extra.
"""
