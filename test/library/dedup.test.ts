// De-duplication: the tokenizer against CPython's tokenize module, normal forms, MinHash,
// and dedup() on planted exact / near / structural duplicates and near-misses (different
// layer widths, unparseable and empty blocks).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { tokenize, docstringMask, canonicalText, structuralHashes, T } from '../../src/library/structural.js';
import {
  shingles,
  jaccard,
  jaccardAtLeast,
  jaccardIn,
  leastIntersection,
  ophSignature,
  estimateJaccard,
  chooseBands,
  candidateProbability,
} from '../../src/util/minhash.js';
import {
  dedup,
  computeSignature,
  blockSignatures,
  similarity,
  signatureToRecord,
  signatureFromRecord,
  SimilarityIndex,
  packSignatures,
  SetProbe,
  MINHASH_K,
  type DedupInput,
} from '../../src/library/dedup.js';
import { generateBlocks, rng } from '../../bench/dedup.js';
import { TIMM_CHECKOUT } from '../helpers.js';

const KIND: Record<number, string> = {
  [T.NAME]: 'NAME',
  [T.KEYWORD]: 'NAME',
  [T.INT]: 'NUMBER',
  [T.NUMBER]: 'NUMBER',
  [T.STRING]: 'STRING',
  [T.OP]: 'OP',
  [T.NEWLINE]: 'NEWLINE',
  [T.INDENT]: 'INDENT',
  [T.DEDENT]: 'DEDENT',
};

function cpythonTokens(src: string): string[] {
  const py = [
    'import sys, io, json, tokenize',
    'out = []',
    'for t in tokenize.generate_tokens(io.StringIO(sys.stdin.read()).readline):',
    '    n = tokenize.tok_name[t.type]',
    '    if n in ("COMMENT", "NL", "ENDMARKER"): continue',
    '    out.append(n if n in ("NEWLINE", "INDENT", "DEDENT") else n + ":" + t.string)',
    'print(json.dumps(out))',
  ].join('\n');
  return JSON.parse(execFileSync('python3', ['-c', py], { input: src, encoding: 'utf8' }));
}

function ourTokens(src: string): string[] {
  const t = tokenize(src);
  assert.equal(t.error, null);
  const out: string[] = [];
  for (let i = 0; i < t.n; i++) {
    const k = KIND[t.kind[i]];
    out.push(k === 'NEWLINE' || k === 'INDENT' || k === 'DEDENT' ? k : `${k}:${src.slice(t.start[i], t.end[i])}`);
  }
  return out;
}

const TRICKY = `#!/usr/bin/env python
"""Module docstring."""
import torch.nn as nn  # comment
from ..x import (a,
    b as c)

@decorator(key=1)
class A(nn.Module, metaclass=M):
    '''Class doc'''
    x: int = 0x_ff + 0o17 + 0b1 + 1_000 + 1.5e-3 + 2j + .5 + 7.
    s = rb'raw\\'' + f"{x!r:>{w}}" + u'u' + BR"x" + """multi
line"""
    def f(self, *args, a=1, **kw) -> None:
        if a <= 2 and a != 3 or not a >= 4:
            a **= 2; a //= 3; a >>= 1; a <<= 1; a @= m
        y = [i for i in range(3)] ; z = {k: v for k, v in kw.items()}
        w = (lambda q, *r: q)(1) \\
            + 2
        if (n := len(args)) > 1:
            pass
\tdef g(self): ...
    async def h(self):
        await self.f()



`;

test('tokenizer agrees with CPython tokenize on tricky source', () => {
  assert.deepEqual(ourTokens(TRICKY), cpythonTokens(TRICKY));
  const crlf = 'def f(x):\r\n    return x\r\n';
  assert.deepEqual(ourTokens(crlf), cpythonTokens(crlf));
});

