"""`set_context(mode=m, device_target=t, device_id=n)` as `set_context(mode=m)` + `set_device(t, n)`.

MindSpore 2.x deprecates the `device_target` and `device_id` keys of `set_context` for
`mindspore.set_device(device_target, device_id=None)`
(https://www.mindspore.cn/docs/en/master/api_python/mindspore/mindspore.set_device.html). The two
spellings leave the same context (mode, device target, device id: rules/releases/proofs.json),
so the split is exact where nothing else can tell them apart: a call that is a statement of its
own lines, with keyword arguments only, and with no comment inside it. The other keys' values
are names, attributes, constants or subscripts of those (moving one past another then changes no
order of effects). The device's may be computed (`device_id=get_device_id()`, 126 such calls in
mindspore-ai/models), as long as they call nothing that may read MindSpore's context: split, they
are evaluated after `set_context(...)` has set the other keys, which only such a call can tell.

The caller also makes sure it is the only call in the file that sets the device: set_device
takes one device per process, and a second call with another device id raises ("The
'mindspore.set_device' can not be modified", measured on 2.10) where set_context took it. The
one pair of calls that is merged instead is the zoo's commonest (`merge_device_pair`): the target
set first, the id right after it, alone or under an `if`.
"""

from __future__ import annotations

import ast
from typing import Optional, Union

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


def _blind_to_context(node: ast.AST) -> bool:
    """Whether ``node`` calls nothing that may read the context the other keys set (a device
    argument is evaluated after `set_context(...)` once split): `get_device_id()`,
    `int(os.getenv("DEVICE_ID"))` and `int(args.device_id)` are; `ms.get_context("device_id")`
    is not."""
    for item in ast.walk(node):
        if isinstance(item, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)):
            return False
        if isinstance(item, ast.Call):
            called = ast.unparse(item.func)
            if "context" in called.lower() or called.split(".")[0] in ("ms", "mindspore", "context"):
                return False
    return True


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
    if not all(_plain(keyword.value) for keyword in call.keywords if keyword.arg not in DEVICE_KEYS):
        return "an argument that is computed in the call"
    if not all(_blind_to_context(keywords[key].value) for key in DEVICE_KEYS if key in keywords):
        return "a device argument that may read MindSpore's context"
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


def _own_lines(statement: ast.stmt, lines: list[str]) -> bool:
    """Whether ``statement`` starts and ends its lines and holds no comment."""
    first, last = statement.lineno, statement.end_lineno or statement.lineno
    indent = lines[first - 1][: column(lines, first, statement.col_offset)]
    tail = lines[last - 1][column(lines, last, statement.end_col_offset or 0) :]
    return not indent.strip() and not tail.strip() and "#" not in "".join(lines[first - 1 : last])


def _pure_test(node: ast.AST) -> bool:
    """A condition that calls nothing: comparisons and boolean operators over plain values."""
    if isinstance(node, ast.BoolOp):
        return all(_pure_test(value) for value in node.values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _pure_test(node.operand)
    if isinstance(node, ast.Compare):
        return all(_pure_test(item) for item in (node.left, *node.comparators))
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_plain(item) for item in node.elts)
    return _plain(node)


def device_id_only(statement: ast.AST) -> Optional[ast.expr]:
    """The id of a `set_context(..., device_id=...)` statement that does not set the target: keyword
    arguments only, the others plain; else None."""
    if not isinstance(statement, ast.Expr) or not isinstance(statement.value, ast.Call):
        return None
    call = statement.value
    keywords = {keyword.arg: keyword.value for keyword in call.keywords}
    if call.args or None in keywords or "device_id" not in keywords or "device_target" in keywords:
        return None
    others = [value for key, value in keywords.items() if key != "device_id"]
    return keywords["device_id"] if all(_plain(value) for value in others) else None


