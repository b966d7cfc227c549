"""MS303: `mindspore.jit` for a MindSpore older than 2.0, where it is `mindspore.ms_function`."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from typing import Optional, Union

from ms_migrate.analysis.names import NameResolver, all_names, enclosing_scopes
from ms_migrate.analysis.walk import walk
from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Edit, Fix, Severity, source_lines
from ms_migrate.facts.versions import Version, jit_spelling_for
from ms_migrate.reasons import Reason, registry
from ms_migrate.rewrite.text_edits import column
from ms_migrate.rules.base import Example, Examples, Rule, VersionRange

JIT = frozenset({"mindspore.jit", "mindspore.common.api.jit"})
MODULES = frozenset({"mindspore", "mindspore.common.api"})

REASONS = registry(
    Reason(
        "MSR023",
        "downgrade-jit-options",
        "this jit has no ms_function spelling known to do the same",
        "Before MindSpore 2.0 the decorator is `mindspore.ms_function(fn=None, obj=None, "
        "input_signature=None)`. `jit()`, `jit(fn)` and `jit(input_signature=...)` respell exactly; "
        "the 2.x options (capture_mode, jit_level, dynamic, fullgraph, backend, hash_args, jit_config, "
        "compile_once, mode) have no 1.x spelling, and a second positional argument would land on "
        "`obj`; a `from mindspore import jit` inside a function or a block is not followed. An "
        "import in a `try` that catches ImportError, or in an `if` whose other branch imports "
        "ms_function, is taken as the file's own fallback and left as it is, unreported. Decide "
        "by hand what the old runtime should do instead.",
    ),
)


# What each invalid example below is fixed to (run alone, on its target).
FIXED_1 = """\
import mindspore as ms


@ms.ms_function
def step(x):
    return x
"""

FIXED_2 = """\
from mindspore import ms_function


@ms_function
def step(x):
    return x