test('tokenizer reports lexical errors', () => {
  assert.match(tokenize('x = "abc\n').error ?? '', /unterminated string/);
  assert.match(tokenize('x = """abc\n').error ?? '', /unterminated string/);
  assert.match(tokenize('x = (1, 2\n').error ?? '', /unclosed bracket/);
  assert.match(tokenize('x = (1, 2]\n').error ?? '', /unmatched/);
  assert.match(tokenize('if x:\n        a\n    b\n').error ?? '', /inconsistent dedent/);
  assert.match(tokenize('x = $y\n').error ?? '', /invalid character/);
  assert.match(tokenize('x = 1 \\ 2\n').error ?? '', /line continuation/);
  assert.equal(tokenize('').error, null);
});

test('normal form drops comments, docstrings and layout, keeps other strings', () => {
  const norm = (s: string) => {
    const t = tokenize(s);
    const keep = new Uint8Array(t.n);
    docstringMask(t, keep);
    return canonicalText(t, keep);
  };
  const a = 'class A:\n    """Doc."""\n    def f(self):\n        "doc"\n        return "kept"  # c\n';
  const b = '# header\nclass A:\n  def f(self):\n\n    return "kept"\n';
  assert.equal(norm(a), norm(b));
  assert.ok(norm(a).includes('"kept"'));
  // a string statement after the first statement is code, not a docstring
  assert.notEqual(norm('def f():\n    x = 1\n    "not a doc"\n'), norm('def f():\n    x = 1\n'));
  // f-strings are never docstrings
  assert.notEqual(norm('def f():\n    f"x"\n'), norm('def f():\n    pass\n'));
  // integer spellings are canonical
  assert.equal(norm('x = 0x40 + 6_4\n'), norm('x = 64 + 64\n'));
});

test('shingles, exact Jaccard and OPH estimate', () => {
  const seq = Uint32Array.from([1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6]);
  const s = shingles(seq, seq.length, 5);
  assert.equal(s.length, 6); // 8 windows, 2 repeated
  for (let i = 1; i < s.length; i++) assert.ok(s[i] > s[i - 1]);
  assert.equal(shingles(seq, 3, 5).length, 1);
  assert.equal(shingles(seq, 0, 5).length, 0);
  assert.equal(jaccard(Uint32Array.from([1, 2, 3]), Uint32Array.from([2, 3, 4])), 0.5);
  assert.equal(jaccard(new Uint32Array(0), new Uint32Array(0)), 0);
  // OPH + densification estimates Jaccard (K = 128: standard error ≈ 0.04)
  const r = rng(7);
  for (const [size, overlap] of [
    [400, 0.9],
    [400, 0.5],
    [60, 0.8],
    [20, 0.95],
  ] as const) {
    let errSum = 0;
    for (let trial = 0; trial < 20; trial++) {
      const common = Array.from({ length: Math.round(size * overlap) }, () => (r() * 2 ** 32) >>> 0);
      const a = [...common, ...Array.from({ length: size - common.length }, () => (r() * 2 ** 32) >>> 0)];
      const b = [...common, ...Array.from({ length: size - common.length }, () => (r() * 2 ** 32) >>> 0)];
      const A = Uint32Array.from(new Set(a)).sort(),
        B = Uint32Array.from(new Set(b)).sort();
      errSum += estimateJaccard(ophSignature(A)!, ophSignature(B)!) - jaccard(A, B);
    }
    assert.ok(Math.abs(errSum / 20) < 0.05, `biased estimate for size ${size} overlap ${overlap}: ${errSum / 20}`);
  }
  assert.equal(ophSignature(new Uint32Array(0)), null);
  // identical sets → identical signatures, including densified bins
  const tiny = Uint32Array.from([5, 9, 77]);
  assert.deepEqual(ophSignature(tiny), ophSignature(tiny.slice()));
  // banding: high recall at the threshold, few candidates far below it
  const nb = chooseBands(128, 0.9);
  assert.ok(candidateProbability(0.9, nb.b, nb.r) >= 0.999);
  assert.ok(candidateProbability(0.5, nb.b, nb.r) < 0.1);
  const sb = chooseBands(128, 0.95);
  assert.ok(candidateProbability(0.95, sb.b, sb.r) >= 0.999 && sb.b * sb.r <= 128);
});

