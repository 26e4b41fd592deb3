// Tests of the binder (src/parse/binder.ts): one small Python snippet per scope rule of
// the Python Language Reference §4.2 "Naming and binding" (plus PEP 572 walrus, PEP 563
// annotations, PEP 634 match), with exact assertions on each top-level statement's
// module-scope reads (name + eager/lazy) and bindings; then import edges, `__all__`,
// dynamic uses, class facts, syntax errors and offsets; and a property test over the
// real timm checkout (every span slices to its name, no overlapping spans).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { initParser } from '../../src/parse/parser.js';
import { bindSource } from '../../src/parse/binder.js';
import type { FileFacts, Ref, StatementFacts } from '../../src/parse/types.js';
import { TIMM_CHECKOUT } from '../helpers.js';

before(async () => {
  await initParser();
});

/** Snippets are written indented inside template literals: strip the common indent. */
function py(text: string): string {
  const lines = text
    .replace(/^\n/, '')
    .replace(/\n\s*$/, '\n')
    .split('\n');
  const indent = Math.min(...lines.filter((l) => l.trim()).map((l) => l.match(/^ */)![0].length));
  return lines.map((l) => l.slice(indent)).join('\n');
}

/** Span invariants every result must satisfy (checked for every snippet). */
function checkSpans(src: string, f: FileFacts): void {
  let prevEnd = -1;
  for (const st of f.statements) {
    assert.ok(st.start >= prevEnd, `statement at line ${st.startLine} overlaps the previous one`);
    prevEnd = st.end;
    for (const r of st.refs) {
      assert.equal(src.slice(r.start, r.end), r.name, `ref span of ${r.name}`);
      assert.ok(r.start >= st.start && r.end <= st.end, `ref ${r.name} inside its statement`);
      if (r.attrs) {
        assert.equal(r.attrEnds?.length, r.attrs.length, `attrEnds of ${r.name}`);
        r.attrs.forEach((_, i) => {
          const text = src.slice(r.start, r.attrEnds![i]).replace(/\\\n|\s/g, '');
          assert.equal(text, [r.name, ...r.attrs!.slice(0, i + 1)].join('.'), `attribute chain of ${r.name}`);
        });
      }
    }
    for (const b of st.bindSpans) {
      assert.equal(src.slice(b.start, b.end), b.name, `bindSpan of ${b.name}`);
      // a whole identifier, not the prefix of a longer word (`f` of `from`)
      assert.ok(
        !/[\p{L}\p{N}_]/u.test(src[b.end] ?? '') && !/[\p{L}\p{N}_]/u.test(src[b.start - 1] ?? ''),
        `bindSpan of ${b.name} is a whole identifier`,
      );
      assert.ok(st.binds.includes(b.name), `bindSpan ${b.name} is in binds`);
    }
    const refs = [...st.refs].sort((a, b) => a.start - b.start);
    for (let i = 1; i < refs.length; i++)
      assert.ok(refs[i].start >= refs[i - 1].end, `refs ${refs[i - 1].name} and ${refs[i].name} overlap`);
    const spans = [...st.bindSpans].sort((a, b) => a.start - b.start);
    for (let i = 1; i < spans.length; i++)
      assert.ok(spans[i].start >= spans[i - 1].end, `bindSpans ${spans[i - 1].name} and ${spans[i].name} overlap`);
  }
}

function bind(text: string): { src: string; f: FileFacts } {
  const src = py(text);
  const f = bindSource(src);
  checkSpans(src, f);
  return { src, f };
}

/** A ref as a short string: `name` (eager), `name~` (lazy), `name?` (soft, always lazy),
 *  with its attribute chain: `torch.nn.Module`. */
function show(r: Ref): string {
  const chain = [r.name, ...(r.attrs ?? [])].join('.');
  return chain + (r.soft ? '?' : r.eager ? '' : '~');
}
const refs = (st: StatementFacts) => st.refs.map(show);
const binds = (st: StatementFacts) => [...st.binds].sort();

