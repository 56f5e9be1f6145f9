"""The semantic model: typed expression trees, symbols, reaching definitions, guards and value ranges.

One module per concern, between the per-file facts and the rules:

- ``expressions``: expression trees built from tree-sitter nodes (built while the facts are, cached with them);
- ``types``: C++ / MSL types, integer promotions and conversions, the PyTorch API's return types;
- ``symbols``: locals, parameters, struct fields, typedefs and ``constexpr`` values of a function and its file;
- ``definitions``: reaching definitions inside a function;
- ``guards``: the bounds that dominating checks establish on values;
- ``ranges``: an interval analysis over all of the above;
- ``model``: the queries rules ask (``SemanticModel``).

Beside the model, the structural queries rules share, over facts, the model and the dispatch graph (each decides
nothing itself): ``hostflow`` (host code: split loops, launches, call sites, dead code), ``metalflow`` (Metal
sources and their ``#if`` guards), ``launchflow`` (who launches a Metal function, and what keeps the launch in
32 bits), ``launch_bindings`` (what a launch binds to which kernel slot; the ranges it enters a kernel with),
``extflow`` (the stream protocol and host-kernel contract of extension code).
"""