const BASE = `class ConvBlock(nn.Module):
    """A conv block."""

    def __init__(self, in_ch=64, out_ch=128, drop=0.1):
        super().__init__()
        # two convolutions
        self.conv1 = nn.Conv2d(in_ch, out_ch, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm2d(out_ch)
        self.conv2 = nn.Conv2d(out_ch, out_ch, kernel_size=3, padding=1)
        self.bn2 = nn.BatchNorm2d(out_ch)
        self.act = nn.ReLU(inplace=True)
        self.drop = nn.Dropout(drop)
        self.proj = nn.Linear(out_ch, 256)

    def forward(self, x):
        """Run it."""
        y = self.act(self.bn1(self.conv1(x)))
        y = self.act(self.bn2(self.conv2(y)))
        y = self.drop(y)
        y = y.mean(dim=(2, 3))
        out = self.proj(y)
        if self.training:
            out = out + 0.01 * torch.randn_like(out)
        for blk in self.extra:
            out = blk(out)
        return out
`;

// comments, docstrings, blank lines and indentation width changed
const EXACT =
  BASE.replace(/ {4}/g, '  ')
    .replace(/ *"""[^"]*"""\n/g, '')
    .replace('# two convolutions', '# 2 convs!') + '\n# trailing\n';
// one statement added: near duplicate
const NEAR = BASE.replace('        y = self.drop(y)\n', '        y = self.drop(y)\n        y = y.contiguous()\n');
// every name the block binds renamed: structural duplicate
const RENAMED = BASE.replace(/ConvBlock/g, 'MyBlock')
  .replace(/\bin_ch\b/g, 'cin')
  .replace(/\bout_ch\b/g, 'cout')
  .replace(/\bdrop\b/g, 'p')
  .replace(/\bconv(\d)\b/g, 'c$1')
  .replace(/\bbn(\d)\b/g, 'norm$1')
  .replace(/\bact\b/g, 'relu')
  .replace(/\bproj\b/g, 'head')
  .replace(/\by\b/g, 'h')
  .replace(/\bout\b/g, 'z')
  .replace(/\bblk\b/g, 'layer')
  .replace(/\bx\b/g, 'inp');
// near-misses: a different layer width, as an exact-looking copy and as a renamed copy
const WIDTH = BASE.replace('nn.Linear(out_ch, 256)', 'nn.Linear(out_ch, 512)');
const WIDTH_RENAMED = RENAMED.replace('nn.Linear(cout, 256)', 'nn.Linear(cout, 512)');
const WIDTH_DEFAULT = BASE.replace('out_ch=128', 'out_ch=96');
// a genuinely different block of the same size
const OTHER = `class Attn(nn.Module):
    def __init__(self, dim=64, heads=8):
        super().__init__()
        self.qkv = nn.Linear(dim, dim * 3)
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        a = (q @ k.transpose(-2, -1)) * self.scale
        return self.out((a.softmax(-1) @ v).transpose(1, 2).reshape(B, N, C))
`;

test('similarity(): planted duplicates and near-misses', async () => {
  const base = await blockSignatures(BASE);
  const sim = (s: string) => similarity(base, computeSignature(s));
  assert.equal(sim(EXACT).duplicate, 'exact');
  const near = sim(NEAR);
  assert.equal(near.duplicate, 'near');
  assert.ok(near.near >= 0.9 && near.near < 1, String(near.near));
  const renamed = sim(RENAMED);
  assert.equal(renamed.duplicate, 'structural');
  assert.ok(renamed.near < 0.9, 'renaming changes the token shingles');
  assert.ok(renamed.structural >= 0.95);
  for (const miss of [WIDTH, WIDTH_RENAMED, WIDTH_DEFAULT]) {
    const s = sim(miss);
    assert.equal(s.duplicate, null);
    assert.equal(s.sameInts, false);
    assert.ok(Math.max(s.near, s.structural) > 0.9, 'only the width differs');
  }
  assert.equal(sim(OTHER).duplicate, null);
  assert.ok(sim(OTHER).structural < 0.5);
});

