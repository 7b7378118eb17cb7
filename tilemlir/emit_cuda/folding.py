"""Integer folding shared by the kernel's C++ expressions (`cexpr`) and the host's Python ones (`pyexpr`).

Both expression types keep an integer literal's number in `value`; the
caller passes its language's literal maker `lit(n)` and operator builder
`binary(op, a, b)`. Only `+` and `*` are here: subtraction, division and
remainder fold differently in the two (C keeps a literal's `LL`, and
truncates where Python floors).
"""

from __future__ import annotations


def add(a, b, lit, binary):
    """`a + b`: literals folded, `+ 0` dropped, `+ -n` written `- n`."""
    if a.value is not None and b.value is not None:
        return lit(a.value + b.value)
    if a.value == 0:
        return b
    if b.value == 0:
        return a
    if b.value is not None and b.value < 0:
        return binary("-", a, lit(-b.value))
    return binary("+", a, b)


def mul(a, b, lit, binary):
    """`a * b`: literals folded, `* 1` dropped, `* 0` is 0."""
    if a.value is not None and b.value is not None:
        return lit(a.value * b.value)
    if a.value == 1:
        return b
    if b.value == 1:
        return a
    if a.value == 0 or b.value == 0:
        return lit(0)
    return binary("*", a, b)
