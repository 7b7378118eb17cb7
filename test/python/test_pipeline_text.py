"""The pass-pipeline text syntax: elements, nesting, options, and located syntax errors."""

import pytest

from tilemlir.pass_infra.pipeline_text import PipelineSyntaxError, parse_options, split_pipeline


def summary(text):
    return [(e.name, e.options, e.nested, e.column) for e in split_pipeline(text)]


def test_plain_list_and_module_wrapper_give_the_same_elements():
    assert summary("a, b{x=1},func.func(cse)") == [
        ("a", None, None, 1), ("b", "x=1", None, 4), ("func.func", None, "cse", 11)]
    wrapped = summary("builtin.module(a, b{x=1},func.func(cse))")
    assert [e[:3] for e in wrapped] == [("a", None, None), ("b", "x=1", None), ("func.func", None, "cse")]
    assert [e[3] for e in wrapped] == [16, 19, 26]  # columns in the wrapped text


def test_empty_pipelines():
    assert split_pipeline("") == [] and split_pipeline("  ") == [] and split_pipeline("builtin.module()") == []


def test_element_text_keeps_nested_braces_and_parens():
    [element] = split_pipeline("inline{default-pipeline=canonicalize op-pipelines={func.func(cse)}}")
    assert element.text == "inline{default-pipeline=canonicalize op-pipelines={func.func(cse)}}"
    assert parse_options(element.options) == {"default-pipeline": "canonicalize", "op-pipelines": "func.func(cse)"}


def test_options_quoted_braced_and_bare_flags():
    assert parse_options('a=1 b="two words" c={x y} flag') == {"a": "1", "b": "two words", "c": "x y", "flag": "true"}
    assert parse_options("") == {}


@pytest.mark.parametrize("text, message, column", [
    ("a,", "expected a pass name after ','", 3),
    ("a b", "expected ',' between passes, found 'b'", 3),
    ("a{x=1", "missing '}' to close '{'", 2),
    ("f(a)(b)", "expected ',' between passes, found '('", 5),
    ("a)", "expected ',' between passes, found ')'", 2),
    ("builtin.module(a,,b)", "expected a pass name, found ','", 18),
    ('a{x="1}', "unterminated string", 5),
])
def test_syntax_errors_name_the_column(text, message, column):
    with pytest.raises(PipelineSyntaxError) as info:
        split_pipeline(text)
    assert (str(info.value), info.value.column) == (message, column)


@pytest.mark.parametrize("text, message", [
    ("a=1 a=2", "option 'a' given twice"),
    ("a=", "expected a value after '='"),
    ("=1", "expected an option name, found '='"),
])
def test_option_errors(text, message):
    with pytest.raises(PipelineSyntaxError, match=message):
        parse_options(text)