"""


class JitToMsFunction(Rule):
    """`mindspore.jit` does not exist before MindSpore 2.0; the same decorator is `ms_function`.

    `@ms.jit` raises "module 'mindspore' has no attribute 'jit'" on 1.x, and
    `from mindspore import jit` fails at import. MindSpore 2.0 renamed `ms_function` to `jit`
    (the r2.0 API pages; ms_function stayed, documented as deprecated, until 2.5, and the 2.7 to
    2.10 wheels lack it). The spelling per version is data: `rules/jit_spellings.json`.

    `jit`, `jit()`, `jit(fn)` and `jit(input_signature=...)` become `ms_function` in the same
    place: `ms.jit` -> `ms.ms_function`; `from mindspore import jit` -> `from mindspore import
    ms_function` with its uses renamed (or `ms_function as jit` where that name is taken or a
    use is shadowed). Options of 2.x's jit are left alone (MSR023).
    https://www.mindspore.cn/docs/en/r1.7/api_python/mindspore/mindspore.ms_function.html
    """

    code = "MS303"
    title = "jit for MindSpore before 2.0 is ms_function"
    kind = "downgrade"
    severity = Severity.ERROR
    targets = VersionRange(high="2.0")
    prefilter = ("jit",)
    reasons = REASONS
    examples = Examples(
        valid=(Example("import mindspore as ms\n\n\n@ms.ms_function\ndef step(x):\n    return x\n", "1.9"),),
        invalid=(
            Example(
                "import mindspore as ms\n\n\n@ms.jit\ndef step(x):\n    return x\n", "1.9", fixed=FIXED_1
            ),
            Example(
                "from mindspore import jit\n\n\n@jit\ndef step(x):\n    return x\n", "1.7", fixed=FIXED_2
            ),
        ),
    )

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        spelling = jit_spelling_for(ctx.target)
        if spelling.name == "jit":
            return
        parents = ctx.parents
        resolver = ctx.resolver
        lines = source_lines(ctx.text)
        keywords = frozenset(spelling.keywords or ())
        found: list[Diagnostic] = []
        converted: list[list[tuple[ast.AST, Edit]]] = []  # each group one fix: all of it, or none
        for node in ctx.nodes:
            if isinstance(node, ast.Attribute) and node.attr == "jit":
                if resolver.qualified_name(node, enclosing_scopes(parents, node)) not in JIT:
                    continue
                problem = _use_problem(parents, node, keywords, ctx.target < Version(1, 8))
                if problem:
                    found.append(REASONS["MSR023"].at(node.lineno, problem))
                    continue
                base = ast.get_source_segment(ctx.text, node.value) or ast.unparse(node.value)
                converted.append([(node, _replace(lines, node, f"{base}.{spelling.name}"))])
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in MODULES:
                result = _import(ctx, parents, resolver, lines, node, keywords, spelling.name)
                if isinstance(result, Diagnostic):
                    found.append(result)
                else:
                    converted += result
        message = (
            f"mindspore.jit does not exist before MindSpore 2.0 (target {ctx.target}): "
            f"it is mindspore.{spelling.name} there"
        )
        for group in converted:
            # An import renamed with its uses is one fix: applied in part (the import's edit waiting
            # on another rule's edit of the same statement), the uses would name what nothing binds.
            fix = Fix(tuple(edit for _, edit in group), "exact", f"spell it {spelling.name}")
            found += [self.diagnostic(node, message, fix) for node, _ in group]
        yield from sorted(found, key=lambda item: (item.line, item.col))


def _replace(lines: list[str], node: ast.AST, text: str) -> Edit:
    end = node.end_lineno or node.lineno  # type: ignore[attr-defined]
    return Edit(
        (node.lineno, column(lines, node.lineno, node.col_offset)),  # type: ignore[attr-defined]
        (end, column(lines, end, node.end_col_offset or 0)),  # type: ignore[attr-defined]
        text,
    )


def _use_problem(
    parents: dict[ast.AST, ast.AST], node: ast.AST, keywords: frozenset[str], static: bool = False
) -> Optional[str]:
    """Why this use of jit has no ms_function spelling, or None. ``static``: the target's
    ms_function takes only static shapes in input_signature (1.7)."""
    call = parents.get(node)
    if not (isinstance(call, ast.Call) and call.func is node):
        return None  # `@jit`, or jit passed on as a value
    if len(call.args) > 1 or any(isinstance(arg, ast.Starred) for arg in call.args):
        return "more than one positional argument (ms_function's second one is `obj`)"
    unknown = [item.arg or "**" for item in call.keywords if item.arg not in keywords]
    if unknown:
        return f"`{unknown[0]}=` is a 2.x jit option with no 1.x spelling"
    signature = next((item.value for item in call.keywords if item.arg == "input_signature"), None)
    dynamic = signature is not None and any(
        isinstance(item, ast.Constant) and item.value is None for item in walk(signature)
    )
    if static and dynamic:
        return (
            "input_signature with a dynamic shape (None): MindSpore 1.7's ms_function takes static "
            'shapes only ("Inputs is incompatible with input signature!", measured on 1.7.0)'
        )
    return None


_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def _guarded(parents: dict[ast.AST, ast.AST], node: ast.ImportFrom) -> bool:
    """An import in a `try` whose handler catches its failure, or in an `if` whose other branch
    imports ms_function: the file already runs where jit is missing."""
    block = parents.get(node)
    if isinstance(block, ast.If):
        # `if is_ms_version_2(): from mindspore import jit` / `else: ... ms_function as jit`
        other = block.orelse if node in block.body else block.body
        return any(
            isinstance(item, ast.ImportFrom) and any(alias.name == "ms_function" for alias in item.names)
            for item in other
        )
    if not (isinstance(block, ast.Try) and node in block.body):
        return False
    for handler in block.handlers:
        caught = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        if any(item is None or getattr(item, "id", None) in _IMPORT_ERRORS for item in caught):
            return True
    return False


def _uses(tree: ast.Module, local: str) -> Iterator[ast.Name]:
    for node in walk(tree):
        if isinstance(node, ast.Name) and node.id == local and isinstance(node.ctx, ast.Load):
            yield node


def _import(
    ctx: FileContext,
    parents: dict[ast.AST, ast.AST],
    resolver: NameResolver,
    lines: list[str],
    node: ast.ImportFrom,
    keywords: frozenset[str],
    name: str,
) -> Union[list[tuple[ast.AST, Edit]], Diagnostic]:
    """`from mindspore import jit [as j]`: the alias and its uses respelled (one group each), or
    why not. Where a use's line suppresses MS303, the uses stay and the alias keeps their name."""
    converted: list[list[tuple[ast.AST, Edit]]] = []
    for alias in node.names:
        if alias.name != "jit":
            continue
        local = alias.asname or alias.name
        if _guarded(parents, node):
            return []  # `try: from mindspore import jit` / `except ImportError: ... ms_function as jit`
        if node not in ctx.tree.body:
            return REASONS["MSR023"].at(node.lineno, "jit imported inside a function or a block")
        uses = list(_uses(ctx.tree, local))
        ours = [use for use in uses if resolver.is_free(local, enclosing_scopes(parents, use))]
        for use in ours:
            problem = _use_problem(parents, use, keywords, ctx.target < Version(1, 8))
            if problem:
                return REASONS["MSR023"].at(use.lineno, problem)
        suppressed = any(ctx.suppressed("MS303", use.lineno) for use in ours)
        rename = (
            alias.asname is None
            and name not in all_names(ctx.tree)
            and len(ours) == len(uses)
            and not suppressed
        )
        spelled = name if rename else f"{name} as {local}"
        group = [(alias, _replace(lines, alias, spelled))]
        if rename:
            group += [(use, _replace(lines, use, name)) for use in ours]
        converted.append(group)
    return converted