test('dedup clusters planted duplicates and keeps near-misses apart', async () => {
  const blocks: DedupInput[] = [
    { id: 'base', repo: 'r1', text: BASE },
    { id: 'exact', repo: 'r2', text: EXACT },
    { id: 'near', repo: 'r2', text: NEAR },
    { id: 'renamed', repo: 'r3', text: RENAMED },
    { id: 'width', repo: 'r1', text: WIDTH },
    { id: 'width-renamed', repo: 'r3', text: WIDTH_RENAMED },
    { id: 'width-default', repo: 'r3', text: WIDTH_DEFAULT },
    { id: 'other', repo: 'r1', text: OTHER },
    { id: 'other-copy', repo: 'r2', text: '# copy\n' + OTHER },
  ];
  const res = await dedup(blocks, { repoPriority: ['r2'] });
  const byRep = new Map(res.clusters.map((c) => [c.representative, c]));
  // base, exact, near, renamed form one cluster (structural: renaming is needed to connect it);
  // the representative comes from the preferred repository, then by id
  const main = res.clusters.find((c) => c.members.includes('base'))!;
  assert.deepEqual(main.members, ['base', 'exact', 'near', 'renamed']);
  assert.equal(main.kind, 'structural');
  assert.equal(main.representative, 'exact');
  const score = Object.fromEntries(main.scores!.map((x) => [x.id, x]));
  assert.equal(score.base.exact, true);
  assert.equal(score.exact.near, 1);
  assert.ok(score.near.near >= 0.9 && score.near.near < 1);
  assert.ok(score.renamed.structural >= 0.95 && score.renamed.near < 0.9);
  // the width variants are each on their own, although they match each other's renamings:
  // WIDTH and WIDTH_RENAMED have the same widths, so they are a structural pair
  const w = res.clusters.find((c) => c.members.includes('width'))!;
  assert.deepEqual(w.members, ['width', 'width-renamed']);
  assert.ok(!res.clusters.some((c) => c.members.includes('width-default')));
  assert.deepEqual(byRep.get('other-copy')?.members, ['other', 'other-copy']);
  assert.equal(byRep.get('other-copy')?.kind, 'exact');
  assert.equal(res.clusters.length, 3);
  assert.equal(res.uniqueCount, 9 - 3 - 1 - 1);
  assert.deepEqual(res.perRepo.r1, { total: 3, unique: 1, share: 1 / 4, uniqueRate: 1 / 3 });
  assert.equal(res.perRepo.r2.unique, 2);
  assert.equal(res.perRepo.r3.unique, 1);
  assert.equal(
    Object.values(res.perRepo).reduce((a, r) => a + r.unique, 0),
    res.uniqueCount,
  );
});

test('near and exact clusters get their kind', async () => {
  const res = await dedup([
    { id: 'a', repo: 'x', text: BASE },
    { id: 'b', repo: 'x', text: NEAR },
    { id: 'c', repo: 'x', text: EXACT },
  ]);
  assert.equal(res.clusters.length, 1);
  assert.equal(res.clusters[0].kind, 'near');
  const only = await dedup([
    { id: 'a', repo: 'x', text: BASE },
    { id: 'c', repo: 'x', text: EXACT },
  ]);
  assert.equal(only.clusters[0].kind, 'exact');
});