// ---------------------------------------------------------------- locality (§4.2.2)

test('a name bound anywhere in a function is local there, even when read before the assignment', () => {
  const { f } = bind(`
    x = 1
    def f():
        print(x)
        x = 2
    def g():
        return y, z, w, m, e, v
        for y in ():
            pass
        with c() as z:
            pass
        import w
        from p import m
        try:
            pass
        except E as e:
            pass
        (v := 1)
    def h():
        return x
  `);
  assert.deepEqual(binds(f.statements[0]), ['x']);
  assert.deepEqual(refs(f.statements[1]), ['print~']);
  assert.deepEqual(refs(f.statements[2]), ['c~', 'E~']);
  assert.deepEqual(binds(f.statements[2]), ['g']);
  assert.deepEqual(refs(f.statements[3]), ['x~']);
});

test('an annotation without a value makes a name local to a function but binds nothing at module level', () => {
  const { f } = bind(`
    n: int
    def f():
        n: int
        return n
  `);
  assert.deepEqual(binds(f.statements[0]), []);
  assert.deepEqual(refs(f.statements[0]), ['int']);
  assert.deepEqual(refs(f.statements[1]), ['int~']);
});

// ---------------------------------------------------------------- class scopes

test('class scopes are not visible from nested functions, lambdas or comprehensions; the first iterable is', () => {
  const { f } = bind(`
    class A:
        n = 1
        def m(self):
            return n
        f = lambda: n
        c = [n for _ in range(3)]
        d = [i for i in range(n)]
        e = {k: n for k in keys if n}
        g = m
  `);
  // m's body and the lambda read the global n lazily; comprehension bodies and `if`s
  // read it eagerly; `range(n)` (first iterable) and `g = m` see the class's names
  assert.deepEqual(refs(f.statements[0]), ['n~', 'n~', 'n', 'range', 'range', 'n', 'keys', 'n']);
  assert.deepEqual(binds(f.statements[0]), ['A']);
  assert.deepEqual(f.classes[0].members, ['n', 'm', 'f', 'c', 'd', 'e', 'g']);
});

test('class-body reads before the class binds the name read the globals (LOAD_NAME)', () => {
  const { f } = bind(`
    class A:
        y = x
        x = x
        z += 1
        w = x
        v = z
  `);
  // `y = x` and the value of `x = x` read the global x, `z += 1` reads the global z;
  // `w = x` and `v = z` read the class's own bindings
  assert.deepEqual(refs(f.statements[0]), ['x', 'x', 'z']);
});

test('a class body reads __module__ and __qualname__ from its own namespace', () => {
  const { f } = bind(`
    class A:
        where = __module__ + __qualname__
        def m(self):
            return __qualname__
    top = __module__
  `);
  assert.deepEqual(refs(f.statements[0]), ['__qualname__~']);
  assert.deepEqual(refs(f.statements[1]), ['__module__']);
});

test('in a class inside a function, a class-bound name read before its binding skips the function scope', () => {
  const { f } = bind(`
    def f():
        x = 1
        class B:
            x = x
            y = x
        class C:
            z = x
  `);
  // B's `x = x` reads the module's x (LOAD_NAME: class dict, globals, builtins); C reads
  // f's x (a closure variable), which is not a module-scope read
  assert.deepEqual(refs(f.statements[0]), ['x~']);
});

// ---------------------------------------------------------------- global / nonlocal

