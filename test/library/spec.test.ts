// Spec pieces: parameter lists parsed with tree-sitter (defaults with commas and brackets,
// annotations, *args / **kwargs, keyword-only and positional-only parameters), signature
// formatting, the first docstring sentence, and a spec assembled from facts.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { buildSpec, firstSentence, formatSignature, initSpecParser, parseParams } from '../../src/library/spec.js';
import type { ClassFacts } from '../../src/parse/types.js';

before(async () => {
  await initSpecParser();
});

const brief = (text: string, dropFirst = true) =>
  parseParams(text, { dropFirst }).map((p) => [p.kind, p.name, p.default, p.annotation]);

test('plain, default and annotated parameters; self dropped', () => {
  assert.deepEqual(brief('(self, dim, num_heads=8, qkv_bias: bool = False, scale: float)'), [
    ['positional', 'dim', null, null],
    ['positional', 'num_heads', '8', null],
    ['positional', 'qkv_bias', 'False', 'bool'],
    ['positional', 'scale', null, 'float'],
  ]);
  // without dropFirst the first parameter stays
  assert.deepEqual(
    brief('(self, x)', false).map((p) => p[1]),
    ['self', 'x'],
  );
});

test('defaults containing commas, brackets, strings, lambdas and calls', () => {
  const ps = parseParams(
    `(self, kernel=(3, 3), pad={'a': 1, 'b': (2, 3)}, act=partial(nn.ReLU, inplace=True), s="a, b)", f=lambda x, y=2: x + y, xs=[1, [2, 3]])`,
    { dropFirst: true },
  );
  assert.deepEqual(
    ps.map((p) => [p.name, p.default]),
    [
      ['kernel', '(3, 3)'],
      ['pad', `{'a': 1, 'b': (2, 3)}`],
      ['act', 'partial(nn.ReLU, inplace=True)'],
      ['s', '"a, b)"'],
      ['f', 'lambda x, y=2: x + y'],
      ['xs', '[1, [2, 3]]'],
    ],
  );
});

test('annotations with subscripts and unions; multi-line text collapsed', () => {
  const ps = parseParams(
    `(
        self,
        norm_layer: Optional[Callable[[int], nn.Module]] = None,  # a comment
        sizes: Tuple[int, ...] = (1,
                                  2),
        mode: "Literal['a', 'b']" = 'a',
        act: type[nn.Module] | None = nn.GELU,
    )`,
    { dropFirst: true },
  );
  assert.deepEqual(
    ps.map((p) => [p.name, p.annotation, p.default]),
    [
      ['norm_layer', 'Optional[Callable[[int], nn.Module]]', 'None'],
      ['sizes', 'Tuple[int, ...]', '(1, 2)'],
      ['mode', `"Literal['a', 'b']"`, `'a'`],
      ['act', 'type[nn.Module] | None', 'nn.GELU'],
    ],
  );
});

test('*args, **kwargs, keyword-only (PEP 3102) and positional-only (PEP 570)', () => {
  assert.deepEqual(brief('(self, a, /, b, *args, c, d=1, **kwargs)'), [
    ['positional', 'a', null, null],
    ['positional', 'b', null, null],
    ['var-positional', 'args', null, null],
    ['keyword', 'c', null, null],
    ['keyword', 'd', '1', null],
    ['var-keyword', 'kwargs', null, null],
  ]);
  assert.deepEqual(brief('(self, x, *, eps: float = 1e-6, affine=True)'), [
    ['positional', 'x', null, null],
    ['keyword', 'eps', '1e-6', 'float'],
    ['keyword', 'affine', 'True', null],
  ]);
  assert.deepEqual(brief('(self, *inputs: torch.Tensor, **kw: Any)'), [
    ['var-positional', 'inputs', null, 'torch.Tensor'],
    ['var-keyword', 'kw', null, 'Any'],
  ]);
  // a method whose only parameter is *args keeps it (there is no plain `self` to drop)
  assert.deepEqual(brief('(*args)'), [['var-positional', 'args', null, null]]);
});

test('nothing to parse gives no parameters', () => {
  assert.deepEqual(parseParams(null), []);
  assert.deepEqual(parseParams(''), []);
  assert.deepEqual(parseParams('self, x'), []); // not a parenthesised list
  assert.deepEqual(parseParams('(self, x=)'), []); // syntax error
  assert.deepEqual(parseParams('(self)', { dropFirst: true }), []);
});