test('empty and unparseable blocks never collapse', async () => {
  const broken = 'class A(nn.Module):\n    def forward(self, x:\n        return x\n'; // unclosed bracket
  const syntaxError = 'class A(nn.Module):\n    def forward(self, x) return x\n        pass\n';
  const res = await dedup([
    { id: 'e1', repo: 'x', text: '' },
    { id: 'e2', repo: 'x', text: '# only a comment\n\n' },
    { id: 'e3', repo: 'x', text: '"""Only a docstring."""\n' },
    { id: 'u1', repo: 'x', text: broken },
    { id: 'u2', repo: 'x', text: broken },
    { id: 's1', repo: 'x', text: syntaxError },
    { id: 's2', repo: 'x', text: syntaxError },
    { id: 's3', repo: 'x', text: '# same\n' + syntaxError },
    { id: 'p1', repo: 'x', text: BASE, parseable: false },
    { id: 'p2', repo: 'x', text: BASE, parseable: false },
    { id: 'ok1', repo: 'x', text: OTHER },
    { id: 'ok2', repo: 'x', text: OTHER },
  ]);
  assert.deepEqual(
    res.clusters.map((c) => c.members),
    [['ok1', 'ok2']],
  );
  const reasons = Object.fromEntries(res.excluded.map((e) => [e.id, e.reason]));
  assert.equal(reasons.e1, 'empty');
  assert.equal(reasons.e2, 'empty');
  assert.equal(reasons.e3, 'empty');
  assert.match(reasons.u1, /unparseable: unclosed bracket/);
  assert.match(reasons.s1, /unparseable: syntax error/); // found by tree-sitter, not the tokenizer
  assert.match(reasons.s3, /unparseable: syntax error/);
  assert.equal(reasons.p1, 'unparseable');
  assert.equal(res.uniqueCount, 11);
  // with syntaxCheck 'lexical', the tokenizer-valid syntax errors do cluster
  const lex = await dedup(
    [
      { id: 's1', repo: 'x', text: syntaxError },
      { id: 's2', repo: 'x', text: syntaxError },
    ],
    { syntaxCheck: 'lexical' },
  );
  assert.equal(lex.clusters.length, 1);
  const rt = signatureFromRecord(
    JSON.parse(JSON.stringify(signatureToRecord(computeSignature(BASE))), (_k, v) =>
      v && v.type === 'Buffer' ? Buffer.from(v.data) : v,
    ),
  );
  assert.deepEqual(rt, computeSignature(BASE));
  const sig = await blockSignatures(syntaxError);
  assert.match(sig.error ?? '', /syntax error at line \d/);
  assert.equal(sig.nearSig, null);
});

test('jaccardAtLeast answers jaccard(a, b) >= t, at and around the threshold', () => {
  const r = rng(11);
  const set = (xs: number[]) => Uint32Array.from(new Set(xs)).sort();
  let checked = 0,
    passed = 0;
  for (let trial = 0; trial < 3000; trial++) {
    const size = 1 + Math.floor(r() * 300);
    const common = Array.from({ length: Math.floor(size * (0.7 + 0.3 * r())) }, () => (r() * 2 ** 32) >>> 0);
    const extra = () => Array.from({ length: Math.floor(r() * size * 0.2) }, () => (r() * 2 ** 32) >>> 0);
    const a = set([...common, ...extra()]),
      b = set([...common, ...extra()]);
    const j = jaccard(a, b);
    // the dedup thresholds, random ones, and the pair's own Jaccard (the boundary itself)
    for (const t of [0.9, 0.95, r(), j, j + 1e-12, 0, 1]) {
      assert.equal(jaccardAtLeast(a, b, t), j >= t, `|a| ${a.length}, |b| ${b.length}, J ${j}, t ${t}`);
      checked++;
      if (j >= t) passed++;
      if (!a.length || !b.length) continue;
      const need = leastIntersection(a.length, b.length, t);
      const inter = Math.round((j * (a.length + b.length)) / (1 + j));
      assert.equal(inter >= need, j >= t);
    }
    // views into larger arrays answer as the sets themselves
    const big = new Uint32Array(a.length + 7);
    big.set(a, 3);
    assert.equal(jaccardIn(big, 3, a.length, b, 0, b.length), j);
  }
  assert.equal(jaccardAtLeast(new Uint32Array(0), Uint32Array.from([1]), 0.5), false);
  assert.ok(passed > 1000 && checked - passed > 1000, `both answers exercised (${passed} of ${checked})`);
});

test('worker threads: texts with non-ASCII characters and many chunks give the in-thread clusters', async () => {
  // several chunks per thread; two-byte characters in strings and comments travel to the
  // signature threads and are tokenized as in this thread
  const { blocks } = generateBlocks(12000, 5);
  const accented = blocks.map((b, i) =>
    i % 3 === 0 ? { ...b, text: `# copié ${'é'.repeat(i % 7)} — ünïcode\n${b.text}` } : b,
  );
  const res = await dedup(accented, { threads: 2, syntaxCheck: 'lexical' });
  const single = await dedup(accented, { threads: 0, syntaxCheck: 'lexical' });
  assert.deepEqual(res.clusters, single.clusters);
  assert.deepEqual(res.excluded, single.excluded);
  assert.ok(res.clusters.length > 100);
});

