"""Helpers the passes rewrite IR with, beside the analyses they build on.

`thread_builder` builds thread-level IR (folded index arithmetic, loops,
conditionals, shuffles) for lower-gemm-simt, lower-tile-ops and
partition-threads; `guards` builds, reads and removes the bounds-guard
forms of insert-guards, eliminate-guards and vectorize; `range_versions`
computes the conditions eliminate-guards versions a loop on. None of them
is a pass.
"""
