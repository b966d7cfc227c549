"""The upgrade pipeline for one file's text: prefilter, analyse, plan, rewrite, validate.

Pure: text in, text and findings out. Nothing here reads or writes files.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import libcst as cst
from libcst.metadata import MetadataWrapper

from ms_migrate.analysis.grad_ops import Application, GradOpSite, ModuleAnalysis, analyse
from ms_migrate.analysis.project import ProjectIndex
from ms_migrate.context import FileContext
from ms_migrate.findings import Finding, Kind, converted, left_alone, note
from ms_migrate.plan import NetworkVarargs, Plan, plan_site
from ms_migrate.rewrite import imports
from ms_migrate.rewrite.transform import FORWARD_NAME, SCALED_FORWARD_NAME, StatementEditor, new_statements
from ms_migrate.rules import ms101_grad_operation as MS101
from ms_migrate.string_folding import fold_long_strings
from ms_migrate.versions import Version

# Files that mention neither GradOperation nor a base class that creates one cannot hold a site;
# most of a model zoo is skipped here, before any parsing.
PREFILTER = re.compile(r"GradOperation|TrainOneStep|PipelineCell")


class ParseFailure(Exception):
    """The input cannot be processed; ``line`` is 0 when no line is to blame."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


@dataclass
class MigrationResult:
    text: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def converted(self) -> int:
        return sum(finding.kind is Kind.CONVERTED for finding in self.findings)

    @property
    def left_alone(self) -> int:
        return sum(finding.kind is Kind.LEFT_ALONE for finding in self.findings)


# Deeper than this, libcst's native parser takes seconds per file and can overflow its stack
# (a 50,000-term `a + a + ...` ended in signal 11); real code stays far below it.
MAX_DEPTH = 1000


def _depth(tree: ast.AST) -> int:
    """The deepest nesting of the tree (iteratively: the tree may be deeper than the stack)."""
    deepest = 0
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def precheck(text: str) -> None:
    """Raise ParseFailure for text Python itself would reject, or that is too deep to rewrite.

    The cheap `ast` pass runs before libcst sees the text. It also compiles the tree: code that
    parses but compiles in no Python (`break` outside a loop, a repeated argument name) is a
    syntax error for the user to fix, not a failed rewrite.
    """
    try:
        tree = ast.parse(text)
    except SyntaxError as error:
        raise ParseFailure(f"syntax error: {error.msg}", error.lineno or 1) from error
    except (RecursionError, MemoryError) as error:
        raise ParseFailure("too deeply nested to process", 0) from error
    if _depth(tree) > MAX_DEPTH:
        raise ParseFailure("too deeply nested to process", 0)
    try:
        compile(tree, "<input>", "exec", dont_inherit=True)
    except SyntaxError as error:
        raise ParseFailure(f"syntax error: {error.msg}", error.lineno or 1) from error
    except RecursionError as error:
        raise ParseFailure("too deeply nested to process", 0) from error


def parse(text: str) -> cst.Module:
    try:
        return cst.parse_module(text)
    except Exception as error:  # ParserSyntaxError, and plain exceptions from the tokenizer
        # Python's own message and line are the ones users know from their interpreter.
        try:
            ast.parse(text)
        except SyntaxError as syntax_error:
            message = f"syntax error: {syntax_error.msg}"
            raise ParseFailure(message, syntax_error.lineno or 1) from error
        line = getattr(error, "raw_line", 1)
        raise ParseFailure(f"cannot parse: {getattr(error, 'message', error)}", line) from error


def _varargs_lookup(analysis: ModuleAnalysis, project: ProjectIndex) -> NetworkVarargs:
    def network_varargs(
        site: GradOpSite, application: Application, net: cst.BaseExpression
    ) -> Optional[bool]:
        if not (
            isinstance(net, cst.Attribute) and isinstance(net.value, cst.Name) and net.value.value == "self"
        ):
            return None
        owner = analysis.enclosing(application.function, cst.ClassDef) if application.function else None
        if not isinstance(owner, cst.ClassDef):
            return None
        return project.attribute_varargs(owner.name.value, net.attr.value)

    return network_varargs


def _plan_module(
    analysis: ModuleAnalysis, target: Version, project: ProjectIndex, context: Optional[FileContext] = None
) -> tuple[list[Plan], list[Finding]]:
    """Plans and findings for every site; a site whose creation or application line carries
    `# ms-migrate: ignore[MS101]` (or `# noqa: MS101`) is neither rewritten nor reported."""
    plans: list[Plan] = []
    findings: list[Finding] = []
    touched: set[int] = set()
    lookup = _varargs_lookup(analysis, project)
    for site in analysis.sites:
        lines = {site.line, *(application.line for application in site.applications)}
        if context is not None and any(context.suppressed(MS101.ID, line) for line in lines):
            continue
        outcome = plan_site(analysis, site, target, lookup)
        if isinstance(outcome, Finding):
            findings.append(outcome)
            continue
        statements = [{id(statement.line) for statement in plan.touched} for plan in outcome]
        combined = set().union(*statements)
        if combined & touched or sum(map(len, statements)) != len(combined):
            findings.append(left_alone(site.line, "MSR004", "shares statements with another site"))
            continue
        touched |= combined
        plans.extend(outcome)
    for use in analysis.inherited:
        findings.append(left_alone(use.line, "MSR006", f"{use.class_name} inherits from {use.base}"))
    return plans, findings


