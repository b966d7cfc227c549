"""Import bookkeeping for a rewrite on libcst: adding `import mindspore`, and dropping imports.
Which name reaches `mindspore`, and which imports a rewrite left unused, is decided on ``ast``
(``ms_migrate.analysis.names``)."""

from __future__ import annotations

from typing import Union

import libcst as cst

from ms_migrate.rewrite.statements import StatementEditor


def _import_statement(local: str) -> cst.SimpleStatementLine:
    code = "import mindspore" if local == "mindspore" else f"import mindspore as {local}"
    return cst.parse_statement(code)  # type: ignore[return-value]


def _is_import_line(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
    )


def _is_docstring(statement: cst.CSTNode) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _sort_key(statement: cst.SimpleStatementLine) -> tuple[bool, str]:
    """isort's (and ruff's I001) order within a section: `import x` lines, then `from x import`,
    each by module name, case-insensitively."""
    small = statement.body[0]
    if isinstance(small, cst.Import):
        return (False, cst.Module(body=[]).code_for_node(small.names[0].name).lower())
    assert isinstance(small, cst.ImportFrom)
    module = cst.Module(body=[]).code_for_node(small.module) if small.module is not None else ""
    return (True, "." * len(small.relative) + module.lower())


def _starts_block(statement: cst.SimpleStatementLine) -> bool:
    return any(line.comment is None for line in statement.leading_lines)


def add_import(module: cst.Module, local: str) -> cst.Module:
    """Insert `import mindspore [as local]` where isort would put it: in the import block that
    holds the file's other MindSpore imports, in sorted order; else after the last import that
    precedes any def/class."""
    body = list(module.body)
    position = 1 if body and _is_docstring(body[0]) else 0
    blocks: list[list[int]] = []
    for index, statement in enumerate(body):
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            break
        if not _is_import_line(statement):
            continue
        position = index + 1
        assert isinstance(statement, cst.SimpleStatementLine)
        if blocks and blocks[-1][-1] == index - 1 and not _starts_block(statement):
            blocks[-1].append(index)
        else:
            blocks.append([index])
    new = _import_statement(local)
    code = cst.Module(body=[]).code_for_node
    block = next((block for block in blocks if any("mindspore" in code(body[i]) for i in block)), None)
    if block is None:
        body.insert(position, new)
        return module.with_changes(body=body)
    key = _sort_key(new)
    later = [i for i in block if _sort_key(body[i]) > key]  # type: ignore[arg-type]
    if not later:
        body.insert(block[-1] + 1, new)
    elif later[0] == block[0]:
        # First in its block: the blank lines and comments that open the block stay above it.
        first = body[block[0]]
        body[block[0]] = first.with_changes(leading_lines=())  # type: ignore[union-attr]
        body.insert(block[0], new.with_changes(leading_lines=first.leading_lines))  # type: ignore[union-attr]
    else:
        body.insert(later[0], new)
    return module.with_changes(body=body)


def remove_imports(module: cst.Module, dead: set[str]) -> cst.Module:
    """Drop the module-level import aliases whose local names are ``dead``; a line left without
    imports goes, its comments kept."""
    if not dead:
        return module

    emptied: set[int] = set()

    class _Remover(cst.CSTTransformer):
        def leave_SimpleStatementLine(
            self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
        ) -> cst.SimpleStatementLine:
            # A line whose imports are all gone is removed by StatementEditor below, which keeps
            # its comments; libcst would drop them with the line.
            if not updated_node.body:
                emptied.add(id(original_node))
                return original_node
            return updated_node

        def leave_Import(
            self, original_node: cst.Import, updated_node: cst.Import
        ) -> Union[cst.Import, cst.RemovalSentinel]:
            return _filter_aliases(updated_node, dead)

        def leave_ImportFrom(
            self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom
        ) -> Union[cst.ImportFrom, cst.RemovalSentinel]:
            if isinstance(updated_node.names, cst.ImportStar):
                return updated_node
            return _filter_aliases(updated_node, dead)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False  # only module-level imports are ours to remove

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

    module = module.visit(_Remover())
    return module.visit(StatementEditor({}, emptied)) if emptied else module


def _local_name(alias: cst.ImportAlias, from_import: bool) -> str:
    if alias.asname is not None:
        return alias.asname.name.value  # type: ignore[union-attr]
    full = cst.Module(body=[]).code_for_node(alias.name)
    return full if from_import else full.split(".")[0]


def _filter_aliases(node, dead: set[str]):  # type: ignore[no-untyped-def]
    from_import = isinstance(node, cst.ImportFrom)
    kept = [alias for alias in node.names if _local_name(alias, from_import) not in dead]
    if len(kept) == len(node.names):
        return node
    if not kept:
        return cst.RemovalSentinel.REMOVE
    kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    changes = {"names": kept}
    if from_import and node.rpar is not None and len(kept) == 1:
        changes.update(lpar=None, rpar=None)
    return node.with_changes(**changes)
