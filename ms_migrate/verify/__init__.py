"""Verification by execution: run two versions of a file on MindSpore and compare them, site by site.

Opt-in: nothing here runs user code unless ``ms-migrate verify`` or ``upgrade --verify`` asks.
The parent process never imports MindSpore; workers (``python -m ms_migrate.verify.worker``)
do, once per mode, under a timeout and a memory limit.

    report = verify_texts(Path("train.py"), before_text, after_text, VerifyOptions(modes=("graph",)))
    report.ok, report.exit_code, report.results

Modules: ``sites`` (which definitions differ, which harness fits; pure), ``verifier`` (pairs to
reports), ``supervisor`` (worker processes), ``worker`` / ``harness`` / ``probe`` (inside the
worker), ``compare`` (the tolerance rule), ``scripts`` (script mode), ``config`` (pyproject),
``sandbox`` / ``sandbox_launcher`` (``--sandbox``: only the scratch directory is writable),
``render`` and ``command`` (output and CLI).
"""

from ms_migrate.verify.model import (
    SiteResult,
    Verdict,
    VerificationReport,
    VerifyOptions,
)
from ms_migrate.verify.verifier import Pair, verify_files, verify_many, verify_pairs, verify_texts

__all__ = [
    "Pair",
    "SiteResult",
    "Verdict",
    "VerificationReport",
    "VerifyOptions",
    "verify_files",
    "verify_many",
    "verify_pairs",
    "verify_texts",
]
