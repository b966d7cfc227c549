"""Parsing a file's text: the cheap `ast` precheck every file gets, and the libcst parse only a
file with a fix to apply needs.

``libcst_parses`` counts the libcst parses in this process, and ``prechecks`` the `ast` ones the
engine starts every file with, so a test can show which files paid for one (and that a cached
rerun pays for none).
"""

from __future__ import annotations

import ast
import os
import symtable
import warnings
from typing import TYPE_CHECKING, Optional

from ms_migrate.analysis.walk import child_nodes

if TYPE_CHECKING:
    import libcst as cst

libcst_parses = 0
prechecks = 0


class ParseFailure(Exception):
    """The input cannot be processed; ``line`` is 0 when no line is to blame."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


# Deeper than this, libcst's native parser takes seconds per file and can overflow its stack
# (a 50,000-term `a + a + ...` ended in signal 11); real code stays far below it.
MAX_DEPTH = 1000


# The node types with a context or operator child, which `child_nodes` leaves out: each is a leaf
# one level below its node, and the depth counts it as `ast.iter_child_nodes` would.
_WITH_INERT_CHILD = frozenset(
    {ast.Name, ast.Attribute, ast.Subscript, ast.Starred, ast.List, ast.Tuple}
    | {ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.AugAssign, ast.Compare}
)


def _depth(tree: ast.AST) -> int:
    """The deepest nesting of the tree, every node counted (iteratively: the tree may be deeper
    than the stack)."""
    deepest = 0
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth + 1 if type(node) in _WITH_INERT_CHILD else depth)
        stack.extend((child, depth + 1) for child in child_nodes(node))
    return deepest


_last_parsed: list[tuple[str, ast.Module]] = []
# A file's text, its rewrite, and the rewrite with its imports settled: what one file's fix
# reads again (the imports it left unused, then the fixed-point check).
_KEPT_TREES = 3


def parse_ast(text: str) -> ast.Module:
    """``ast.parse(text)``; the same tree again for a text among the last few parsed, which is how
    a file and its rewrite are read more than once (the imports a fix left unused, then the
    fixed-point check). Nothing changes an ``ast`` tree once built, so sharing one is safe."""
    for index, (kept, tree) in enumerate(_last_parsed):
        if kept is text or kept == text:
            _last_parsed.insert(0, _last_parsed.pop(index))
            return tree
    tree = ast.parse(text)
    _last_parsed.insert(0, (text, tree))
    del _last_parsed[_KEPT_TREES:]
    return tree


def precheck(text: str, compiled: bool = True) -> ast.Module:
    """Raise ParseFailure for text Python itself would reject.

    The cheap `ast` pass runs before any rule sees the text. With ``compiled`` it also compiles
    the tree (``check_compiles``): code that parses but compiles in no Python (`break` outside a
    loop, a repeated argument name) is a syntax error for the user to fix, not a failed rewrite.
    How deep the tree is matters only to libcst, so ``parse`` measures it, for the few files
    that get that far.
    """
    global prechecks
    prechecks += 1
    try:
        tree = parse_ast(text)
    except SyntaxError as error:
        raise ParseFailure(f"syntax error: {error.msg}", error.lineno or 1) from error
    except (RecursionError, MemoryError) as error:
        raise ParseFailure("too deeply nested to process", 0) from error
    except UnicodeEncodeError as error:  # a notebook cell's JSON `"\ud800"`: no UTF-8 holds it
        line = text[: error.start].count("\n") + 1
        message = f"a lone surrogate ({text[error.start]!a}) that no UTF-8 file can hold"
        raise ParseFailure(message, line) from error
    if compiled:
        check_compiles(tree)
    return tree


def parses(text: str) -> bool:
    """Whether Python parses ``text``, without building the `ast` tree, which is most of
    ``ast.parse``'s cost. The parser runs for the symbol table (``symtable``), which costs less
    than compiling (0.97 s against 1.25 s over 1,500 files of a model zoo) and skips the
    compiler's own errors: code that parses but compiles in no Python (`break` outside a loop)
    is not the syntax error looked for here. False says only that ``precheck`` must look: the
    symbol table has errors of its own (`nonlocal` at module level)."""
    try:
        with warnings.catch_warnings():  # `"\d"`: the user's own lint, not ours to print
            warnings.simplefilter("ignore")
            symtable.symtable(text, "<input>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError, UnicodeError):
        return False
    return True


def check_compiles(tree: ast.Module) -> None:
    """Raise ParseFailure for a tree that parses but that no Python compiles."""
    try:
        with warnings.catch_warnings():  # `x is not ""`: the user's own lint, not ours to print
            warnings.simplefilter("ignore")
            compile(tree, "<input>", "exec", dont_inherit=True)
    except SyntaxError as error:
        raise ParseFailure(f"syntax error: {error.msg}", error.lineno or 1) from error
    except RecursionError as error:
        raise ParseFailure("too deeply nested to process", 0) from error


# libcst's native parser holds about 700 bytes per byte of source (measured: a 30 MB file wanted
# 21 GB) and aborts the whole process when it cannot get them, so the size is checked first.
LIBCST_BYTES_PER_BYTE = 700
# The largest Python file of the public model zoos is 281 KB; beyond this a rewrite is refused.
MAX_REWRITE_BYTES = 4 * 2**20


def size_problem(text: str) -> Optional[str]:
    """Why ``text`` is too large to rewrite here, or None: over MAX_REWRITE_BYTES (or the
    ``MS_MIGRATE_MAX_REWRITE_BYTES`` environment variable), or needing more than half the memory
    this process may still take (its address-space limit, or what the machine has available)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    limit = int(os.environ.get("MS_MIGRATE_MAX_REWRITE_BYTES", MAX_REWRITE_BYTES))
    needed = size * LIBCST_BYTES_PER_BYTE
    megabytes = f"{size / 2**20:.1f} MB"
    if size > limit:
        return f"too large to rewrite: {megabytes} of source (the limit is {limit / 2**20:.1f} MB)"
    budget = memory_budget()
    if budget is not None and needed > budget // 2:
        return (
            f"too large to rewrite here: {megabytes} of source needs about {needed / 2**30:.1f} GB, "
            f"and this process may take {budget / 2**30:.1f} GB more"
        )
    return None


def memory_budget() -> Optional[int]:
    """The bytes this process may still allocate, as far as it can tell: its RLIMIT_AS less what
    it maps now, and the machine's MemAvailable (Linux); None where neither is known."""
    known: list[int] = []
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            with open("/proc/self/statm", encoding="ascii") as statm:
                mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            known.append(max(soft - mapped, 0))
    except (ImportError, OSError, ValueError):
        pass
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    known.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    return min(known) if known else None


def parse(text: str, tree: Optional[ast.Module] = None) -> cst.Module:
    """The libcst module of ``text`` (whose precheck passed; ``tree`` is its `ast`, if at hand)."""
    import libcst as cst  # imported on first need: most runs parse no file with libcst

    global libcst_parses
    too_large = size_problem(text)
    if too_large:
        raise ParseFailure(too_large, 0)
    if _depth(tree if tree is not None else ast.parse(text)) > MAX_DEPTH:
        raise ParseFailure("too deeply nested to process", 0)
    libcst_parses += 1
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