test('global declarations bind and read module names from functions; nonlocal refers to the enclosing function', () => {
  const { src, f } = bind(`
    def f():
        global G, R
        G = 1
        def inner():
            return R
        return G, H
    def g():
        y = 1
        def h():
            nonlocal y
            y = 2
            return y
        return h
  `);
  assert.deepEqual(binds(f.statements[0]), ['G', 'f']);
  assert.deepEqual(f.statements[0].globalBinds, ['G']);
  // a declaration without a binding (R) binds nothing; the nested function's R is global
  assert.deepEqual(refs(f.statements[0]), ['R~', 'G~', 'H~']);
  // renaming the module binding G must rename the declaration and the target inside f
  // (not R: f does not bind it)
  assert.deepEqual(
    f.statements[0].bindSpans.map((b) => [b.name, src.slice(src.lastIndexOf('\n', b.start) + 1, b.end)]),
    [
      ['f', 'def f'],
      ['G', '    global G'],
      ['G', '    G'],
    ],
  );
  assert.deepEqual(binds(f.statements[1]), ['g']);
  assert.equal(f.statements[1].globalBinds, undefined);
  assert.deepEqual(refs(f.statements[1]), []);
});

test('a global declaration in a class body binds when the class statement runs', () => {
  const { f } = bind(`
    class A:
        global GC
        GC = 1
        def m(self):
            global GM
            GM = 2
  `);
  assert.deepEqual(binds(f.statements[0]), ['A', 'GC', 'GM']);
  // only GM waits for a call
  assert.deepEqual(f.statements[0].globalBinds, ['GM']);
  assert.deepEqual(f.classes[0].members, ['m']);
});

// ---------------------------------------------------------------- walrus (PEP 572)

test('walrus targets bind in the nearest non-comprehension scope', () => {
  const { f } = bind(`
    vals = [(w := k * 2) for k in src]
    def f(xs):
        ys = [(v := x) for x in xs]
        return v
    print(w, v)
    if (m := compute()) > 0:
        pass
  `);
  assert.deepEqual(binds(f.statements[0]), ['vals', 'w']);
  assert.deepEqual(refs(f.statements[0]), ['src']);
  assert.deepEqual(binds(f.statements[1]), ['f']);
  assert.deepEqual(refs(f.statements[1]), []);
  assert.deepEqual(refs(f.statements[2]), ['print', 'w', 'v']);
  assert.deepEqual(binds(f.statements[3]), ['m']);
  assert.deepEqual(refs(f.statements[3]), ['compute']);
});

// ---------------------------------------------------------------- other binding targets

test('except-as, with-as (tuple targets) and for targets (nested tuples, starred) bind', () => {
  const { f } = bind(`
    try:
        pass
    except (ValueError, KeyError) as err:
        pass
    with open(p) as (a, b), ctx() as c:
        pass
    for i, (j, *k) in items:
        pass
    def f():
        try:
            pass
        except E as e:
            return e
        with g() as (h, q):
            return h, q
        for m, (n, *o) in it:
            return m, n, o
    with lock as self.held:
        pass
  `);
  assert.deepEqual(binds(f.statements[0]), ['err']);
  assert.deepEqual(refs(f.statements[0]), ['ValueError', 'KeyError']);
  assert.deepEqual(binds(f.statements[1]), ['a', 'b', 'c']);
  assert.deepEqual(refs(f.statements[1]), ['open', 'p', 'ctx']);
  assert.deepEqual(binds(f.statements[2]), ['i', 'j', 'k']);
  assert.deepEqual(refs(f.statements[2]), ['items']);
  assert.deepEqual(refs(f.statements[3]), ['E~', 'g~', 'it~']);
  // an attribute target reads its object
  assert.deepEqual(binds(f.statements[4]), []);
  assert.deepEqual(refs(f.statements[4]), ['lock', 'self.held']);
});

test('match: captures bind, value patterns and class patterns read, _ binds nothing, keyword patterns', () => {
  const { f } = bind(`
    match cmd:
        case [Point(x=0, y=yy), *rest] if yy > lim:
            pass
        case {"k": kv, **others}:
            pass
        case Color.RED | Color.GREEN:
            pass
        case [aa, _] as both:
            pass
        case Point(x=_, y=Other.V):
            pass
        case _:
            pass
    def f(c):
        match c:
            case Point(x=px):
                return px
            case Color.RED:
                return RED_VAL
  `);
  assert.deepEqual(binds(f.statements[0]), ['aa', 'both', 'kv', 'others', 'rest', 'yy']);
  assert.deepEqual(refs(f.statements[0]), [
    'cmd',
    'Point',
    'yy',
    'lim',
    'Color.RED',
    'Color.GREEN',
    'Point',
    'Other.V',
  ]);
  assert.deepEqual(refs(f.statements[1]), ['Point~', 'Color.RED~', 'RED_VAL~']);
});