test('packed signatures (sets written in place, one buffer per chunk) equal each block signed alone', () => {
  const { blocks } = generateBlocks(600, 11);
  const texts = blocks.map((b, i) => (i % 5 === 0 ? `# déjà vu ${i}\n${b.text}` : b.text));
  // a lexical error, a block that is only a docstring (empty), a valid one
  texts.push('x = (1,\n', '"""\n  only a docstring\n"""\n', 'class Z(nn.Module):\n    pass\n');
  const p = packSignatures(texts);
  assert.equal(p.count, texts.length);
  let valid = 0;
  texts.forEach((text, i) => {
    const s = computeSignature(text);
    assert.equal(p.exact[i], s.exact, `exact of ${i}`);
    assert.equal(p.errors[i], s.error, `error of ${i}`);
    assert.equal(p.meta[i * 3 + 1], s.ints, `ints of ${i}`);
    assert.equal(p.meta[i * 3 + 2], s.tokens, `tokens of ${i}`);
    assert.deepEqual(p.nearSets.subarray(p.nearOff[i], p.nearOff[i + 1]), s.nearShingles, `near set of ${i}`);
    assert.deepEqual(p.structSets.subarray(p.structOff[i], p.structOff[i + 1]), s.structuralShingles);
    if (!s.nearSig) return;
    valid++;
    const K = MINHASH_K;
    assert.deepEqual(p.sigs.subarray(i * 2 * K, i * 2 * K + K), s.nearSig, `near signature of ${i}`);
    assert.deepEqual(p.sigs.subarray(i * 2 * K + K, (i + 1) * 2 * K), s.structuralSig);
  });
  assert.equal(valid, texts.length - 2);
});

test("every cluster member's scores are the exact Jaccard of its sets with the representative's", async () => {
  const { blocks } = generateBlocks(3000, 5);
  const res = await dedup(blocks, { threads: 0, syntaxCheck: 'lexical' });
  const text = new Map(blocks.map((b) => [b.id, b.text]));
  const round = (v: number) => Math.round(v * 10000) / 10000;
  let checked = 0;
  for (const c of res.clusters.slice(0, 60)) {
    const rep = computeSignature(text.get(c.representative)!);
    for (const s of c.scores ?? []) {
      const m = computeSignature(text.get(s.id)!);
      assert.equal(s.near, round(jaccard(m.nearShingles, rep.nearShingles)), `near of ${s.id}`);
      assert.equal(s.structural, round(jaccard(m.structuralShingles, rep.structuralShingles)), `structural of ${s.id}`);
      checked++;
    }
  }
  assert.ok(checked > 120);
  assert.ok(res.clusters.some((c) => c.scores?.some((s) => s.near < 1 && s.near > 0)));
});

test('worker threads: planted relations in generated blocks, same result as in-thread', async () => {
  const { blocks, same, different } = generateBlocks(2500, 42);
  const res = await dedup(blocks, { threads: 2, syntaxCheck: 'lexical' });
  const single = await dedup(blocks, { threads: 0, syntaxCheck: 'lexical' });
  assert.deepEqual(res.clusters, single.clusters);
  const clusterOf = new Map<string, number>();
  res.clusters.forEach((c, i) => {
    for (const m of c.members) clusterOf.set(m, i);
  });
  const together = (a: string, b: string) => clusterOf.has(a) && clusterOf.get(a) === clusterOf.get(b);
  assert.ok(same.length > 500);
  assert.equal(same.filter(([a, b]) => together(a, b)).length, same.length);
  assert.equal(different.filter(([a, b]) => together(a, b)).length, 0);
  assert.equal(res.uniqueCount, blocks.length - res.clusters.reduce((a, c) => a + c.members.length - 1, 0));
});

