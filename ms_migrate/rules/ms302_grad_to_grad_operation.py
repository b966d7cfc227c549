"""MS302: `grad(fn[, grad_position][, weights])` for a MindSpore older than 1.8."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Optional, Union

from ms_migrate.analysis.names import NameResolver, all_names, enclosing_scopes, module_reference
from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Edit, Fix, Severity
from ms_migrate.reasons import Reason, registry
from ms_migrate.rewrite.text_edits import column, dead_imports, import_edit, newline_of
from ms_migrate.rules.base import Example, Examples, Rule, VersionRange

GRAD = frozenset({"mindspore.grad", "mindspore.ops.grad"})

REASONS = registry(
    Reason(
        "MSR021",
        "downgrade-grad-shape",
        "this grad has no GradOperation form that returns the same structure",
        "Below MindSpore 1.8 only GradOperation exists. `grad(fn)` and `grad(fn, 0)` (the first "
        "input's gradient), `grad(fn, None, weights)` (the weights' gradients) and "
        "`grad(fn, (0, ..., n-1))` for a `def` of n plain parameters (every input's gradient) map "
        "to a GradOperation returning exactly what grad returned. Other positions, input and "
        "weight gradients together, has_aux and return_ids need index selection on the result; "
        "convert them by hand.",
    ),
)


class GradToGradOperation(Rule):
    """`mindspore.grad` and `mindspore.ops.grad` do not exist before MindSpore 1.8.

    The GradOperation that returns the same structure replaces the call where there is one:
    `grad(fn)` / `grad(fn, 0)` is `GradOperation()(fn)` (a bare tensor), `grad(fn, None, w)` is
    `GradOperation(get_by_list=True)(fn, w)` (a tuple per weight) and `grad(fn, (0, 1))` on a
    two-parameter `def` is `GradOperation(get_all=True)(fn)` (a tuple per input). Neither form
    runs a separate forward, so there is nothing to merge: measured on MindSpore 2.10 CPU, with a
    BatchNorm network for the weights, bit-identical in PYNATIVE and GRAPH mode. Note that on
    2.10 `grad(fn, (0,))` returns a bare tensor, not a 1-tuple: it maps like `grad(fn, 0)`.
    https://www.mindspore.cn/docs/en/r1.8/api_python/ops/mindspore.ops.grad.html
    """

    code = "MS302"
    title = "grad for MindSpore before 1.8 becomes the GradOperation that returns the same"
    kind = "downgrade"
    severity = Severity.ERROR
    targets = VersionRange(high="1.8")
    prefilter = ("grad",)
    reasons = REASONS
    examples = Examples(
        valid=(Example("import mindspore as ms\ng = ms.ops.GradOperation()(fn)\n", "1.7"),),
        invalid=(
            Example("import mindspore as ms\n\n\ndef step(net, weights, x):\n"
                    "    return ms.grad(net, None, weights)(x)\n", "1.7"),
        ),
    )

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        resolver = NameResolver.for_module(ctx.tree)
        parents = {child: node for node in ast.walk(ctx.tree) for child in ast.iter_child_nodes(node)}
        taken = all_names(ctx.tree)
        lines = ctx.text.splitlines(keepends=True)
        named: dict[str, list[ast.FunctionDef]] = {}
        for node in ast.walk(ctx.tree):
            if isinstance(node, ast.FunctionDef):
                named.setdefault(node.name, []).append(node)
        # A def known by its name alone: one of that name in the file (its parameter count counts).
        definitions = {name: nodes[0] for name, nodes in named.items() if len(nodes) == 1}
        found: list[Diagnostic] = []
        converted: list[ast.Call] = []
        edits: list[Edit] = []
        new_import: Optional[str] = None
        for call in (node for node in ast.walk(ctx.tree) if isinstance(node, ast.Call)):
            if ctx.qualified_name(call.func) not in GRAD:
                continue
            form = _form(call, definitions)
            if isinstance(form, str):
                found.append(REASONS["MSR021"].at(call.lineno, form))
                continue
            # A local `ms` in the function around the call must not be taken for the module.
            scopes = enclosing_scopes(parents, call)
            reference = module_reference(resolver, taken, "mindspore", scopes, new_import)
            if reference is None:
                found.append(REASONS["MSR021"].at(call.lineno, "no free name for mindspore"))
                continue
            new_import = reference.new_import or new_import
            flags, operands = form
            end = call.end_lineno or call.lineno
            applied = ", ".join(_source(ctx.text, item) for item in operands)
            replacement = f"{reference.expression}.ops.GradOperation({flags})({applied})"
            edits.append(
                Edit(
                    (call.lineno, column(lines, call.lineno, call.col_offset)),
                    (end, column(lines, end, call.end_col_offset or 0)),
                    replacement,
                )
            )
            converted.append(call)
        if converted:
            edits += dead_imports(ctx.tree, lines, {id(call.func) for call in converted}, "grad")
            if new_import is not None:
                edits.append(import_edit(ctx.tree, lines, new_import, newline_of(lines)))
            fix = Fix(tuple(edits), "exact", "the GradOperation that returns the same structure")
            for call in converted:
                message = (
                    f"grad does not exist before MindSpore 1.8 (target {ctx.target}): "
                    f"{ast.unparse(call)} -> GradOperation"
                )
                found.append(self.diagnostic(call.func, message, fix))
        yield from sorted(found, key=lambda item: (item.line, item.col))


def _form(
    call: ast.Call, definitions: dict[str, ast.FunctionDef]
) -> Union[tuple[str, tuple[ast.expr, ...]], str]:
    """(GradOperation flags, what it is applied to), or why there is no such form."""
    if any(isinstance(arg, ast.Starred) for arg in call.args) or len(call.args) > 3:
        return "starred or extra arguments"
    names = ("fn", "grad_position", "weights")
    given: dict[str, ast.expr] = dict(zip(names, call.args))
    for keyword in call.keywords:
        if keyword.arg not in names or keyword.arg in given:
            return f"the keyword {keyword.arg or '**'}= (has_aux, return_ids: by hand)"
        given[keyword.arg] = keyword.value
    fn, weights = given.get("fn"), given.get("weights")
    if fn is None:
        return "no function"
    position = given.get("grad_position", ast.Constant(0))
    positions = _positions(position)

    if weights is None or (isinstance(weights, ast.Constant) and weights.value is None):
        if positions == (0,):
            return "", (fn,)
        function = definitions.get(fn.id) if isinstance(fn, ast.Name) else None
        count = _plain_parameters(function)
        if positions is not None and count is not None and count > 1 and positions == tuple(range(count)):
            return "get_all=True", (fn,)
        return "input gradients other than the first one or all of a known def"
    if positions == "none":
        return "get_by_list=True", (fn, weights)
    return "input and weight gradients together (the result needs index selection)"


def _source(text: str, node: ast.expr) -> str:
    return ast.get_source_segment(text, node) or ast.unparse(node)


def _positions(node: ast.expr) -> Union[tuple[int, ...], str, None]:
    """(0,) for 0 or (0,); the tuple for a literal tuple of ints; "none" for None; else None."""
    if isinstance(node, ast.Constant) and node.value is None:
        return "none"
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return (node.value,)
    if isinstance(node, ast.Tuple) and all(
        isinstance(item, ast.Constant) and type(item.value) is int for item in node.elts
    ):
        return tuple(item.value for item in node.elts)  # type: ignore[attr-defined]
    return None


def _plain_parameters(function: Optional[ast.FunctionDef]) -> Optional[int]:
    if function is None:
        return None
    arguments = function.args
    if arguments.posonlyargs or arguments.kwonlyargs or arguments.vararg or arguments.kwarg:
        return None
    if arguments.defaults:
        return None
    return len(arguments.args)
