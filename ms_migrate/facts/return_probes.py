"""The calls whose results each release is run to describe (`python -m ms_migrate.catalogue
releases`, inside each runtime): data shared by the catalogue, which runs them, and MS227, which
compares what they gave. Imports nothing, as it is read inside runtimes of Python 3.9."""

# What a call gives back, by the name it calls: the structure and dtypes of its result on fixed
# inputs (`floats`, a 4x6 float32 tensor; `ints`, six int32 labels), so that a result whose
# parts changed order, number or dtype between releases is known (MS227). Where a release lacks
# the name or rejects the call, its answer is the error, which no rule compares.
RETURN_PROBES = {
    "mindspore.ops.max": "ops.max(floats, axis=1)",
    "mindspore.ops.min": "ops.min(floats, axis=1)",
    "mindspore.ops.std": "ops.std(floats)",
    "mindspore.ops.var": "ops.var(floats)",
    "mindspore.ops.median": "ops.median(floats, axis=1)",
    "mindspore.ops.unique": "ops.unique(ints)",
    "mindspore.ops.sort": "ops.sort(floats)",
    "mindspore.ops.topk": "ops.topk(floats, 2)",
    "mindspore.ops.top_k": "ops.top_k(floats, 2)",
    "mindspore.ops.argmax": "ops.argmax(floats, 1)",
    "mindspore.ops.argmin": "ops.argmin(floats, 1)",
    "mindspore.ops.cummax": "ops.cummax(floats, 1)",
    "mindspore.ops.cummin": "ops.cummin(floats, 1)",
    "mindspore.ops.svd": "ops.svd(floats)",
    "mindspore.ops.nonzero": "ops.nonzero(floats)",
    "mindspore.ops.ArgMaxWithValue": "ops.ArgMaxWithValue(axis=1)(floats)",
    "mindspore.ops.ArgMinWithValue": "ops.ArgMinWithValue(axis=1)(floats)",
    "mindspore.ops.Unique": "ops.Unique()(ints)",
    "mindspore.ops.TopK": "ops.TopK()(floats, 2)",
    "mindspore.ops.Sort": "ops.Sort()(floats)",
    "mindspore.ops.dropout": "ops.dropout(floats, p=0.2)",
}
RETURNS = "returns "  # the probe of RETURN_PROBES[name] is named RETURNS + name
# The first numbers of the result's first part, four significant digits, for the calls that draw
# nothing at random: `ops.std(x)`'s deviation is unbiased on 1.10 and biased on 2.10 (`ddof=0`).
GIVES = "gives "
DRAWS = frozenset({"mindspore.ops.dropout"})
