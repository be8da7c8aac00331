"""A small, safe expression language over named numbers (the HostDb's filters and generate's
per-host settings, docs/hostdb.md). Pure, no Beam.

Nutch evaluates these with JEXL, a scripting language that can call Java methods. beamcrawl
parses a fixed subset itself and evaluates the tree; nothing is ever handed to Python's eval()
(docs/nutch-differences.md D91). The grammar, loosest binding first:

    expr       := or ['?' expr ':' expr]
    or         := and (('or' | '||') and)*
    and        := not (('and' | '&&') not)*
    not        := ('not' | '!') not | comparison
    comparison := sum [('==' | '!=' | '<' | '<=' | '>' | '>=') sum]
    sum        := product (('+' | '-') product)*
    product    := unary (('*' | '/' | '%') unary)*
    unary      := '-' unary | atom
    atom       := NUMBER | 'true' | 'false' | NAME | '(' expr ')'

NAME is letters, digits, `_` and `.` (not first: a digit or `.`), e.g. `fetched`,
`avg._rs_`. Values are numbers and booleans (true is 1 in arithmetic). Anything else (strings,
calls, assignments, `=~`, methods) is refused with the column where it starts.

A name the environment does not hold makes the whole evaluation `Missing` (JEXL would give
null): the caller decides what that means (no per-host value, a record not selected).
"""

import math
import re
from typing import Callable, Dict, List, Optional, Tuple, Union

__all__ = ['Expression', 'ExpressionError', 'Missing', 'compile_expression']

Number = Union[int, float, bool]


class ExpressionError(ValueError):
    """A text that is not an expression of the language, or a name no record can have."""


class Missing(Exception):
    """Evaluation met a name the environment does not hold (or divided by zero)."""


_TOKEN = re.compile(r'''
    (?P<space>\s+)
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<op>==|!=|<=|>=|&&|\|\||[-+*/%<>()!?:])
''', re.VERBOSE)

_WORDS = {'and': '&&', 'or': '||', 'not': '!'}
_LITERALS = {'true': True, 'false': False}
_COMPARE = {'==': lambda a, b: a == b, '!=': lambda a, b: a != b, '<': lambda a, b: a < b,
            '<=': lambda a, b: a <= b, '>': lambda a, b: a > b, '>=': lambda a, b: a >= b}
_ARITH = {'+': lambda a, b: a + b, '-': lambda a, b: a - b, '*': lambda a, b: a * b,
          '/': lambda a, b: a / b, '%': lambda a, b: math.fmod(a, b)}
MAX_LENGTH = 2000           # characters of an expression at most
_MAX_DEPTH = 50             # nesting at most (parentheses, operators)


def _tokens(text: str) -> List[Tuple[str, object, int]]:
    """(kind, value, column) tokens; kind is 'num', 'name', 'op' or 'end'."""
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ExpressionError(f'column {pos + 1}: {text[pos:pos + 10]!r} is not part of the '
                                  f'expression language (numbers, field names, arithmetic, '
                                  f'comparisons, and/or/not, ?:)')
        kind = m.lastgroup
        value = m.group(kind)
        if kind == 'number':
            out.append(('num', float(value) if any(c in value for c in '.eE') else int(value),
                        pos + 1))
        elif kind == 'name':
            if value in _WORDS:
                out.append(('op', _WORDS[value], pos + 1))
            elif value in _LITERALS:
                out.append(('num', _LITERALS[value], pos + 1))
            else:
                out.append(('name', value, pos + 1))
        elif kind == 'op':
            out.append(('op', value, pos + 1))
        pos = m.end()
    out.append(('end', None, len(text) + 1))
    return out


# A compiled node is a function env → value; Missing propagates out of it.
Node = Callable[[Dict[str, Number]], Number]