test('del at module level records a delete and reads the name; in a function it makes the name local', () => {
  const { f } = bind(`
    x = 1
    del x
    def f():
        del y
        return y
    del a.b, c[k]
  `);
  assert.deepEqual(f.statements[1].deletes, ['x']);
  assert.deepEqual(binds(f.statements[1]), []);
  assert.deepEqual(refs(f.statements[1]), ['x']);
  assert.deepEqual(refs(f.statements[2]), []);
  assert.equal(f.statements[3].deletes, undefined);
  assert.deepEqual(refs(f.statements[3]), ['a.b', 'c', 'k']);
});

// ---------------------------------------------------------------- parameters, defaults

test('function and lambda parameters (positional-only, *args, keyword-only, **kw) are local', () => {
  const { f } = bind(`
    def f(a, /, b, *args, c, d=dflt, **kw) -> R:
        return a, b, args, c, d, kw, free
    g = lambda p, /, q=qd, *r, s, **t: (p, q, r, s, t, lfree)
    def h(*, k: K, **opts: O):
        return k, opts
  `);
  assert.deepEqual(refs(f.statements[0]), ['dflt', 'R', 'free~']);
  assert.deepEqual(binds(f.statements[1]), ['g']);
  assert.deepEqual(refs(f.statements[1]), ['qd', 'lfree~']);
  assert.deepEqual(refs(f.statements[2]), ['K', 'O']);
});

test('defaults and annotations are evaluated in the enclosing scope: eager at module level, lazy inside a function', () => {
  const { f } = bind(`
    def outer():
        def inner(a: Ann = dflt) -> Ret:
            pass
        return inner
    class A:
        k = 1
        def m(self, a=k, b: T = 2):
            return k
  `);
  assert.deepEqual(refs(f.statements[0]), ['Ann~', 'dflt~', 'Ret~']);
  // the default `k` is the class's k; the body's k is the global k
  assert.deepEqual(refs(f.statements[1]), ['T', 'k~']);
});

// ---------------------------------------------------------------- eager / lazy

test('decorators, bases, keywords and class bodies are eager; function bodies lazy; module comprehensions eager', () => {
  const { f } = bind(`
    @deco(arg)
    class A(Base, metaclass=Meta):
        x = helper()
        def m(self):
            return body_ref
    @fdeco
    def f():
        return fbody
    sq = [g(i) for i in rng if i > lim]
    cb = (lambda: late)
  `);
  assert.deepEqual(refs(f.statements[0]), ['deco', 'arg', 'Base', 'Meta', 'helper', 'body_ref~']);
  assert.deepEqual(binds(f.statements[0]), ['A']);
  assert.deepEqual(refs(f.statements[1]), ['fdeco', 'fbody~']);
  assert.deepEqual(refs(f.statements[2]), ['g', 'rng', 'lim']);
  assert.deepEqual(refs(f.statements[3]), ['late~']);
});

// ---------------------------------------------------------------- annotations

const annotated = `
  x: Ann1 = 1
  def f(a: "torch.Tensor", b: List["Foo"]) -> "nn.Module":
      v: Local = 2
      return v
  class C:
      y: Ann2
`;

test('annotations are eager without PEP 563, variable annotations in function bodies are lazy, strings are soft', () => {
  const { src, f } = bind(annotated);
  assert.equal(f.futureAnnotations, false);
  assert.deepEqual(refs(f.statements[0]), ['Ann1']);
  assert.deepEqual(refs(f.statements[1]), ['torch.Tensor?', 'List', 'Foo?', 'nn.Module?', 'Local~']);
  assert.deepEqual(refs(f.statements[2]), ['Ann2']);
  const torch = f.statements[1].refs[0];
  assert.equal(torch.eager, false);
  assert.equal(src.slice(torch.start, torch.attrEnds![0]), 'torch.Tensor');
});

