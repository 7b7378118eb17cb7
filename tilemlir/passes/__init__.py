"""Every tilemlir pass, one module each, with one entry point `run(module, options)`.

A pass module registers its pass once by name (`tilemlir.pass_infra.registry`,
whose `PASS_MODULES` maps the name to the module), and says in its docstring
what IR it takes and gives. `testing/` holds the `test-*` passes.
"""