const TIMM = TIMM_CHECKOUT;
test('tokenizer agrees with CPython tokenize on every file of a real timm checkout', {
  skip: !(TIMM && existsSync(TIMM)) && 'no timm checkout (set NNRAG_TEST_TIMM)',
}, () => {
  const files = execFileSync('find', [TIMM, '-name', '*.py'], { encoding: 'utf8' }).trim().split('\n').sort();
  const ours: Record<string, string[]> = {};
  for (const f of files) ours[f] = ourTokens(readFileSync(f, 'utf8'));
  const py = [
    'import sys, io, json, tokenize',
    'ours = json.load(sys.stdin)',
    'bad = []',
    'for f, toks in ours.items():',
    '    out = []',
    '    for t in tokenize.generate_tokens(io.StringIO(open(f, encoding="utf8").read()).readline):',
    '        n = tokenize.tok_name[t.type]',
    '        if n in ("COMMENT", "NL", "ENDMARKER"): continue',
    '        out.append(n if n in ("NEWLINE", "INDENT", "DEDENT") else n + ":" + t.string)',
    '    if out != toks: bad.append(f)',
    'print(json.dumps(bad))',
  ].join('\n');
  const bad = JSON.parse(
    execFileSync('python3', ['-c', py], { input: JSON.stringify(ours), encoding: 'utf8', maxBuffer: 1 << 28 }),
  );
  assert.ok(files.length > 100);
  assert.deepEqual(bad, []);
});

test('SimilarityIndex finds the planted relatives of a block', () => {
  const idx = new SimilarityIndex();
  const texts: Record<string, string> = {
    base: BASE,
    exact: EXACT,
    near: NEAR,
    renamed: RENAMED,
    width: WIDTH,
    other: OTHER,
  };
  for (const [id, t] of Object.entries(texts)) idx.add(id, computeSignature(t));
  assert.equal(idx.size, 6);
  const hits = idx.query(computeSignature(BASE), { excludeId: 'base', minScore: 0.8 });
  assert.deepEqual(hits.map((h) => h.id).sort(), ['exact', 'near', 'renamed', 'width']);
  assert.equal(hits[0].id, 'exact');
  assert.equal(hits[0].exact, true);
  assert.equal(hits.find((h) => h.id === 'width')!.sameInts, false);
  const all = idx.query(computeSignature(BASE), { exhaustive: true, k: 100 });
  assert.equal(all.length, 6);
  assert.equal(all[all.length - 1].id, 'other');
  assert.throws(() => idx.add('base', computeSignature(BASE)));
});

test('structural view: bound names abstracted, API names, keywords and widths kept', () => {
  const view = (src: string) => {
    const t = tokenize(src);
    const keep = new Uint8Array(t.n);
    docstringMask(t, keep);
    const out = new Uint32Array(t.n);
    return Array.from(out.subarray(0, structuralHashes(t, keep, out)));
  };
  const a =
    'import torch.nn as nn\nclass A(nn.Module):\n    def __init__(self, dim=64):\n        self.fc = nn.Linear(dim, 64, bias=False)\n    def forward(self, x):\n        return self.fc(x).relu()\n';
  // renaming the class, parameters, attributes and locals changes nothing
  const renamed = a
    .replace(/\bA\b/, 'B')
    .replace(/\bdim\b/g, 'd')
    .replace(/\bfc\b/g, 'proj')
    .replace(/\bx\b/g, 'inp');
  assert.deepEqual(view(renamed), view(a));
  // but API names, import aliases, keyword-argument names and integer literals are kept
  for (const changed of [
    a.replace('nn.Linear', 'nn.Bilinear'),
    a.replace('import torch.nn as nn', 'import torch.nn as tnn').replace(/nn\./g, 'tnn.'),
    a.replace('bias=False', 'bias_=False'),
    a.replace('dim, 64', 'dim, 128'),
    a.replace('.relu()', '.gelu()'),
  ]) {
    assert.notDeepEqual(view(changed), view(a));
  }
  // strings and floats are abstracted
  assert.deepEqual(view('x = "a" + 0.5\n'), view('y = "bcd" + 2.5e-3\n'));
});

