"""The `test-*` passes: they report what the compiler decided (layouts, diagnostics) for lit tests to pin.

They are passes like any other, registered by name and run by `tile-opt`;
the compiler's own pipelines never run them. Their modules are not named
`test_*.py`, so test collectors do not take them for test files.
"""
