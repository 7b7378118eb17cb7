from tilemlir.context import load_tile_dialect, make_context


def test_a_new_context_has_the_tile_dialect_and_the_upstream_ones():
    context = make_context()
    assert context.is_dialect_loaded("tile")
    assert context.is_dialect_loaded("arith")


def test_loading_the_dialect_twice_is_harmless():
    context = make_context()
    load_tile_dialect(context)
    load_tile_dialect(context)
    assert context.is_dialect_loaded("tile")
