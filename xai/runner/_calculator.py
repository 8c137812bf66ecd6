"""A calculator for models: arithmetic parsed with ``ast``, never ``eval``.

Only numbers, ``+ - * / // % **``, parentheses, ``pi``, ``e`` and a few math
functions are computed; anything else is refused. A result (or any step) that
is not a finite number — an overflow to infinity, ``nan`` — is an error, never
``null`` in a tool result.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from xai.exceptions import ToolError

__all__ = ["safe_calculate"]

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_FUNCTIONS: dict[str, Callable[..., float]] = {
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "log": math.log,
    "log10": math.log10,
    "exp": math.exp,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "floor": math.floor,
    "ceil": math.ceil,
}
_CONSTANTS = {"pi": math.pi, "e": math.e}


def _finite(number: Any) -> float:
    """``number`` as a float, if it is a finite one."""
    result = float(number)  # an int too big for a float raises OverflowError
    if not math.isfinite(result):
        raise ToolError("the result is not a finite number (it overflows)")
    return result


def safe_calculate(expression: str) -> float:
    """Evaluate arithmetic safely: numbers, + - * / // % **, parentheses, a few functions."""
    if len(expression) > 500:
        raise ToolError("the expression is too long (500 characters at most)")
    try:
        tree = ast.parse(expression.replace("^", "**"), mode="eval")
    except SyntaxError as exc:
        raise ToolError(f"not an arithmetic expression ({exc.msg})") from None

    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return value(node.body)
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, (int, float))
            and not isinstance(node.value, bool)
        ):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left, right = value(node.left), value(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > 1000:
                raise ToolError("exponent too large")
            return _finite(_BINARY[type(node.op)](left, right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _finite(_UNARY[type(node.op)](value(node.operand)))
        if isinstance(node, ast.Name) and node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _FUNCTIONS
            and not node.keywords
        ):
            return _finite(_FUNCTIONS[node.func.id](*(value(a) for a in node.args)))
        raise ToolError(f"not allowed in a calculation: {ast.unparse(node)!r}")

    try:
        result = value(tree)
    except ZeroDivisionError:
        raise ToolError("division by zero") from None
    except (OverflowError, ValueError, TypeError) as exc:
        raise ToolError(f"cannot compute it: {exc}") from None
    return _finite(result)
