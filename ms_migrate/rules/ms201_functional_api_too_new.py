"""MS201: `mindspore.value_and_grad` / `mindspore.grad` on a target older than 2.0."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Optional

from ms_migrate.analysis.arguments import bind
from ms_migrate.analysis.names import bindings_in, compiled_function, enclosing_scopes
from ms_migrate.analysis.walk import walk
from ms_migrate.analysis.weights import known_parameter_tuple, written_as_parameter_tuple
from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Edit, Fix, Severity, source_lines
from ms_migrate.facts.versions import Version
from ms_migrate.reasons import Reason, registry
from ms_migrate.rewrite.cell_init import own_init
from ms_migrate.rewrite.text_edits import column, newline_of
from ms_migrate.rules.base import Example, Examples, Rule, VersionRange
from ms_migrate.rules.ms202_unknown_grad_keyword import parameters

TOP_LEVEL = {"mindspore.value_and_grad": "value_and_grad", "mindspore.grad": "grad"}
BEFORE_1_8 = (
    "before 1.8 only GradOperation takes weights: rewrite the step with it "
    "(`ms-migrate downgrade` does, for value_and_grad(fn, None, weights): MS301)"
)

REASONS = registry(
    Reason(
        "MSR024",
        "downgrade-grad-keyword",
        "this value_and_grad / grad passes a keyword MindSpore 1.8-1.10's ops.* form does not take",
        "MindSpore 1.8 to 1.10 spell the functional API `mindspore.ops.value_and_grad(fn, "
        "grad_position, weights, has_aux)` and `mindspore.ops.grad(...)` with the same four "
        "parameters. `return_ids=` (2.0 / 2.3) has no spelling there, so respelling the call "
        "would trade one error for another (TypeError at run time): the site is left as it is, "
        "for a hand conversion. `sens_param=` (2.8) has none either, but GradOperation takes it: "
        "MS301 and MS302 write the GradOperation forms for such a call, and where they cannot, "
        "say why (MSR020, MSR021).",
    ),
)


# What each invalid example below is fixed to (run alone, on its target).
FIXED_1 = """\
import mindspore as ms
fn = ms.ops.value_and_grad(net, None, ms.ParameterTuple(weights))
"""

FIXED_2 = """\
from mindspore.ops import grad
"""

FIXED_3 = """\
from mindspore import Tensor
from mindspore.ops import value_and_grad as vg
"""


class FunctionalApiTooNew(Rule):
    """The functional autodiff API moved to the top-level `mindspore` package in 2.0.

    Before 2.0 `mindspore.value_and_grad` raises "module 'mindspore' has no attribute
    'value_and_grad'" when the line runs (and `from mindspore import grad` fails at import).
    MindSpore 1.8 to 1.10 have the same functions as `mindspore.ops.value_and_grad` and
    `mindspore.ops.grad` (1.8 release notes), so the fix spells them there. For 1.8 and 1.9 it
    also wraps weights not written as a ParameterTuple in one: given a Python list
    (`trainable_params()`), their `ops.value_and_grad` returns the gradients of every Parameter
    the function uses, not just the list's (measured on 1.8.1 and 1.9.0; 1.10.0 is right).
    Before 1.8 there is no functional form with weights: the finding stays, and the code needs
    GradOperation.
    See https://www.mindspore.cn/docs/en/r2.0/api_python/mindspore/mindspore.value_and_grad.html
    """

    code = "MS201"
    title = "mindspore.value_and_grad / grad do not exist before MindSpore 2.0"
    kind = "lint"
    severity = Severity.ERROR
    targets = VersionRange(high="2.0")
    prefilter = ("value_and_grad", "grad")
    reasons = REASONS
    examples = Examples(
        valid=(
            Example("import mindspore as ms\nfn = ms.value_and_grad(net, None, weights)\n", "2.0"),
            Example("import mindspore as ms\nfn = ms.ops.value_and_grad(net, None, weights)\n", "1.8"),
            Example("from mindspore import Tensor\nfrom mindspore.ops import grad\n", "1.8"),
        ),
        invalid=(
            Example(
                "import mindspore as ms\nfn = ms.value_and_grad(net, None, weights)\n", "1.9", fixed=FIXED_1
            ),
            Example("from mindspore import grad\n", "1.8", fixed=FIXED_2),
            Example("from mindspore import Tensor, value_and_grad as vg\n", "1.9", fixed=FIXED_3),
            Example("import mindspore\ng = mindspore.grad(net)\n", "1.7"),
        ),
    )

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        has_ops = ctx.target >= Version(1, 8)
        lines = source_lines(ctx.text)
        calls = {id(node.func): node for node in ctx.calls}
        for node in ctx.nodes:
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "mindspore":
                moved = [alias for alias in node.names if alias.name in TOP_LEVEL.values()]
                fix = _ops_import(ctx.text, node, moved) if has_ops and moved else None
                for alias in moved:
                    where = "mindspore.ops" if has_ops else BEFORE_1_8
                    yield self.diagnostic(
                        alias,
                        f"`from mindspore import {alias.name}` fails at import before MindSpore 2.0 "
                        f"(target {ctx.target}); use {where}",
                        fix,
                    )
            elif isinstance(node, ast.Attribute) and ctx.qualified_name(node) in TOP_LEVEL:
                name = TOP_LEVEL[ctx.qualified_name(node)]  # type: ignore[index]
                message = (
                    f"`mindspore.{name}` does not exist before MindSpore 2.0: \"module 'mindspore' has "
                    f"no attribute '{name}'\" at run time (target {ctx.target})"
                )
                fix = None
                call = calls.get(id(node))
                taken = set(parameters(name, ctx.target))
                unknown = [item.arg for item in call.keywords if item.arg not in taken] if call else []
                if has_ops and unknown:
                    # mindspore.ops.grad would fail on the keyword instead: the site stays, for MS202;
                    # with sens_param, for MS301 and MS302, which write GradOperation or say why not.
                    message += f"; `{unknown[0]}=` does not exist on {ctx.target} either (MS202), so it stays"
                    if set(unknown) != {"sens_param"}:
                        yield REASONS["MSR024"].at(node.lineno, f"`{unknown[0]}=` on {ctx.target}")
                elif has_ops:
                    base = ast.get_source_segment(ctx.text, node.value) or ""
                    edits = [_replace(lines, node, f"{base}.ops.{name}")]
                    weights = _weights(call) if call is not None and ctx.target < Version(1, 10) else None
                    problem = None
                    if weights is not None and not written_as_parameter_tuple(weights):
                        # 1.8 and 1.9 given a list return the gradients of every Parameter the
                        # function uses (measured on 1.8.1 and 1.9.0; 1.10.0 only the list's).
                        problem = _wrap_weights(ctx, ctx.parents, call, weights, base, lines, edits)  # type: ignore[arg-type]
                    if problem:
                        message += f"; {problem}, so it stays"
                        yield REASONS["MSR024"].at(node.lineno, problem)
                    else:
                        fix = Fix(tuple(edits), "exact", f"use {base}.ops.{name}")
                        message += f"; use mindspore.ops.{name}"
                else:
                    message += f"; {BEFORE_1_8}"
                yield self.diagnostic(node, message, fix)


def _replace(lines: list[str], node: ast.expr, text: str) -> Edit:
    end = node.end_lineno or node.lineno
    return Edit(
        (node.lineno, column(lines, node.lineno, node.col_offset)),
        (end, column(lines, end, node.end_col_offset or node.col_offset)),
        text,
    )


def _wrap_weights(
    ctx: FileContext,
    parents: dict[ast.AST, ast.AST],
    call: ast.Call,
    weights: ast.expr,
    base: str,
    lines: list[str],
    edits: list[Edit],
) -> Optional[str]:
    """Add the edit making ``weights`` a ParameterTuple, or say why the site must stay: inside
    `construct` or a jit function GRAPH mode cannot build one ("'type' object is not iterable"
    on 2.10), so there the weights must be known to be one already."""
    if _bound_to_parameter_tuple(ctx.tree, parents, call, weights):
        return None
    compiled = compiled_function(parents, call) or _jitted_by_name(ctx.tree, parents, call)
    if compiled is None:
        written = ast.get_source_segment(ctx.text, weights) or ast.unparse(weights)
        edits.append(_replace(lines, weights, f"{base}.ParameterTuple({written})"))
        return None
    class_def = parents.get(compiled)
    init = own_init(class_def) if isinstance(class_def, ast.ClassDef) else None
    if init is not None and known_parameter_tuple(compiled, init, weights):
        return None
    return (
        f"the weights are not known to be a ParameterTuple, and `{compiled.name}` cannot build one "
        f"(GRAPH mode); given a list, {ctx.target} differentiates every Parameter the function uses"
    )


def _bound_to_parameter_tuple(
    tree: ast.Module, parents: dict[ast.AST, ast.AST], call: ast.Call, weights: ast.expr
) -> bool:
    """``weights`` is a name whose one binding, in the nearest scope that binds it, is written as
    a ParameterTuple (`weights = optimizer.parameters`)."""
    if not isinstance(weights, ast.Name):
        return False
    for scope in [*enclosing_scopes(parents, call), tree]:
        bindings = bindings_in(scope, weights.id)  # type: ignore[arg-type]
        if not bindings:
            continue
        only = bindings[0] if len(bindings) == 1 else None
        return isinstance(only, ast.Assign) and written_as_parameter_tuple(only.value)
    return False


def _jitted_by_name(
    tree: ast.Module, parents: dict[ast.AST, ast.AST], call: ast.Call
) -> Optional[ast.FunctionDef]:
    """The function around ``call`` when the file passes it to jit or ms_function by name
    (`step = ms.jit(train_step)`): GRAPH mode compiles it as a decorated one."""
    function = next(
        (scope for scope in enclosing_scopes(parents, call) if isinstance(scope, ast.FunctionDef)), None
    )
    if function is None:
        return None
    for node in walk(tree):
        if isinstance(node, ast.Call) and any(
            isinstance(arg, ast.Name) and arg.id == function.name for arg in node.args
        ):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if called in ("jit", "ms_function"):
                return function
    return None


def _weights(call: ast.Call) -> Optional[ast.expr]:
    """The weights a value_and_grad / grad call passes (third argument or `weights=`), if any."""
    given = bind(call, ("fn", "grad_position", "weights")).given.get("weights")
    if given is None or (isinstance(given, ast.Constant) and given.value is None):
        return None
    return given


def _spelled(alias: ast.alias) -> str:
    return f"{alias.name} as {alias.asname}" if alias.asname else alias.name


def _ops_import(text: str, node: ast.ImportFrom, moved: list[ast.alias]) -> Optional[Fix]:
    """`from mindspore import grad` -> `from mindspore.ops import grad`; other names stay where
    they were. Only for an import alone on its line(s), so the split keeps the indentation."""
    raw_lines = source_lines(text)
    newline = newline_of(raw_lines)
    lines = [line.rstrip("\r\n") for line in raw_lines]
    end_line, end_col = node.end_lineno or node.lineno, node.end_col_offset or 0
    before = lines[node.lineno - 1][: node.col_offset]
    after = lines[end_line - 1][end_col:]
    if before.strip() or (after.strip() and not after.strip().startswith("#")):
        return None
    kept = [alias for alias in node.names if alias not in moved]
    statements = [f"from mindspore.ops import {', '.join(map(_spelled, moved))}"]
    if kept:
        statements.insert(0, f"from mindspore import {', '.join(map(_spelled, kept))}")
    edit = Edit((node.lineno, node.col_offset), (end_line, end_col), f"{newline}{before}".join(statements))
    return Fix((edit,), "exact", "import them from mindspore.ops")