test('formatSignature round-trips the kinds, inserting a bare * before keyword-only parameters', () => {
  const text = '(self, a, b: int = 2, *, c=3, **kw)';
  assert.equal(formatSignature('Block', parseParams(text, { dropFirst: true })), 'Block(a, b: int = 2, *, c=3, **kw)');
  assert.equal(formatSignature('f', parseParams('(self, *args, c=3)', { dropFirst: true })), 'f(*args, c=3)');
  // and the formatted text parses back to the same parameters
  const again = formatSignature('x', parseParams('(self, a, /, b, *args, c, d=1, **kwargs)', { dropFirst: true }));
  assert.deepEqual(
    parseParams(again.slice(1), {}).map((p) => p.kind),
    ['positional', 'positional', 'var-positional', 'keyword', 'keyword', 'var-keyword'],
  );
});

test('first docstring sentence (PEP 257 indentation, abbreviations, paragraphs)', () => {
  assert.equal(firstSentence('Multi-head attention. Uses softmax.'), 'Multi-head attention.');
  assert.equal(
    firstSentence('\n    Conv -> BN -> act, e.g. for a stem.\n    More text here.\n'),
    'Conv -> BN -> act, e.g. for a stem.',
  );
  assert.equal(
    firstSentence('Window attention\n    across windows of size 7\n\n    Args:\n        dim: x'),
    'Window attention across windows of size 7',
  );
  assert.equal(firstSentence('Version 1.5 of the block! Then more.'), 'Version 1.5 of the block!');
  assert.equal(firstSentence('   \n  '), null);
  assert.equal(firstSentence(null), null);
  assert.equal(firstSentence('x'.repeat(400))!.length, 300);
});

test('buildSpec: category, hyperparameters, externs to top-level names, requirements, revision SWHID', () => {
  const cls: ClassFacts = {
    name: 'WindowAttention',
    stmt: 0,
    line: 10,
    start: 0,
    end: 0,
    bases: [{ text: 'nn.Module', name: 'nn', attrs: ['Module'] }],
    metaclass: null,
    members: [],
    abstractMethods: [],
    docstring: 'Window attention with relative position bias. Details follow.',
    decorators: [],
    initParams: '(self, dim, num_heads, *, qkv_bias=True, **kw)',
    forwardParams: '(self, x, mask: Optional[Tensor] = None)',
    nested: false,
  };
  const spec = buildSpec({
    id: 'pkg.attn.WindowAttention',
    status: 'validated',
    lines: 40,
    signature: {
      bases: cls.bases.map((b) => b.text),
      docstring: cls.docstring,
      init: parseParams(cls.initParams, { dropFirst: true }),
      forward: parseParams(cls.forwardParams, { dropFirst: true }),
    },
    origin: {
      repo: 'r',
      module: 'pkg.attn',
      path: 'pkg/attn.py',
      line: 10,
      revision: 'A'.repeat(40),
      url: 'https://github.com/o/r.git/',
    },
    interned: ['pkg.b', 'pkg.a'],
    externs: ['torch.nn.functional', 'torch', 'math', 'einops'],
    provenance: [
      {
        repo: 'r',
        revision: null,
        url: null,
        path: 'pkg/attn.py',
        module: 'pkg.attn',
        swhid: 'swh:1:cnt:' + '1'.repeat(40),
        ranges: [[1, 5]],
      },
    ],
    validation: {
      stages: {
        parse: 'pass',
        compile: 'pass',
        import: 'pass',
        namespace: 'skip',
        instantiate: 'pass',
        forward: 'pass',
        equivalence: 'skip',
      },
      params: 10,
      input_shapes: [[2, 3]],
      output_shapes: [[2, 3]],
      layers: { Linear: 2, Dropout: 1 },
    },
    requirements: new Map([
      ['torch', 'torch==1.13.0'],
      ['math', null],
      ['einops', 'einops'],
    ]),
  });
  assert.equal(spec.class, 'WindowAttention');
  assert.equal(spec.category, 'attention');
  assert.equal(spec.summary, 'Window attention with relative position bias.');
  assert.deepEqual(spec.hyperparameters, ['dim', 'num_heads', 'qkv_bias']);
  assert.deepEqual(
    spec.forward.map((p) => [p.name, p.annotation, p.default]),
    [
      ['x', null, null],
      ['mask', 'Optional[Tensor]', 'None'],
    ],
  );
  assert.deepEqual(spec.externs, ['einops', 'math', 'torch']);
  assert.deepEqual(spec.requirements, ['einops', 'torch==1.13.0']);
  assert.deepEqual(spec.dependencies, ['pkg.a', 'pkg.b']);
  assert.equal(spec.origin.url, 'https://github.com/o/r');
  assert.equal(spec.revision_swhid, 'swh:1:rev:' + 'a'.repeat(40));
  assert.deepEqual(spec.provenance, [{ path: 'pkg/attn.py', swhid: 'swh:1:cnt:' + '1'.repeat(40), lines: [[1, 5]] }]);
  assert.deepEqual(spec.layers, { Linear: 2, Dropout: 1 });
  // no source text anywhere in the spec
  assert.ok(!JSON.stringify(spec).includes('def '));
});
