"""MS101 on one file, decided on ``ast``: which sites convert, to what, and why the others stay.

Pure: a ``FileContext`` in, a ``Decision`` out. Only a decision with conversions is carried out
on libcst (``ms_migrate.rules.ms101.rewrite``), so a file whose sites are all left alone is never
parsed with libcst.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Optional

from ms_migrate.analysis.names import NamesOf, free_name, module_reference
from ms_migrate.analysis.project import ProjectIndex
from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Severity
from ms_migrate.rules.ms101.analysis import Application, GradOpSite, ModuleAnalysis, analyse
from ms_migrate.rules.ms101.plan import INDIRECT, WRAPPER_WHY, NetworkShape, Plan, plan_site
from ms_migrate.rules.ms101.reasons import left_alone, note

CODE = "MS101"
SCALED_FORWARD_NAME = "_scaled_forward"
FORWARD_NAME = "_forward"


@dataclass(frozen=True)
class Conversion:
    """A plan with the names the new code uses: the grad function's spelling and the def's name."""

    plan: Plan
    function: str  # `ms.value_and_grad`, `ops.grad`, ...
    helper: str = ""  # the def a scaled or wrapped form adds


@dataclass
class Decision:
    """What MS101 makes of a file: the conversions, the import they need, and what to report."""

    analysis: ModuleAnalysis
    conversions: list[Conversion] = field(default_factory=list)
    new_import: Optional[str] = None  # `import mindspore [as <this>]` to add
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
    wrapped = f", through a def ({WRAPPER_WHY[plan.wrapper_for]})" if plan.wrapper else ""
    origin = f"self.{plan.site.name} from {plan.site.inherited_from}: " if plan.site.inherited_from else ""
    # 0.x took a name first; 1.x reads a string there as get_all and raises: the name is dropped.
    legacy = plan.site.flags is not None and plan.site.flags.legacy_name
    dropped = "; the first argument, 0.x's name, is dropped (1.x takes it for get_all and raises)"
    dropped = dropped if legacy else ""
    return f"{origin}GradOperation({flags}) -> {function}{merged}{sens}{wrapped}{dropped}"


def decide(ctx: FileContext) -> Decision:
    project = ctx.project.with_local(ctx.text, ctx.path, ctx.tree)
    decision = Decision(analyse(ctx.tree, ctx.text, project, ctx))
    plans = _plan_module(decision, ctx, project)
    if plans:
        _name_conversions(decision, plans, NamesOf(ctx.tree, ctx.text))
    return decision


def _shape_lookup(analysis: ModuleAnalysis, project: ProjectIndex) -> NetworkShape:
    def network_shape(
        site: GradOpSite, application: Application, net: ast.expr, given: Optional[int]
    ) -> Optional[str]:
        is_self_attribute = isinstance(net, ast.Attribute) and getattr(net.value, "id", None) == "self"
        if not is_self_attribute:
            return None
        owner = analysis.enclosing_class(application.function)
        if owner is None:
            return None
        signatures = project.attribute_signatures(owner.name, net.attr)  # type: ignore[attr-defined]
        answers = {None if item is None else item.indirect(given) for item in signatures}
        # A def around the network is exact whatever its class; any candidate that needs one gets it.
        needed = [shape for shape in INDIRECT if shape in answers]
        if needed:
            return needed[0]
        return "" if answers == {""} else None

    return network_shape


def _unknown_network(
    analysis: ModuleAnalysis, site: GradOpSite, refusal: Diagnostic, project: ProjectIndex
) -> Diagnostic:
    """MSR019 says why the network is unknown when no file of the run builds the step's class
    or a subclass of it (a copy no script uses: 14 of the 18 such zoo steps)."""
    owner = analysis.enclosing_class(site.applications[0].function) if site.applications else None
    if owner is None or not project.built_nowhere(owner.name):
        return refusal
    why = f"no file of this run builds {owner.name} or a subclass of it, so its network is unknown"
    return left_alone(site.line, refusal.code, why)


def _plan_module(decision: Decision, ctx: FileContext, project: ProjectIndex) -> list[Plan]:
    """Plans for every site, refusals into the decision; a site whose creation or application
    line carries `# ms-migrate: ignore[MS101]` (or `# noqa: MS101`) is neither rewritten nor
    reported."""
    analysis = decision.analysis
    refusals = decision.diagnostics
    plans: list[Plan] = []
    touched: set[int] = set()
    lookup = _shape_lookup(analysis, project)
    for site in analysis.sites:
        lines = {site.line, *(application.line for application in site.applications)}
        if any(ctx.suppressed(CODE, line) for line in lines):
            continue
        outcome = plan_site(analysis, site, ctx.target, lookup)
        if isinstance(outcome, Diagnostic):
            if outcome.code == "MSR019":
                outcome = _unknown_network(analysis, site, outcome, project)
            refusals.append(outcome)
            continue
        statements = [{id(statement.node) for statement in plan.touched} for plan in outcome]
        combined = set().union(*statements)
        if combined & touched or sum(map(len, statements)) != len(combined):
            refusals.append(left_alone(site.line, "MSR004", "shares statements with another site"))
            continue
        touched |= combined
        plans.extend(outcome)
    for use in analysis.inherited:
        detail = f"{use.class_name} inherits from {use.base}"
        if use.from_user_class:
            where = f" in {use.defined_in}" if use.defined_in else ""
            detail = (
                f"{use.class_name} inherits self.{use.attribute} from {use.base}{where}, a class of "
                "this project whose GradOperation stays while a subclass applies it"
            )
        refusals.append(left_alone(use.line, "MSR006", detail))
    return plans


def _name_conversions(decision: Decision, plans: list[Plan], module_names: NamesOf) -> None:
    """How each plan's code spells the grad function (an existing alias, or one new import shared
    by all) and names its def; a site with no free name for mindspore stays (MSR011)."""
    analysis = decision.analysis
    by_site: dict[int, list[Plan]] = {}
    for plan in plans:
        by_site.setdefault(id(plan.site), []).append(plan)
    for site_plans in by_site.values():
        # All of a site's applications, or none: the creation goes with the first one.
        references = [
            module_reference(
                analysis.resolver,
                module_names,
                plan.module,
                analysis.scopes_of(plan.application.outer),
                decision.new_import,
            )
            for plan in site_plans
        ]
        if any(reference is None for reference in references):
            refusal = left_alone(site_plans[0].site.line, "MSR011", "no free name for mindspore")
            decision.diagnostics.append(refusal)
            continue
        for plan, reference in zip(site_plans, references):
            assert reference is not None
            decision.new_import = reference.new_import or decision.new_import
            function = f"{reference.expression}.{plan.function_name}"
            helper = ""
            if plan.scaled_by is not None:
                helper = free_name(SCALED_FORWARD_NAME, module_names, separator="_")
            elif plan.wrapper:
                helper = free_name(FORWARD_NAME, module_names, separator="_")
            decision.conversions.append(Conversion(plan, function, helper))
            line = plan.site.line
            converted = Diagnostic(CODE, line, 0, (line, 0), describe(plan, function), Severity.INFO)
            decision.converted.append(converted)
            decision.diagnostics.append(converted)
            decision.diagnostics.extend(note(line, code, plan.network_on_self) for code in plan.notes)