test('with from __future__ import annotations every annotation is lazy', () => {
  const { f } = bind('"""Module docstring."""\n# comment\nfrom __future__ import annotations\n' + py(annotated));
  assert.equal(f.futureAnnotations, true);
  assert.deepEqual(refs(f.statements[2]), ['Ann1~']);
  assert.deepEqual(refs(f.statements[3]), ['torch.Tensor?', 'List~', 'Foo?', 'nn.Module?', 'Local~']);
  assert.deepEqual(refs(f.statements[4]), ['Ann2~']);
  assert.equal(bindSource('from __future__ import division\nx: A = 1\n').futureAnnotations, false);
  assert.equal(bindSource('from __future__ import (division,\n    annotations)\n').futureAnnotations, true);
});

test('strings inside Literal[...] and Annotated metadata are not forward references', () => {
  const { f } = bind(`
    def f(a: Literal['train', 'eval'] = 'train', b: typing.Literal['x'] = 'x',
          c: Optional[Literal['w', Mode.FAST]] = None, d: Annotated['Fwd', 'meta'] = 1) -> 'Out':
        pass
    v: Literal['q'] = 'q'
  `);
  assert.deepEqual(refs(f.statements[0]), [
    'Literal',
    'typing.Literal',
    'Optional',
    'Literal',
    'Mode.FAST',
    'Annotated',
    'Fwd?',
    'Out?',
  ]);
  assert.deepEqual(refs(f.statements[1]), ['Literal']);
});

// ---------------------------------------------------------------- attribute chains

test('attribute chains give the root name with attrs and attrEnds; a local alias is not a global ref', () => {
  const { src, f } = bind(`
    y = a.b.c(d).e
    def f():
        import numpy as np
        return np.zeros(1), torch.nn.functional.relu
  `);
  const [a, d] = f.statements[0].refs;
  assert.deepEqual([a.name, a.attrs, d.name, d.attrs], ['a', ['b', 'c'], 'd', undefined]);
  assert.deepEqual(
    a.attrEnds!.map((e) => src.slice(a.start, e)),
    ['a.b', 'a.b.c'],
  );
  assert.deepEqual(refs(f.statements[1]), ['torch.nn.functional.relu~']);
});

// ---------------------------------------------------------------- imports

test('import edges: dotted, aliased, relative, from-dot, star', () => {
  const { src, f } = bind(`
    import a.b.c
    import a.b as ab, d
    from ..x import y as z
    from . import sib
    from .m import *
    from x import f
    import m as i
  `);
  const edges = f.statements.map((st) => st.imports.map(({ line, start, end, ...e }) => e));
  assert.deepEqual(edges, [
    [{ kind: 'import', module: 'a.b.c', asname: null }],
    [
      { kind: 'import', module: 'a.b', asname: 'ab' },
      { kind: 'import', module: 'd', asname: null },
    ],
    [{ kind: 'from', module: 'x', level: 2, name: 'y', asname: 'z' }],
    [{ kind: 'from', module: '', level: 1, name: 'sib', asname: null }],
    [{ kind: 'from', module: 'm', level: 1, name: '*', asname: null }],
    [{ kind: 'from', module: 'x', level: 0, name: 'f', asname: null }],
    [{ kind: 'import', module: 'm', asname: 'i' }],
  ]);
  assert.deepEqual(f.statements.map(binds), [['a'], ['ab', 'd'], ['z'], ['sib'], [], ['f'], ['i']]);
  // import bindings have no identifier span (renaming rewrites the whole import)
  for (const st of f.statements) assert.deepEqual(st.bindSpans, []);
  const e = f.statements[2].imports[0];
  assert.equal(src.slice(e.start, e.end), 'from ..x import y as z');
  assert.equal(e.line, 3);
});

