"""The MindSpore namespaces users import from: plain data, shared by the catalogue that lists each
release's names (``ms_migrate.catalogue``, which runs inside each runtime and imports nothing else
of the tool but this) and the rules that read those lists.

A module here, or a package, is listed whole: every public name it holds is in the release facts,
so a name it is asked for that no release lists is one no release has (MS211).
"""

# The namespaces users import from. A name is public when it is reached from one of these without
# a leading underscore; submodules are not walked, so an object is named only where it is exported.
PUBLIC_MODULES = (
    "mindspore",
    "mindspore.amp",
    "mindspore.boost",
    "mindspore.common",
    "mindspore.communication",
    "mindspore.communication.comm_func",
    "mindspore.communication.management",
    "mindspore.context",
    "mindspore.dataset",
    "mindspore.dataset.audio",
    "mindspore.dataset.config",
    "mindspore.dataset.text",
    "mindspore.dataset.transforms",
    "mindspore.dataset.vision",
    "mindspore.device_context",
    "mindspore.experimental.optim",
    "mindspore.graph",
    "mindspore.hal",
    "mindspore.mindrecord",
    "mindspore.mint",
    "mindspore.mint.distributed",
    "mindspore.mint.linalg",
    "mindspore.mint.nn",
    "mindspore.mint.nn.functional",
    "mindspore.mint.optim",
    "mindspore.mint.special",
    "mindspore.nn",
    "mindspore.nn.probability",
    "mindspore.numpy",
    "mindspore.ops",
    "mindspore.ops.functional",
    "mindspore.ops.composite",
    "mindspore.ops.operations",
    "mindspore.parallel",
    "mindspore.profiler",
    "mindspore.runtime",
    "mindspore.train",
    "mindspore.train.callback",
    "mindspore.train.serialization",
    "mindspore.utils",
)

# Subpackages that hold no Python API, or whose import needs hardware or a server.
SKIPPED = (
    "mindspore.lib",
    "mindspore.include",
    "mindspore.offline_debug",
    "mindspore.ops_generate",
    "mindspore.akg",
    "mindspore.lite",
)
