"""The spec expression language: C arithmetic, the whitelist, names."""

from __future__ import annotations

import pytest

from cudalens.spec.expr import Dim3, ExprError, c_div, c_mod, ceil_div, evaluate, names_in


@pytest.mark.parametrize("text, value", [
    ("7 / 2", 3),
    ("-7 / 2", -3),          # C truncates toward zero; Python's // would give -4
    ("7 / -2", -3),
    ("-7 / -2", 3),
    ("-7 % 2", -1),          # C remainder has the dividend's sign; Python's % gives 1
    ("7 % -2", 1),
    ("7.0 / 2", 3.5),        # a float operand makes it true division
    ("1 << 24", 16777216),
    ("(1 << 10) >> 3", 128),
    ("1_000 + 0x10", 1016),
    ("-(3 - 5) * 4", 8),
    ("ceil_div(10, 4)", 3),
    ("ceil_div(12, 4)", 3),
    ("ceil_div(1, 256)", 1),
    ("min(5, 3, 9)", 3),
    ("max(5, 3, 9)", 9),
    ("1e-3 * 2", 0.002),
])
def test_evaluate_values(text, value):
    result = evaluate(text, {})
    assert result == value
    assert type(result) is type(value)


def test_names_and_block():
    env = {"n": 1000, "block": Dim3(128, 2)}
    assert evaluate("ceil_div(n, block.x)", env) == 8
    assert evaluate("block.x * block.y * block.z", env) == 256


def test_c_helpers_directly():
    assert c_div(-9, 4) == -2 and c_mod(-9, 4) == -1
    assert ceil_div(-7, 2) == -3
    with pytest.raises(ExprError, match="ceil_div needs integer arguments, found \\(1.5, 2\\)"):
        ceil_div(1.5, 2)


@pytest.mark.parametrize("text, message", [
    ("n // 2", "'//' is not allowed: '/' between integers is already C integer division "
               "(truncation toward zero) in 'n // 2'"),
    ("2 ** 10", "'**' (power) is not allowed in '2 ** 10'"),
    ("foo(1)", "call to 'foo' is not allowed in 'foo(1)'"),
    ("abs(-1)", "call to 'abs' is not allowed in 'abs(-1)'"),
    ("x.y", "attribute access 'x.y' is not allowed in 'x.y'"),
    ("block.w", "expected block.x, block.y or block.z, found 'block.w' in 'block.w'"),
    ("block", "'block' must be used as block.x, block.y or block.z in 'block'"),
    ("a[1]", "subscript is not allowed in 'a[1]'"),
    ("1 if n else 2", "conditional expression is not allowed in '1 if n else 2'"),
    ("n < 3", "comparison is not allowed in 'n < 3'"),
    ("n & 1", "operator '&' is not allowed in 'n & 1'"),
    ("~n", "unary '~' is not allowed in '~n'"),
    ("'s'", "literal 's' is not allowed in ''s''"),
    ("True", "literal True is not allowed in 'True'"),
    ("1, 2", "tuple (a ',' outside a call) is not allowed in '1, 2'"),
    ("n ? 1 : 2", "invalid expression 'n ? 1 : 2': invalid syntax"),
    ("ceil_div(4)", "ceil_div takes 2 arguments, found 1 in 'ceil_div(4)'"),
    ("min()", "min() needs at least 1 argument in 'min()'"),
    ("max(a=1)", "max() takes no keyword arguments in 'max(a=1)'"),
    ("", "expected an expression, found nothing"),
])
def test_rejected_constructs(text, message):
    with pytest.raises(ExprError) as info:
        evaluate(text, {"n": 4, "a": 1})
    assert str(info.value).startswith(message)


@pytest.mark.parametrize("text, message", [
    ("m + 1", "undefined name 'm' in 'm + 1'"),
    ("n / 0", "division by zero in 'n / 0'"),
    ("n % 0", "division by zero in 'n % 0'"),
    ("ceil_div(n, 0)", "division by zero in ceil_div in 'ceil_div(n, 0)'"),
    ("1 << 64", "shift count must be 0 to 63, found 64 in '1 << 64'"),
    ("1 << -1", "shift count must be 0 to 63, found -1 in '1 << -1'"),
    ("1.5 << 2", "'<<' needs integer operands, found 1.5 << 2 in '1.5 << 2'"),
    ("block.x", "block.x cannot be used here, in 'block.x'"),
    ("1e308 * 10", "'1e308 * 10' evaluates to inf, expected a finite number"),
])
def test_evaluation_errors(text, message):
    with pytest.raises(ExprError) as info:
        evaluate(text, {"n": 4})
    assert str(info.value) == message


def test_names_in():
    assert names_in("ceil_div(n, block.x) + max(m, 2)") == {"n", "m", "block"}
    assert names_in("1 << 24") == set()
    assert names_in("min + 1") == {"min"}  # a size may be called min; only calls are functions
    with pytest.raises(ExprError, match="'//' is not allowed"):
        names_in("n // 2")


def test_long_expressions_are_refused_before_they_overflow_the_stack():
    # 1,000 terms used to raise RecursionError from Python's parser; 256 are fine
    longest = "+".join(["1"] * 256)  # 511 characters
    assert evaluate(longest, {}) == 256 and names_in(longest) == set()
    nested = "-" * 255 + "1"  # 256 characters of unary minus: deep, but within the limit
    assert evaluate(nested, {}) == -1
    too_long = "+".join(["1"] * 1000)
    with pytest.raises(ExprError, match=r"^expression too long: 1999 characters, at most 512 "
                                        r"\('1\+1\+.*\.\.\.'\); name parts of it with 'size' "
                                        r"lines$"):
        names_in(too_long)
