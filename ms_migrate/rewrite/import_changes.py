"""The one import manager: the engine settles a file's imports once, after every fix's edits.

A fix says which `import mindspore [as NAME]` its code uses (``Fix.imports``) and which imported
names it may have stopped using (``Fix.unused``); no rule edits an import line for either. Done
per rule, two rules converting two sites of one `from mindspore import grad, value_and_grad`
each edited that line, the overlap dropped one fix, and the file failed validation. Pure: text in,
edits out. Libcst-free, so `check` never needs it.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterable
from typing import Optional

from ms_migrate.diagnostics import Edit, source_lines
from ms_migrate.rewrite.text_edits import column, newline_of


def released_name(expression: ast.expr) -> tuple[str, ...]:
    """The name a fix that rewrites ``expression`` (`grad`, `P.Pack`) may leave unused: its root,
    for ``Fix.unused``."""
    while isinstance(expression, ast.Attribute):
        expression = expression.value
    return (expression.id,) if isinstance(expression, ast.Name) else ()


def removal_edits(text: str, tree: ast.Module, unused: Iterable[str], used: Counter[str]) -> tuple[Edit, ...]:
    """Edits (on ``text``) dropping each name of ``unused`` that a top-level MindSpore import of
    ``tree`` binds and ``used`` (``loaded_names`` of the fixed text: `__all__` and identifier
    strings count) no longer mentions. A whole statement goes when none of its names stays,
    where it is the only statement of its lines."""
    candidates = set(unused)
    if not candidates:
        return ()
    lines = source_lines(text)
    edits: list[Edit] = []
    for node in tree.body:
        if not _mindspore_import(node):
            continue
        gone = [
            index
            for index, alias in enumerate(node.names)  # type: ignore[attr-defined]
            if _local(alias) in candidates and not used[_local(alias)]
        ]
        if gone:
            edits += _statement_edits(lines, node, gone)  # type: ignore[arg-type]
    return tuple(edits)


def addition_edits(text: str, tree: ast.Module, needed: Iterable[str]) -> tuple[Edit, ...]:
    """One edit adding `import mindspore [as NAME]` for each of ``needed`` that the module does not
    bind to `mindspore` already, where isort puts it (``import_edit``)."""
    bound = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.Import)
        for alias in node.names
        if alias.name == "mindspore"
    }
    missing = [name for name in dict.fromkeys(needed) if name not in bound]
    if not missing:
        return ()
    lines = source_lines(text)
    newline = newline_of(lines)
    edits = [import_edit(tree, lines, name, newline) for name in missing]
    # Each lands at the same place: one edit, in the order the fixes asked for them.
    return (Edit(edits[0].start, edits[0].end, "".join(edit.replacement for edit in edits)),)


def import_edit(tree: ast.Module, lines: list[str], local: str, newline: str) -> Edit:
    """`import mindspore [as local]` where isort puts it: before the file's first MindSpore import
    (`import x` sorts before `from x import`), else after its last top-level import."""
    statement = "import mindspore" if local == "mindspore" else f"import mindspore as {local}"
    after = 0
    for index, node in enumerate(tree.body):
        modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            modules = [node.module or ""]
        if node.col_offset == 0 and any(module.split(".")[0] == "mindspore" for module in modules):
            return Edit((node.lineno, 0), (node.lineno, 0), statement + newline)
        docstring = index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if docstring or isinstance(node, (ast.Import, ast.ImportFrom)):
            after = node.end_lineno or node.lineno
        else:
            break
    return Edit((after + 1, 0), (after + 1, 0), statement + newline)


def alias_removal(lines: list[str], node: ast.ImportFrom, index: int) -> Optional[Edit]:
    """The edit that removes one name from an import: the whole line when it is the only one."""
    edits = _statement_edits(lines, node, [index])
    return edits[0] if edits else None


def _mindspore_import(node: ast.stmt) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.level == 0 and (node.module or "").split(".")[0] == "mindspore"
    if not isinstance(node, ast.Import):
        return False
    return all(alias.name.split(".")[0] == "mindspore" for alias in node.names)


def _local(alias: ast.alias) -> str:
    # `import mindspore.ops` binds `mindspore`, which this never drops: only names it can see whole.
    return alias.asname or ("" if "." in alias.name or alias.name == "*" else alias.name)


def _statement_edits(lines: list[str], node: ast.stmt, gone: list[int]) -> list[Edit]:
    aliases = node.names  # type: ignore[attr-defined]
    if len(gone) == len(aliases):
        end_line = node.end_lineno or node.lineno
        last = lines[end_line - 1]
        alone = node.col_offset == 0 and column(lines, end_line, node.end_col_offset or 0) == len(
            last.rstrip("\r\n")
        )
        return [Edit((node.lineno, 0), (end_line + 1, 0), "")] if alone else []

    def start(alias: ast.alias) -> tuple[int, int]:
        return (alias.lineno, column(lines, alias.lineno, alias.col_offset))

    def end(alias: ast.alias) -> tuple[int, int]:
        line = alias.end_lineno or alias.lineno
        return (line, column(lines, line, alias.end_col_offset or 0))

    # Runs of adjacent names: a run before a kept name goes up to it, a last run from the kept
    # name before it, so the runs' edits never touch.
    edits: list[Edit] = []
    runs: list[list[int]] = []
    for index in sorted(gone):
        if runs and runs[-1][-1] == index - 1:
            runs[-1].append(index)
        else:
            runs.append([index])
    for run in runs:
        first, last_index = run[0], run[-1]
        if last_index + 1 < len(aliases):
            edits.append(Edit(start(aliases[first]), start(aliases[last_index + 1]), ""))
        else:
            edits.append(Edit(end(aliases[first - 1]), end(aliases[last_index]), ""))
    return edits