test('conditional imports keep their edges on the compound statement, with its guard', () => {
  const { src, f } = bind(`
    try:
        import foo
    except ImportError:
        foo = None
    if TYPE_CHECKING:
        from q import Q
    if sys.version_info >= (3, 8):
        from typing import Literal
    else:
        from typing_extensions import Literal
    x = 1
  `);
  assert.deepEqual(
    f.statements.map((s) => s.guard),
    ['try', 'type-checking', 'if', null],
  );
  // only a plain TYPE_CHECKING condition is skipped at run time
  const guards = (cond: string) => bindSource(`if ${cond}:\n    import q\n`).statements[0].guard;
  assert.deepEqual(
    ['typing.TYPE_CHECKING', '(TYPE_CHECKING)', 'not TYPE_CHECKING', 'TYPE_CHECKING or sys.version_info >= (3, 8)'].map(
      guards,
    ),
    ['type-checking', 'type-checking', 'if', 'if'],
  );
  assert.deepEqual(f.statements.map(binds), [['foo'], ['Q'], ['Literal'], ['x']]);
  assert.deepEqual(refs(f.statements[0]), ['ImportError']);
  assert.deepEqual(refs(f.statements[1]), ['TYPE_CHECKING']);
  assert.deepEqual(
    f.statements[2].imports.map((e) => [e.kind === 'from' && e.module, src.slice(e.start, e.end), e.line]),
    [
      ['typing', 'from typing import Literal', 8],
      ['typing_extensions', 'from typing_extensions import Literal', 10],
    ],
  );
  assert.equal(src.slice(f.statements[0].imports[0].start, f.statements[0].imports[0].end), 'import foo');
});

test('imports inside function and class bodies are nested imports binding locals', () => {
  const { src, f } = bind(`
    def f():
        from .rel import thing as th
        import os.path
        return th, os.path.join
    class K:
        import math
        pi = math.pi
  `);
  const st = f.statements[0];
  assert.deepEqual(st.imports, []);
  assert.deepEqual(binds(st), ['f']);
  assert.deepEqual(refs(st), []);
  assert.deepEqual(
    st.nestedImports!.map((n) => [src.slice(n.start, n.end), n.line, n.edges.map(({ line, start, end, ...e }) => e)]),
    [
      ['from .rel import thing as th', 2, [{ kind: 'from', module: 'rel', level: 1, name: 'thing', asname: 'th' }]],
      ['import os.path', 3, [{ kind: 'import', module: 'os.path', asname: null }]],
    ],
  );
  assert.deepEqual(f.statements[1].imports, []);
  assert.equal(f.statements[1].nestedImports?.length, 1);
  assert.deepEqual(refs(f.statements[1]), []);
  assert.deepEqual(f.classes[0].members, ['math', 'pi']);
});

// ---------------------------------------------------------------- __all__

test('__all__: literal, +=, .extend, .append', () => {
  const { f } = bind(`
    __all__ = ['A', "B"]
    __all__ += ['C']
    __all__ += 'D',
    __all__.extend(['E', 'F'])
    __all__.append('G')
  `);
  assert.deepEqual(f.all, ['A', 'B', 'C', 'D', 'E', 'F', 'G']);
  assert.deepEqual(bindSource("__all__ = ('x',) + ('y',)\n").all, ['x', 'y']);
  assert.equal(bindSource('x = 1\n').all, null);
});

test('a non-literal __all__ gives null', () => {
  assert.equal(bindSource('__all__ = names()\n').all, null);
  assert.equal(bindSource("__all__ = ['a']\n__all__.extend(more)\n").all, null);
  assert.equal(bindSource("__all__ = [f'{x}']\n").all, null);
  // a function's local __all__ is not the module's
  assert.deepEqual(bindSource("__all__ = ['a']\ndef f():\n    __all__ = g()\n").all, ['a']);
});

// ---------------------------------------------------------------- dynamic uses