def _free_name(base: str, taken: set[str]) -> str:
    name, counter = base, 1
    while name in taken:
        counter += 1
        name = f"{base}_{counter}"
    taken.add(name)
    return name


def _apply(analysis: ModuleAnalysis, plans: list[Plan], findings: list[Finding]) -> Optional[cst.Module]:
    module = analysis.module
    module_names = imports.all_names(module)
    before = imports.loaded_names(module)
    replacements: dict[int, list[cst.BaseStatement]] = {}
    removals: set[int] = set()
    pending_import: Optional[str] = None
    applied = 0
    by_site: dict[int, list[Plan]] = {}
    for plan in plans:
        by_site.setdefault(id(plan.site), []).append(plan)
    for site_plans in by_site.values():
        # All of a site's applications, or none: the creation goes with the first one.
        references = [
            imports.module_reference(
                analysis.resolver,
                module_names,
                plan.module,
                analysis.scopes_of(plan.application.outer),
                pending_import,
            )
            for plan in site_plans
        ]
        if any(reference is None for reference in references):
            findings.append(left_alone(site_plans[0].site.line, "MSR011", "no free name for mindspore"))
            continue
        for plan, reference in zip(site_plans, references):
            assert reference is not None
            pending_import = reference.new_import or pending_import
            function = f"{reference.expression}.{plan.function_name}"
            helper = ""
            if plan.scaled_by is not None:
                helper = _free_name(SCALED_FORWARD_NAME, module_names)
            elif plan.wrapper:
                helper = _free_name(FORWARD_NAME, module_names)
            statement = plan.application.statement
            assert statement is not None
            replacements[id(statement.line)] = new_statements(plan, function, module, helper)
            removals |= {id(removed.line) for removed in plan.removals}
            findings.append(converted(plan.site.line, MS101.ID, MS101.describe(plan, function)))
            findings.extend(note(plan.site.line, code) for code in plan.notes)
            applied += 1
    if not applied:
        return None
    new_module = module.visit(StatementEditor(replacements, removals))
    if pending_import is not None:
        new_module = imports.add_import(new_module, pending_import)
    candidates = {
        name
        for name, binding in analysis.resolver.imports.items()
        if binding.qualified.split(".")[0] == "mindspore"
    }
    return imports.remove_unused_imports(new_module, candidates, before)


def _actionable(text: str, target: Version, project: ProjectIndex) -> list[Plan]:
    # Only GradOperation creations become plans (inherited uses are refusals), so text without
    # the name needs no second analysis.
    if "GradOperation" not in text:
        return []
    wrapper = MetadataWrapper(parse(fold_long_strings(text).text), unsafe_skip_copy=True)
    view = project.with_local(text, project.local_path)
    plans, _ = _plan_module(analyse(wrapper), target, view, FileContext(text, target))
    return plans


def migrate_text(
    text: str, target: Version, project: Optional[ProjectIndex] = None, path: Optional[Path] = None
) -> MigrationResult:
    """Upgrade GradOperation sites in ``text`` for MindSpore ``target``.

    ``project`` knows the other files of the run (network classes defined and built there);
    without it only this file is consulted. ``path`` is where ``text`` lives among them.
    """
    if not PREFILTER.search(text):
        return MigrationResult(text)
    precheck(text)
    project = project or ProjectIndex()
    folded = fold_long_strings(text)  # libcst cannot take thousands of adjacent literals
    wrapper = MetadataWrapper(parse(folded.text), unsafe_skip_copy=True)
    analysis = analyse(wrapper)
    project = project.with_local(text, path)
    context = FileContext(text, target, path)
    plans, findings = _plan_module(analysis, target, project, context)
    new_module = _apply(analysis, plans, findings) if plans else None
    findings = [finding for finding in findings if not context.suppressed(finding.code, finding.line)]
    findings = sorted(dict.fromkeys(findings), key=lambda finding: (finding.line, finding.kind.value))
    if new_module is None:
        return MigrationResult(text, findings)
    new_text = folded.unfold(new_module.code)
    for ending in ("\r\n", "\r", "\n"):
        # libcst drops the final newline of a file whose lines end in a bare CR.
        if text.endswith(ending):
            if not new_text.endswith(ending):
                new_text += ending
            break
    problem = _validate(new_text, target, project)
    if problem:
        kept = [finding for finding in findings if finding.kind is Kind.LEFT_ALONE]
        first = min(plan.site.line for plan in plans)
        return MigrationResult(text, [*kept, left_alone(first, "MSR099", problem)])
    return MigrationResult(new_text, findings)


def _validate(new_text: str, target: Version, project: ProjectIndex) -> Optional[str]:
    try:
        compile(new_text, "<rewritten>", "exec")
    except SyntaxError as error:
        return f"output does not compile: {error.msg} (line {error.lineno})"
    try:
        remaining = _actionable(new_text, target, project)
    except ParseFailure as error:
        return f"output does not parse: {error.message}"
    if remaining:
        return f"output is not a fixed point: {len(remaining)} site(s) would change again"
    return None
