"""Everything a rule may ask about one file, each piece built at most once and only on demand.

A rule that only reads asks for ``tree`` (``ast``: about 9 times faster to build than a libcst
module), ``parents`` and ``qualified_name``, which resolves through the module's own imports
without libcst metadata, and knows scopes: a parameter or local named `ms` is not the module.
Suppression comments are read once per file. ``cst`` (libcst with metadata) is for a rule that
rewrites; the engine's precheck has already rejected text Python would not accept.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field, fields
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from ms_migrate.analysis.project import ProjectIndex
from ms_migrate.facts.versions import Version

if TYPE_CHECKING:
    from libcst.metadata import MetadataWrapper

    from ms_migrate.analysis.names import NameResolver
    from ms_migrate.core.string_folding import FoldedText

ALL = "*"
_IGNORE = re.compile(r"#\s*ms-migrate:\s*ignore(?:\[(?P<codes>[A-Z0-9,\s]+)\])?", re.IGNORECASE)
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z0-9,\s]+))?", re.IGNORECASE)


_SCANNED_SPELLINGS = 20  # up to this many names, calls_to finds its calls by scanning the text


@dataclass
class FileContext:
    text: str
    target: Version
    path: Optional[Path] = None
    project: ProjectIndex = field(default_factory=ProjectIndex)  # the other files of the run
    # False when the caller reports and never applies (`check`): a rule may then skip building
    # its fix edits, which for a rewrite means skipping the libcst parse altogether.
    fixes: bool = True
    # Sites suppressed as if their line carried `# ms-migrate: ignore[CODE]`, without that comment
    # in the text: (code, line) pairs (`upgrade --interactive` passes the sites the user declined).
    declined: frozenset[tuple[str, int]] = frozenset()
    # The release the code was written for, where the run knows it (the project's pin below the
    # target, or `from-version`): what a change of meaning is measured from. None: unknown.
    written_for: Optional[Version] = None

    @cached_property
    def tree(self) -> ast.Module:
        """The ``ast`` tree; raises SyntaxError for text that does not parse."""
        return ast.parse(self.text)

    @cached_property
    def folded(self) -> FoldedText:
        """The text with long runs of adjacent string literals folded (libcst cannot take
        thousands of them); a rewrite of ``folded.text`` goes back through ``folded.unfold``."""
        from ms_migrate.core.string_folding import fold_long_strings

        return fold_long_strings(self.text)

    @cached_property
    def cst(self) -> MetadataWrapper:
        """The libcst module of ``folded.text``, wrapped for metadata; raises ParseFailure."""
        from libcst.metadata import MetadataWrapper

        from ms_migrate.core.parsing import parse

        text = self.folded.text
        return MetadataWrapper(parse(text, self.tree if text == self.text else None), unsafe_skip_copy=True)

    @cached_property
    def nodes(self) -> list[ast.AST]:
        """Every node of ``tree`` in ``walk`` order, walked once for all the rules that look at
        every node (a 2,000-line file has about 9,000)."""
        from ms_migrate.analysis.walk import walk

        return list(walk(self.tree))

    def walked(self) -> Optional[tuple[list[ast.AST], dict[ast.AST, ast.AST]]]:
        """``nodes`` and ``parents``, where they are built (None where not: a rule that walks the
        tree itself then need not build them twice)."""
        if "nodes" not in self.__dict__ or "parents" not in self.__dict__:
            return None
        return self.__dict__["nodes"], self.__dict__["parents"]

    def keep_walk(self, nodes: list[ast.AST], parents: dict[ast.AST, ast.AST]) -> None:
        """``nodes`` and ``parents`` as a rule's own walk of ``tree`` found them (every node in
        ``walk`` order, and the parent of each), for the rules after it."""
        self.__dict__.setdefault("nodes", nodes)
        self.__dict__.setdefault("parents", parents)

    def nodes_naming(self, words: Collection[str]) -> list[ast.AST]:
        """The nodes of ``nodes``, in its order, whose lines hold one of ``words`` as a word (and
        the positionless nodes on the way to them, such as ``arguments``). A rule that looks for a
        few names walks the statements that spell them, not the whole file; every ancestor of a
        node returned is returned too."""
        from ms_migrate.analysis.walk import lines_naming, walk_lines

        if not words:
            return []
        pairs = list(walk_lines(self.tree, lines_naming(self.text, words)))
        self._known_parents.update(pairs)
        return [node for node, _ in pairs]

    @cached_property
    def _known_parents(self) -> dict[ast.AST, Optional[ast.AST]]:
        """The parents ``nodes_naming`` met on its way (each node it returned with every ancestor):
        what ``parent_of`` answers from before it builds ``parents`` for the whole file."""
        return {}

    @cached_property
    def lineage(self) -> _Lineage:
        """``parent_of`` as the ``.get`` of a parents map, for the helpers that walk up one."""
        return _Lineage(self)

    def parent_of(self, node: ast.AST) -> Optional[ast.AST]:
        """The node that holds ``node``: from the parents ``nodes_naming`` met where it met
        ``node``, else from ``parents``. A rule that asks about the few calls it looked for does
        not pay for the whole file's map (a millisecond or two per file, on every file that
        names `load_param_into_net`)."""
        if "parents" not in self.__dict__ and node in self._known_parents:
            return self._known_parents[node]
        return self.parents.get(node)

    @cached_property
    def calls(self) -> list[ast.Call]:
        """Every call of ``tree``, in ``walk`` order."""
        return [node for node in self.nodes if isinstance(node, ast.Call)]

    @cached_property
    def parents(self) -> dict[ast.AST, ast.AST]:
        """Each node of ``tree`` -> the node that holds it."""
        from ms_migrate.analysis.walk import child_nodes

        return {child: node for node in self.nodes for child in child_nodes(node)}

    @cached_property
    def resolver(self) -> NameResolver:
        """What the module's imports bind, and which names its scopes rebind."""
        from ms_migrate.analysis.names import NameResolver

        return NameResolver.for_module(self.tree, self.text)

    def qualified_name(self, node: ast.AST) -> Optional[str]:
        """`mindspore.value_and_grad` for `ms.value_and_grad` under `import mindspore as ms`, and
        None where a function around ``node`` binds `ms` itself (a parameter, an assignment, an
        import of its own): every rule asks this one question, the same way."""
        from ms_migrate.analysis.names import enclosing_scopes

        if self.resolver.qualified_name(node) is None:
            return None  # most nodes: no import binds their root, and no scope need be walked
        return self.resolver.qualified_name(node, enclosing_scopes(self.lineage, node))

    def calls_to(self, qualified: Collection[str]) -> Iterator[ast.Call]:
        """The file's calls whose callee is one of ``qualified``, in ``calls`` order. A call is
        resolved only when it is spelled as one of them (its own name, or a name an import binds
        to one): resolving every call of a file through its scopes costs far more."""
        spellings = {name.rpartition(".")[2] for name in qualified}
        imports = self.resolver.imports.items()
        spellings.update(name for name, binding in imports if binding.qualified in qualified)
        # One scan of the text per spelling: for many (MS226 asks for some 300) one walk of the
        # tree costs less.
        walked = "calls" in self.__dict__ or len(spellings) > _SCANNED_SPELLINGS
        calls = self.calls if walked else self.nodes_naming(spellings)
        for call in calls:
            if not isinstance(call, ast.Call):
                continue
            func = call.func
            spelled = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if spelled in spellings and self.qualified_name(func) in qualified:
                yield call

    @cached_property
    def suppression_comments(self) -> list[tuple[int, int, tuple[str, ...], bool]]:
        """Each suppression comment: (line, its column in characters, the codes it names, upper
        case; none for a bare ignore, whether it is ms-migrate's own rather than a `# noqa`)."""
        found: list[tuple[int, int, tuple[str, ...], bool]] = []
        lowered = self.text.lower()
        if "ms-migrate:" not in lowered and "noqa" not in lowered:
            return found  # most files: no need to tokenize
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(self.text).readline))
        except (tokenize.TokenError, SyntaxError, IndentationError):
            return found
        for token in tokens:
            if token.type != tokenize.COMMENT:
                continue
            for pattern in (_IGNORE, _NOQA):
                match = pattern.search(token.string)
                if match is None:
                    continue
                listed = (match.group("codes") or "").split(",")
                codes = tuple(code.strip().upper() for code in listed if code.strip())
                found.append((token.start[0], token.start[1] + match.start(), codes, pattern is _IGNORE))
        return found

    @cached_property
    def suppressions(self) -> dict[int, set[str]]:
        """Line -> suppressed codes (``ALL`` for a bare ignore) from comments on that line."""
        found: dict[int, set[str]] = {}
        for line, _, codes, _ in self.suppression_comments:
            found.setdefault(line, set()).update(codes or (ALL,))
        return found

    def release(self) -> None:
        """Drop everything built from the text (its trees, maps and the rules' analyses), which is
        built again if asked for. They refer back to this context (``lineage``, an analysis kept
        here), so without this a file's trees outlive it until the garbage collector finds the
        cycle, and are traversed by it on the way: over a model zoo that was 2.9 million objects
        in the young generation's collections, 15% of `check`."""
        kept = {item.name for item in fields(self)}
        for name in [name for name in self.__dict__ if name not in kept]:
            del self.__dict__[name]

    def suppressed(self, code: str, line: int) -> bool:
        """Whether ``code`` is suppressed on ``line``: by its code or a prefix of it (`ignore[MS2]`,
        as --select and --ignore take prefixes, and flake8's noqa does), or a bare ignore."""
        if (code, line) in self.declined:
            return True
        codes = self.suppressions.get(line, set())
        return ALL in codes or code in codes or code.startswith(tuple(codes))


@dataclass(frozen=True)
class _Lineage:
    """``FileContext.parent_of`` as the ``.get`` of a parents map."""

    ctx: FileContext

    def get(self, node: ast.AST) -> Optional[ast.AST]:
        return self.ctx.parent_of(node)