test('dynamic uses are recorded with their line and statement', () => {
  const { f } = bind(`
    import importlib
    from importlib import import_module
    globals()['x'] = 1
    def f():
        return locals(), vars(f)
    exec("pass")
    mod = importlib.import_module('m')
    other = import_module('n')
    __import__('y')
    eval('1')
    model.eval()
    optimizer = constructor(w)
    s = toString(x) + hasOwnProperty(y) + __proto__(z)
  `);
  assert.deepEqual(
    f.dynamic.map((d) => [d.kind, d.line, d.stmt]),
    [
      ['globals', 3, 2],
      ['locals', 5, 3],
      ['vars', 5, 3],
      ['exec', 6, 4],
      ['import_module', 7, 5],
      ['import_module', 8, 6],
      ['__import__', 9, 7],
      ['eval', 10, 8],
    ],
  );
});

// ---------------------------------------------------------------- classes

test('class facts: dotted bases, metaclass, abstract methods, init/forward params, docstring, decorators', () => {
  const { src, f } = bind(`
    import torch

    @register
    @dataclass(frozen=True)
    class Block(mmcv.runner.BaseModule, Generic[T], metaclass=ABCMeta):
        """A block.

        Second line."""
        size = 3

        def __init__(self, dim: int, *, drop=0.0):
            super().__init__()

        @abc.abstractmethod
        def forward(self, x):
            pass

        @abstractmethod
        def extra(self): ...

    if HAS_X:
        class Inner:
            pass

    def factory():
        class Hidden:
            pass
        return Hidden
  `);
  assert.deepEqual(
    f.classes.map((c) => [c.name, c.stmt, c.line]),
    [
      ['Block', 1, 5],
      ['Inner', 2, 22],
    ],
  );
  const c = f.classes[0];
  assert.deepEqual(c.bases, [
    { text: 'mmcv.runner.BaseModule', name: 'mmcv', attrs: ['runner', 'BaseModule'] },
    { text: 'Generic[T]', name: null, attrs: [] },
  ]);
  assert.equal(c.metaclass, 'ABCMeta');
  assert.deepEqual(c.members, ['size', '__init__', 'forward', 'extra']);
  assert.deepEqual(c.abstractMethods, ['forward', 'extra']);
  assert.equal(c.docstring, 'A block.\n\n    Second line.');
  assert.deepEqual(c.decorators, ['register', 'dataclass(frozen=True)']);
  assert.equal(c.initParams, '(self, dim: int, *, drop=0.0)');
  assert.equal(c.forwardParams, '(self, x)');
  assert.equal(c.nested, false);
  // a decorated class's span starts at its first decorator
  assert.ok(src.slice(c.start, c.end).startsWith('@register\n@dataclass(frozen=True)\nclass Block('));
  assert.equal(c.start, f.statements[1].start);
  assert.equal(f.statements[1].kind, 'decorated_definition');
  assert.deepEqual(refs(f.statements[1]), [
    'register',
    'dataclass',
    'mmcv.runner.BaseModule',
    'Generic',
    'T',
    'ABCMeta',
    'int',
    'super~',
    'abc.abstractmethod',
    'abstractmethod',
  ]);
});

// ---------------------------------------------------------------- errors, text encodings

test('a file with syntax errors records them and still yields the valid statements', () => {
  const { f } = bind(`
    import os
    x = = 3
    class A(B):
        y = os.sep

    def broken(:
        return os.sep

    z = os.getcwd()
  `);
  assert.deepEqual(
    f.errors.map((e) => [e.line, e.column]),
    [
      [2, 5],
      [6, 12],
    ],
  );
  assert.deepEqual(
    f.statements.map((s) => s.binds),
    [['os'], ['x'], ['A'], ['broken'], ['z']],
  );
  assert.deepEqual(refs(f.statements[2]), ['B', 'os.sep']);
  assert.deepEqual(refs(f.statements[4]), ['os.getcwd']);
  assert.deepEqual(
    f.classes.map((c) => c.name),
    ['A'],
  );
  assert.equal(f.lines, 9);
});

