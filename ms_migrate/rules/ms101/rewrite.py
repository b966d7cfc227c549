"""MS101 on one file: find the sites, plan each, and carry the plans out on the libcst tree.

Pure: a ``FileContext`` in, the rewritten text (or None) and the diagnostics out. The engine
applies the text as a fix and validates it like any other rule's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from ms_migrate.analysis.project import ProjectIndex
from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Severity
from ms_migrate.rewrite import imports
from ms_migrate.rewrite.statements import StatementEditor
from ms_migrate.rules.ms101.analysis import Application, GradOpSite, ModuleAnalysis, analyse
from ms_migrate.rules.ms101.plan import NetworkVarargs, Plan, plan_site
from ms_migrate.rules.ms101.reasons import left_alone, note
from ms_migrate.rules.ms101.transform import FORWARD_NAME, SCALED_FORWARD_NAME, line_limit, new_statements

CODE = "MS101"


@dataclass
class Rewrite:
    """What MS101 makes of a file: the new text when a site converts, and what to report."""

    text: Optional[str] = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    converted: list[Diagnostic] = field(default_factory=list)  # one per converted application


def describe(plan: Plan, function: str) -> str:
    flags = plan.site.flags.describe() if plan.site.flags else ""
    merged = ", forward merged" if plan.forward is not None else ""
    sens = ""
    if plan.sens_param:
        sens = ", sens_param=True"
    elif plan.scaled_by is not None:
        sens = f", sens by scaling the forward ({plan.aux})"
    wrapped = ", through a def (construct takes *args)" if plan.wrapper else ""
    origin = f"self.{plan.site.name} from {plan.site.inherited_from}: " if plan.site.inherited_from else ""
    return f"{origin}GradOperation({flags}) -> {function}{merged}{sens}{wrapped}"


def rewrite(ctx: FileContext) -> Rewrite:
    project = ctx.project.with_local(ctx.text, ctx.path)
    analysis = analyse(ctx.cst, project)
    result = Rewrite()
    plans = _plan_module(analysis, ctx, project, result.diagnostics)
    new_module = _apply(analysis, plans, result, ctx.folded.text) if plans else None
    if new_module is None:
        return result
    new_text = ctx.folded.unfold(new_module.code)
    for ending in ("\r\n", "\r", "\n"):
        # libcst drops the final newline of a file whose lines end in a bare CR.
        if ctx.text.endswith(ending):
            if not new_text.endswith(ending):
                new_text += ending
            break
    result.text = new_text
    return result


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
    analysis: ModuleAnalysis, ctx: FileContext, project: ProjectIndex, diagnostics: list[Diagnostic]
) -> list[Plan]:
    """Plans for every site, refusals into ``diagnostics``; a site whose creation or application
    line carries `# ms-migrate: ignore[MS101]` (or `# noqa: MS101`) is neither rewritten nor
    reported."""
    plans: list[Plan] = []
    touched: set[int] = set()
    lookup = _varargs_lookup(analysis, project)
    for site in analysis.sites:
        lines = {site.line, *(application.line for application in site.applications)}
        if any(ctx.suppressed(CODE, line) for line in lines):
            continue
        outcome = plan_site(analysis, site, ctx.target, lookup)
        if isinstance(outcome, Diagnostic):
            diagnostics.append(outcome)
            continue
        statements = [{id(statement.line) for statement in plan.touched} for plan in outcome]
        combined = set().union(*statements)
        if combined & touched or sum(map(len, statements)) != len(combined):
            diagnostics.append(left_alone(site.line, "MSR004", "shares statements with another site"))
            continue
        touched |= combined
        plans.extend(outcome)
    for use in analysis.inherited:
        diagnostics.append(left_alone(use.line, "MSR006", f"{use.class_name} inherits from {use.base}"))
    return plans


def _free_name(base: str, taken: set[str]) -> str:
    name, counter = base, 1
    while name in taken:
        counter += 1
        name = f"{base}_{counter}"
    taken.add(name)
    return name


def _apply(analysis: ModuleAnalysis, plans: list[Plan], result: Rewrite, text: str) -> Optional[cst.Module]:
    module = analysis.module
    source_lines = text.splitlines()
    limit = line_limit(text)
    module_names = imports.all_names(module)
    before = imports.loaded_names(module)
    replacements: dict[int, list[cst.BaseStatement]] = {}
    removals: set[int] = set()
    pending_import: Optional[str] = None
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
            refusal = left_alone(site_plans[0].site.line, "MSR011", "no free name for mindspore")
            result.diagnostics.append(refusal)
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
            start = source_lines[analysis.line_of(statement.line) - 1]
            indent = start[: len(start) - len(start.lstrip())]
            removals |= {id(removed.line) for removed in plan.removals}
            first = all(id(earlier) in removals for earlier in statement.block.body[: statement.index])
            replacements[id(statement.line)] = new_statements(
                plan, function, module, helper, indent, limit, first_in_block=first
            )
            line = plan.site.line
            converted = Diagnostic(CODE, line, 0, (line, 0), describe(plan, function), Severity.INFO)
            result.converted.append(converted)
            result.diagnostics.append(converted)
            result.diagnostics.extend(note(line, code) for code in plan.notes)
    if not result.converted:
        return None
    # A removed creation's comments described the op, which is gone; other removed lines (a
    # forward merged into the grad call) did work that goes on elsewhere, and keep theirs.
    creations = frozenset(id(plan.site.statement.line) for plan in plans if plan.site.statement is not None)
    new_module = module.visit(StatementEditor(replacements, removals, creations & removals))
    if pending_import is not None:
        new_module = imports.add_import(new_module, pending_import)
    candidates = {
        name
        for name, binding in analysis.resolver.imports.items()
        if binding.qualified.split(".")[0] == "mindspore"
    }
    return imports.remove_unused_imports(new_module, candidates, before)