test('many blocks that differ only in widths are compared quickly and never merged', async () => {
  const blocks: DedupInput[] = [];
  for (let i = 0; i < 3000; i++) {
    blocks.push({
      id: `w${i}`,
      repo: 'cfg',
      text: `class Cfg(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(${16 + i}, ${32 + i})\n        self.act = nn.ReLU()\n\n    def forward(self, x):\n        return self.act(self.fc(x))\n`,
    });
  }
  const t0 = performance.now();
  const res = await dedup(blocks, { threads: 0, syntaxCheck: 'lexical' });
  assert.equal(res.clusters.length, 0);
  assert.equal(res.uniqueCount, 3000);
  assert.ok(performance.now() - t0 < 30_000);
});

test("the representative: the preferred repository's block, then by repository name, then by id, in any input order", async () => {
  // copies of three texts in blocks of six repositories, two of them preferred; the blocks
  // in id order (positions compared) and shuffled (ids compared)
  const r = rng(3);
  const texts = [BASE, OTHER, WIDTH];
  const repos = ['r0', 'r1', 'r2', 'r3', 'r4', 'r5'];
  const prio = ['r3', 'r1'];
  const sorted: DedupInput[] = Array.from({ length: 90 }, (_, i) => ({
    id: `b${String(Math.floor(r() * 1e6)).padStart(6, '0')}.${i}`,
    repo: repos[Math.floor(r() * repos.length)],
    text: texts[i % 3],
  })).sort((a, b) => (a.id < b.id ? -1 : 1));
  const want = (members: string[], blocks: DedupInput[]) => {
    const of = new Map(blocks.map((b) => [b.id, b]));
    const key = (id: string) => {
      const p = prio.indexOf(of.get(id)!.repo);
      return [p < 0 ? Infinity : p, of.get(id)!.repo, id] as const;
    };
    return [...members].sort((a, b) => {
      const [pa, ra, ia] = key(a),
        [pb, rb, ib] = key(b);
      return pa !== pb ? pa - pb : ra !== rb ? (ra < rb ? -1 : 1) : ia < ib ? -1 : 1;
    })[0];
  };
  const shuffled = [...sorted].sort(() => r() - 0.5);
  for (const blocks of [sorted, shuffled]) {
    const res = await dedup(blocks, { threads: 0, syntaxCheck: 'lexical', repoPriority: prio });
    assert.equal(res.clusters.length, 3);
    for (const c of res.clusters) assert.equal(c.representative, want(c.members, blocks));
    // memberOf: each block's cluster
    blocks.forEach((b, i) => {
      assert.ok(res.clusters[res.memberOf[i]].members.includes(b.id));
    });
  }
  // without a priority list: by repository name, then id
  const res = await dedup(shuffled, { threads: 0, syntaxCheck: 'lexical' });
  const of = new Map(shuffled.map((b) => [b.id, b]));
  for (const c of res.clusters) {
    const best = [...c.members].sort((a, b) =>
      of.get(a)!.repo !== of.get(b)!.repo ? (of.get(a)!.repo < of.get(b)!.repo ? -1 : 1) : a < b ? -1 : 1,
    )[0];
    assert.equal(c.representative, best);
  }
});

test('the set probe (report scores) counts the value 0 and every other value as a merge does', () => {
  const r = rng(5);
  const probe = new SetProbe();
  for (let trial = 0; trial < 300; trial++) {
    const pick = () => {
      const s = new Set<number>();
      const n = 1 + Math.floor(r() * 900);
      // small values too: they share slots (the low bits index the table)
      while (s.size < n) s.add(r() < 0.3 ? Math.floor(r() * 64) * 1024 : Math.floor(r() * 2 ** 32));
      if (trial % 3 === 0) s.add(0);
      return Uint32Array.from(s).sort();
    };
    const a = pick();
    const b = trial % 2 ? pick() : Uint32Array.from(new Set([...a.slice(0, a.length >> 1), 0, 7 * 1024])).sort();
    const col = { arr: [a, b], off: Uint32Array.of(0, 0), len: Uint32Array.of(a.length, b.length) };
    probe.load(col, 0);
    assert.equal(probe.jaccard(col, 1), jaccard(a, b), `trial ${trial}`);
  }
});