def merge_device_pair(
    first: ast.stmt, then: ast.stmt, lines: list[str], mindspore: str
) -> Union[tuple[Edit, ...], str]:
    """The edits that turn a file's two device settings, `set_context(..., device_target=t)`
    followed right away by `set_context(..., device_id=n)` (alone, or first in an `if` whose
    condition calls nothing), into one `set_device` per path:

        set_context(mode=m, device_target=t)      set_context(mode=m)
        if t == "Ascend":                     ->  if t == "Ascend":
            set_context(device_id=n)                  set_device(t, n)
            ...                                       ...
                                                  else:
                                                      set_device(t)

    set_device takes one device per process, so the target cannot be set first and the id after
    it, as set_context allowed. Each path ends with the context the two set_context calls left;
    `t` is read after the condition instead of before it, which only a condition with effects
    could tell (it has none). An `else:` that is there gets `set_device(t)` first; an `elif`
    is left alone."""
    call = first.value if isinstance(first, ast.Expr) else None
    if not isinstance(call, ast.Call) or call.args or any(keyword.arg is None for keyword in call.keywords):
        return "positional or ** arguments"
    keywords = {keyword.arg: keyword for keyword in call.keywords}
    if "device_target" not in keywords or "device_id" in keywords:
        return "the first call does not set device_target alone"
    if not all(_plain(keyword.value) for keyword in call.keywords):
        return "an argument that is computed in the call"
    inner = then.body[0] if isinstance(then, ast.If) else then
    device_id = device_id_only(inner)
    if device_id is None:
        return "the second call is not `set_context(device_id=...)` right after the first"
    if isinstance(then, ast.If) and not _pure_test(then.test):
        return "the condition around the second call calls a function"
    if not _blind_to_context(device_id):
        return "a device argument that may read MindSpore's context"
    if not all(_own_lines(item, lines) for item in (first, inner)):
        return "a call shares its line, or holds a comment"
    orelse = then.orelse if isinstance(then, ast.If) else []
    if orelse and lines[orelse[0].lineno - 1].lstrip().startswith("elif"):
        return "an elif follows the second call's if"
    newline = newline_of(lines)
    target = source_of(lines, keywords["device_target"].value)
    head = _without_device_keys(first, call, lines, newline)
    inner_call = inner.value  # type: ignore[attr-defined]
    indent = lines[inner.lineno - 1][: column(lines, inner.lineno, inner.col_offset)]
    both = f"{mindspore}.set_device({target}, {source_of(lines, device_id)})"
    rest = [keyword for keyword in inner_call.keywords if keyword.arg != "device_id"]
    if rest:
        kept = ", ".join(f"{keyword.arg}={source_of(lines, keyword.value)}" for keyword in rest)
        both = f"{source_of(lines, inner_call.func)}({kept}){newline}{indent}{both}"
    inner_end = inner.end_lineno or inner.lineno
    second = Edit(
        (inner.lineno, column(lines, inner.lineno, inner.col_offset)),
        (inner_end, column(lines, inner_end, inner.end_col_offset or 0)),
        both,
    )
    if not isinstance(then, ast.If):
        return head, second
    alone = f"{mindspore}.set_device({target}){newline}"
    if orelse:
        where = orelse[0].lineno
        before = lines[where - 1][: column(lines, where, orelse[0].col_offset)]
        if before.strip():
            return "the else branch does not start a line of its own"
        return head, second, Edit((where, 0), (where, 0), f"{before}{alone}")
    outer = lines[then.lineno - 1][: column(lines, then.lineno, then.col_offset)]
    end = then.end_lineno or then.lineno
    return head, second, Edit((end + 1, 0), (end + 1, 0), f"{outer}else:{newline}{indent}{alone}")


def _without_device_keys(statement: ast.stmt, call: ast.Call, lines: list[str], newline: str) -> Edit:
    """``statement`` (a set_context call) without its device keys; its lines go if none is left."""
    rest = [keyword for keyword in call.keywords if keyword.arg not in DEVICE_KEYS]
    start, end = statement.lineno, statement.end_lineno or statement.lineno
    if not rest:
        return Edit((start, 0), (end + 1, 0), "")
    kept = ", ".join(f"{keyword.arg}={source_of(lines, keyword.value)}" for keyword in rest)
    span = (end, column(lines, end, statement.end_col_offset or 0))
    text = f"{source_of(lines, call.func)}({kept})"
    return Edit((start, column(lines, start, statement.col_offset)), span, text)


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def in_loop(parents: dict[ast.AST, ast.AST], node: ast.AST) -> bool:
    """Whether ``node`` is inside a loop of its own function (or of the module's code)."""
    current = parents.get(node)
    while current is not None and not isinstance(current, _SCOPES):
        if isinstance(current, _LOOPS):
            return True
        current = parents.get(current)
    return False


def _path(parents: dict[ast.AST, ast.AST], node: ast.AST) -> list[tuple[ast.AST, str]]:
    """(ancestor, the field of it that leads to ``node``), from the module down."""
    path: list[tuple[ast.AST, str]] = []
    child, current = node, parents.get(node)
    while current is not None:
        field = next(
            name
            for name, value in ast.iter_fields(current)
            if value is child or (isinstance(value, list) and any(item is child for item in value))
        )
        path.append((current, field))
        child, current = current, parents.get(current)
    return path[::-1]


def exclusive_paths(parents: dict[ast.AST, ast.AST], calls: list[ast.Call]) -> bool:
    """Whether no run can reach two of ``calls``: each pair parts at an `if`, one in its body and
    the other in its `else` (or `elif`), in one function. Each call then sets the device once
    per process, as a file's only call does (`if target == "Ascend": set_context(device_target=
    "Ascend", device_id=n) else: set_context(device_target="GPU")`)."""
    paths = [_path(parents, call) for call in calls]
    for index, first in enumerate(paths):
        for second in paths[index + 1 :]:
            parted = next(((a, b) for a, b in zip(first, second) if a[0] is not b[0] or a[1] != b[1]), None)
            if parted is None:
                return False
            (node, field), (other, other_field) = parted
            branches = {field, other_field} == {"body", "orelse"}
            if node is not other or not isinstance(node, ast.If) or not branches:
                return False
    return True