test('statements after an unclosed bracket still yield facts', () => {
  // tree-sitter puts everything after `foo("…", 2` into one ERROR node; the binder
  // recovers the statements that follow, at their real offsets (the astral character
  // on the broken line counts two)
  const { src, f } = bind(`
    import os
    x = foo("\u{1F600}", 2
    def f():
        return os.sep
    class K(B):
        y = os.sep
    z = os.getcwd()
  `);
  assert.deepEqual(
    f.errors.map((e) => e.line),
    [2],
  );
  assert.deepEqual(
    f.statements.map((s) => s.binds),
    [['os'], ['f'], ['K'], ['z']],
  );
  assert.deepEqual(f.statements.map(refs), [[], ['os.sep~'], ['B', 'os.sep'], ['os.getcwd']]);
  assert.ok(src.slice(f.statements[2].start, f.statements[2].end).startsWith('class K(B):'));
  assert.deepEqual(
    f.classes.map((c) => [c.name, c.stmt, c.members]),
    [['K', 2, ['y']]],
  );

  // the same inside a class body: the methods and functions after it are recovered
  const g = bind(`
    import os
    class A(nn.Module):
        def __init__(self):
            self.x = foo(1,
        def forward(self, x):
            return os.sep
    def g():
        return bar
  `).f;
  assert.deepEqual(
    g.errors.map((e) => e.line),
    [4],
  );
  assert.deepEqual(
    g.statements.map((s) => s.binds),
    [['os'], ['A'], ['g']],
  );
  assert.deepEqual(g.statements.map(refs), [[], ['nn.Module', 'os.sep~'], ['bar~']]);
  assert.deepEqual(g.classes[0].members, ['__init__', 'forward']);
});

test('offsets are JavaScript string indices: BOM, non-ASCII identifiers and astral characters before refs', () => {
  const src =
    '\uFEFFimport torch\ns = "h\u00e9llo \u{1F600} \u20AC"\n\u00e9t\u00e9 = torch.zeros(1)\nprint(\u00e9t\u00e9, f"{s!r:>{width}} {d["k"]}")\nclass \u03A9(nn.Module):\n    pass\n';
  const f = bindSource(src);
  checkSpans(src, f);
  assert.deepEqual(f.errors, []);
  assert.deepEqual(
    f.statements.map((s) => s.binds),
    [['torch'], ['s'], ['\u00e9t\u00e9'], [], ['\u03A9']],
  );
  assert.deepEqual(refs(f.statements[2]), ['torch.zeros']);
  // the f-string's nested same-kind quotes (PEP 701) and its format-spec interpolation
  assert.deepEqual(refs(f.statements[3]), ['print', '\u00e9t\u00e9', 's', 'width', 'd']);
  assert.deepEqual(f.classes[0].bases, [{ text: 'nn.Module', name: 'nn', attrs: ['Module'] }]);
  const ref = f.statements[2].refs[0];
  assert.equal(src.slice(ref.start, ref.attrEnds![0]), 'torch.zeros');
  assert.equal(f.statements[4].startLine, 5);
});

// ---------------------------------------------------------------- property test on timm

test('timm: every ref and bindSpan slices to its name, no statement has overlapping spans', (t) => {
  const root = path.join(TIMM_CHECKOUT || '/nonexistent', 'timm');
  if (!existsSync(root)) {
    t.skip(`${root} does not exist`);
    return;
  }
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.py')) files.push(p);
    }
  };
  walk(root);
  assert.ok(files.length > 50, 'timm has Python files');
  let refCount = 0;
  for (const file of files) {
    const src = readFileSync(file, 'utf8');
    const f = bindSource(src);
    try {
      checkSpans(src, f);
    } catch (e) {
      throw new Error(`${file}: ${(e as Error).message}`);
    }
    refCount += f.statements.reduce((n, s) => n + s.refs.length, 0);
  }
  assert.ok(refCount > 10000, `timm yields many refs (${refCount})`);
});