class _Parser:
    def __init__(self, text: str, names: Optional[Callable[[str], bool]]):
        self.tokens = _tokens(text)
        self.at = 0
        self.depth = 0
        self.names = names
        self.used: List[str] = []

    def peek(self) -> Tuple[str, object, int]:
        return self.tokens[self.at]

    def take(self, op: Optional[str] = None) -> Tuple[str, object, int]:
        token = self.tokens[self.at]
        if op is not None and token != ('op', op, token[2]):
            raise ExpressionError(f'column {token[2]}: expected {op!r}, found '
                                  f'{_shown(token)}')
        self.at += 1
        return token

    def is_op(self, *ops: str) -> bool:
        kind, value, _ = self.peek()
        return kind == 'op' and value in ops

    def nest(self):
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise ExpressionError(f'nested more than {_MAX_DEPTH} deep')

    def expr(self) -> Node:
        self.nest()
        cond = self.or_()
        if self.is_op('?'):
            self.take('?')
            yes = self.expr()
            self.take(':')
            no = self.expr()
            node = lambda env: yes(env) if _truth(cond(env)) else no(env)  # noqa: E731
        else:
            node = cond
        self.depth -= 1
        return node

    def _chain(self, sub, ops, combine) -> Node:
        node = sub()
        while self.is_op(*ops):
            op = self.take()[1]
            node = combine(op, node, sub())
        return node

    def or_(self) -> Node:
        return self._chain(self.and_, ('||',), lambda _, a, b: (
            lambda env: _truth(a(env)) or _truth(b(env))))

    def and_(self) -> Node:
        return self._chain(self.not_, ('&&',), lambda _, a, b: (
            lambda env: _truth(a(env)) and _truth(b(env))))

    def not_(self) -> Node:
        if self.is_op('!'):
            self.take()
            self.nest()
            inner = self.not_()
            self.depth -= 1
            return lambda env: not _truth(inner(env))
        return self.comparison()

    def comparison(self) -> Node:
        left = self.sum_()
        if self.is_op(*_COMPARE):
            compare = _COMPARE[self.take()[1]]
            right = self.sum_()
            if self.is_op(*_COMPARE):
                raise ExpressionError(f'column {self.peek()[2]}: chained comparison; use and')
            return lambda env: compare(left(env), right(env))
        return left

    def sum_(self) -> Node:
        return self._chain(self.product, ('+', '-'), _arith)

    def product(self) -> Node:
        return self._chain(self.unary, ('*', '/', '%'), _arith)

    def unary(self) -> Node:
        if self.is_op('-'):
            self.take()
            self.nest()
            inner = self.unary()
            self.depth -= 1
            return lambda env: -inner(env)
        return self.atom()

    def atom(self) -> Node:
        kind, value, column = self.take()
        if kind == 'num':
            return lambda env: value
        if kind == 'name':
            if self.is_op('('):
                raise ExpressionError(f'column {column}: {value}(...): the language has no '
                                      f'function calls')
            if self.names is not None and not self.names(value):
                raise ExpressionError(f'column {column}: unknown name {value!r}')
            self.used.append(value)
            return lambda env: _lookup(env, value)
        if (kind, value) == ('op', '('):
            node = self.expr()
            self.take(')')
            return node
        raise ExpressionError(f'column {column}: expected a number, a name or "(", found '
                              f'{_shown((kind, value, column))}')


def _shown(token) -> str:
    kind, value, _ = token
    return 'the end' if kind == 'end' else repr(str(value))


def _truth(value: Number) -> bool:
    return bool(value)


def _lookup(env: Dict[str, Number], name: str) -> Number:
    try:
        return env[name]
    except KeyError:
        raise Missing(name) from None


def _arith(op: str, a: Node, b: Node) -> Node:
    fn = _ARITH[op]

    def node(env):
        try:
            return fn(a(env), b(env))
        except (ZeroDivisionError, ValueError):
            raise Missing(f'{op} by zero') from None
    return node


class Expression:
    """A compiled expression: `evaluate(env)` gives a number or a boolean, or raises Missing."""

    def __init__(self, text: str, names: Optional[Callable[[str], bool]] = None):
        if len(text) > MAX_LENGTH:
            raise ExpressionError(f'longer than {MAX_LENGTH} characters')
        if not text.strip():
            raise ExpressionError('empty expression')
        parser = _Parser(text, names)
        self._root = parser.expr()
        kind, value, column = parser.peek()
        if kind != 'end':
            raise ExpressionError(f'column {column}: unexpected {_shown((kind, value, column))}')
        self.text = text
        self.names = tuple(dict.fromkeys(parser.used))

    def evaluate(self, env: Dict[str, Number]) -> Number:
        return self._root(env)

    def test(self, env: Dict[str, Number]) -> bool:
        """The expression as a condition: a missing name makes it false."""
        try:
            return _truth(self.evaluate(env))
        except Missing:
            return False

    def number(self, env: Dict[str, Number]) -> Optional[float]:
        """The expression as a number (true is 1); None when a name is missing."""
        try:
            value = self.evaluate(env)
        except Missing:
            return None
        value = float(value)
        return value if math.isfinite(value) else None

    def __repr__(self) -> str:
        return f'Expression({self.text!r})'


def compile_expression(text: str, names: Optional[Callable[[str], bool]] = None,
                       what: str = 'expression') -> Expression:
    """Expression(text), its errors prefixed by `what` (e.g. the config key)."""
    try:
        return Expression(text, names)
    except ExpressionError as e:
        raise ExpressionError(f'{what} {text!r}: {e}') from None
