"""`set_context(mode=m, device_target=t, device_id=n)` as `set_context(mode=m)` + `set_device(t, n)`.

MindSpore 2.x deprecates the `device_target` and `device_id` keys of `set_context` for
`mindspore.set_device(device_target, device_id=None)`
(https://www.mindspore.cn/docs/en/master/api_python/mindspore/mindspore.set_device.html). The two
spellings leave the same context (mode, device target, device id: rules/releases/proofs.json),
so the split is exact where nothing else can tell them apart: a call that is a statement of its
own lines, with keyword arguments only, whose values are names, attributes, constants or
subscripts of those (moving one past another then changes no order of effects), and with no
comment inside it. The caller also makes sure it is the only call in the file that sets the
device: set_device takes one device per process, and a second call with another device id
raises ("The 'mindspore.set_device' can not be modified", measured on 2.10) where set_context
took it.
"""

from __future__ import annotations

import ast
from typing import Union

from ms_migrate.diagnostics import Edit
from ms_migrate.rewrite.text_edits import column, newline_of, source_of

DEVICE_KEYS = ("device_target", "device_id")
SET_CONTEXT = ("mindspore.set_context", "mindspore.context.set_context")


def _plain(node: ast.AST) -> bool:
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.Attribute):
        return _plain(node.value)
    if isinstance(node, ast.Subscript):
        return _plain(node.value) and _plain(node.slice)
    return False


def split_set_context(statement: ast.AST, lines: list[str], mindspore: str) -> Union[Edit, str]:
    """The edit that splits ``statement`` (an expression statement calling set_context with
    `device_target=`), spelling `set_device` through ``mindspore``; or why it is not exact."""
    if not isinstance(statement, ast.Expr) or not isinstance(statement.value, ast.Call):
        return "set_context's result is used"
    call = statement.value
    if call.args or any(keyword.arg is None for keyword in call.keywords):
        return "positional or ** arguments"
    keywords = {keyword.arg: keyword for keyword in call.keywords}
    if "device_target" not in keywords:
        return "device_id without device_target"
    if not all(_plain(keyword.value) for keyword in call.keywords):
        return "an argument that is computed in the call"
    first, last = statement.lineno, statement.end_lineno or statement.lineno
    indent = lines[first - 1][: column(lines, first, statement.col_offset)]
    tail = lines[last - 1][column(lines, last, statement.end_col_offset or 0) :]
    span = "".join(lines[first - 1 : last])
    if indent.strip() or tail.strip() or "#" in span:
        return "the call shares its line, or holds a comment"
    rest = [keyword for keyword in call.keywords if keyword.arg not in DEVICE_KEYS]
    device = [source_of(lines, keywords["device_target"].value)]
    if "device_id" in keywords:
        device.append(source_of(lines, keywords["device_id"].value))
    newline = newline_of(lines)
    text = f"{mindspore}.set_device({', '.join(device)})"
    if rest:
        kept = ", ".join(f"{keyword.arg}={source_of(lines, keyword.value)}" for keyword in rest)
        text = f"{source_of(lines, call.func)}({kept}){newline}{indent}{text}"
    end = (last, column(lines, last, statement.end_col_offset or 0))
    return Edit((first, column(lines, first, statement.col_offset)), end, text)
