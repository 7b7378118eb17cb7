"""The pass infrastructure: what every pass stands on and how pipelines of them run.

`registry` maps each pass name to the module that defines it and holds the
typed options; `pipeline_text` splits the textual pipeline syntax;
`runner` runs a pipeline of our passes and upstream MLIR passes on a module,
the one way tile-opt, the driver and the tests do it.
"""
