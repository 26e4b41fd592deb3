// dedup() on libraries of many copies (forks, vendored code): the clusters equal those of
// exhaustive LSH banding (every candidate pair of every band verified, the algorithm dedup
// used before buckets were bounded), written out here independently from the public
// signatures, both below the bounded-bucket size (every pair verified) and above it (big
// buckets verified against witnesses).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bandKey, chooseBands, jaccard, jaccardAtLeastIn, leastIntersection, mix32 } from '../../src/util/minhash.js';
import {
  computeSignature,
  dedup,
  lshPairs,
  columnBandKeys,
  rangesReach,
  rangeBound,
  radixOrder,
  EXHAUSTIVE_BUCKET,
  MINHASH_K,
  NEAR_THRESHOLD,
  STRUCTURAL_THRESHOLD,
  type BlockSignature,
  type DedupInput,
} from '../../src/library/dedup.js';
import { rng } from '../../bench/dedup.js';

const SOURCES: { name: string; text: string }[] = [
  {
    name: 'Mlp',
    text: `import torch
from torch import nn


class Mlp(nn.Module):
    """Two linear layers with an activation between them."""

    def __init__(self, in_features, hidden_features=None, out_features=None, drop=0.0):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden_features, out_features)
        self.drop = nn.Dropout(drop)
        self.scale = 4

    def forward(self, x):
        x = self.fc1(x)
        x = self.act(x)
        x = self.drop(x)
        x = self.fc2(x)
        x = self.drop(x)
        return x
`,
  },
  {
    // small: renamed copies of it are below the near threshold to each other (the class
    // name is a large share of its shingles), structural duplicates of it all the same
    name: 'Scale',
    text: `import torch
from torch import nn


class Scale(nn.Module):
    def __init__(self, dim, init=1):
        super(Scale, self).__init__()
        self.weight = nn.Parameter(torch.ones(dim) * init)

    def forward(self, x):
        return x * self.weight
`,
  },
  {
    name: 'Attention',
    text: `import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim, num_heads=8, qkv_bias=False, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x
`,
  },
  {
    name: 'ConvBnAct',
    text: `import torch
from torch import nn


class ConvBnAct(nn.Module):
    def __init__(self, c1, c2, k=3, s=1, p=1, g=1):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, p, groups=g, bias=False)
        self.bn = nn.BatchNorm2d(c2)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))
`,
  },
];

/** Copy i: source i mod 4 with its class renamed, and for some copies an integer literal
 *  changed, a statement or a comment added (as bench/scale.ts edits real blocks). */
function library(copies: number): DedupInput[] {
  const out: DedupInput[] = [];
  for (let i = 0; i < copies * SOURCES.length; i++) {
    const s = SOURCES[i % SOURCES.length];
    const r = rng(i * 2654435761 + 1);
    let text = s.text.replace(new RegExp(`\\b${s.name}\\b`, 'g'), `${s.name}_c${i}`);
    const u = r();
    if (u < 0.25) {
      let seen = 0;
      const target = Math.floor(r() * 6);
      text = text.replace(/\b(\d{1,4})\b/g, (m) => (seen++ === target ? String(Number(m) * 2 + 1) : m));
    } else if (u < 0.45) {
      text = text.replace(/\n(\s+)return /, (m, ind: string) => `\n${ind}_ = None${m}`);
    } else if (u < 0.6) {
      text = `# vendored copy ${i}\n${text}`;
    }
    out.push({ id: `r${i % 13}:m${i}.${s.name}_c${i}`, repo: `r${i % 13}`, text, parseable: true });
  }
  return out;
}

class UF {
  p: Int32Array;
  constructor(n: number) {
    this.p = Int32Array.from({ length: n }, (_, i) => i);
  }
  find(x: number): number {
    while (this.p[x] !== x) x = this.p[x] = this.p[this.p[x]];
    return x;
  }
  union(a: number, b: number): void {
    const ra = this.find(a);
    const rb = this.find(b);
    if (ra !== rb) this.p[Math.max(ra, rb)] = Math.min(ra, rb);
  }
}

/** Exhaustive banding: every pair of blocks that share a band key (mixed with the integer
 *  literals) in some band is verified by exact Jaccard; clusters are the connected
 *  components, of kind exact / near / structural as dedup defines them. */
function reference(blocks: DedupInput[]): string[] {
  const sigs: BlockSignature[] = blocks.map((b) => computeSignature(b.text));
  const n = blocks.length;
  const nearUF = new UF(n);
  const allUF = new UF(n);
  const pass = (
    sig: (s: BlockSignature) => Uint32Array,
    set: (s: BlockSignature) => Uint32Array,
    thr: number,
    uf: UF,
    onLink: (a: number, b: number) => void,
  ) => {
    const bands = chooseBands(MINHASH_K, thr);
    for (let band = 0; band < bands.b; band++) {
      const buckets = new Map<number, number[]>();
      for (let i = 0; i < n; i++) {
        const k = mix32(bandKey(sig(sigs[i]), band, bands.r) ^ sigs[i].ints);
        const m = buckets.get(k);
        if (m) m.push(i);
        else buckets.set(k, [i]);
      }
      for (const m of buckets.values())
        for (let x = 0; x < m.length; x++)
          for (let y = x + 1; y < m.length; y++) {
            const a = sigs[m[x]];
            const b = sigs[m[y]];
            // a pair already connected cannot change the components
            if (uf.find(m[x]) === uf.find(m[y])) continue;
            if (a.ints === b.ints && jaccard(set(a), set(b)) >= thr) onLink(m[x], m[y]);
          }
    }
  };
  const firstOf = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const f = firstOf.get(sigs[i].exact);
    if (f === undefined) firstOf.set(sigs[i].exact, i);
    else {
      nearUF.union(f, i);
      allUF.union(f, i);
    }
  }
  pass(
    (s) => s.nearSig!,
    (s) => s.nearShingles,
    NEAR_THRESHOLD,
    nearUF,
    (a, b) => {
      nearUF.union(a, b);
      allUF.union(a, b);
    },
  );
  pass(
    (s) => s.structuralSig!,
    (s) => s.structuralShingles,
    STRUCTURAL_THRESHOLD,
    allUF,
    (a, b) => allUF.union(a, b),
  );
  const comps = new Map<number, number[]>();
  for (let i = 0; i < n; i++) {
    const c = comps.get(allUF.find(i));
    if (c) c.push(i);
    else comps.set(allUF.find(i), [i]);
  }
  return [...comps.values()]
    .filter((m) => m.length > 1)
    .map((m) => {
      const kind = m.every((i) => sigs[i].exact === sigs[m[0]].exact)
        ? 'exact'
        : m.every((i) => nearUF.find(i) === nearUF.find(m[0]))
          ? 'near'
          : 'structural';
      return `${kind} ${m
        .map((i) => blocks[i].id)
        .sort()
        .join(' ')}`;
    })
    .sort();
}

const asText = (clusters: { kind: string; members: string[] }[]) =>
  clusters.map((c) => `${c.kind} ${[...c.members].sort().join(' ')}`).sort();

test('copies below the bounded-bucket size: every pair verified, clusters equal exhaustive banding', async () => {
  const blocks = library(Math.floor(EXHAUSTIVE_BUCKET / 2));
  const res = await dedup(blocks, { threads: 0 });
  assert.equal(res.boundedBuckets, 0);
  const ref = reference(blocks);
  // the library is not trivial: several clusters, of more than one kind, and singletons
  assert.ok(ref.length > 4, `${ref.length} clusters`);
  assert.ok(new Set(ref.map((c) => c.split(' ')[0])).size > 1);
  assert.deepEqual(asText(res.clusters), ref);
});

test('thousands of copies of a block: buckets bounded, clusters still equal exhaustive banding', async () => {
  const blocks = library(700);
  const res = await dedup(blocks, { threads: 0 });
  assert.ok(res.boundedBuckets > 0, 'the bounded path was taken');
  assert.ok(res.largestBoundedBucket > EXHAUSTIVE_BUCKET);
  assert.deepEqual(asText(res.clusters), reference(blocks));
});

test('LSH hands no candidate pair over twice: a pair settled in an earlier band is not proposed again', () => {
  // 2,800 renamed copies: buckets of hundreds of copies of one block (bounded, verified
  // against witnesses) in most of the 16 bands, with the same witnesses band after band
  const blocks = library(700);
  const sigs = blocks.map((b) => computeSignature(b.text));
  const n = sigs.length;
  const nodes = Int32Array.from({ length: n }, (_, i) => i);
  const column = {
    arr: sigs.map((s) => s.nearSig!),
    off: new Uint32Array(n),
    len: new Uint32Array(n).fill(MINHASH_K),
  };
  const ints = Uint32Array.from(sigs, (s) => s.ints);
  const uf = new UF(n);
  const handed = new Set<number>();
  let twice = 0;
  let verified = 0;
  const stats = { bounded: 0, largest: 0 };
  const bands = chooseBands(MINHASH_K, NEAR_THRESHOLD);
  lshPairs(
    nodes,
    columnBandKeys(column, bands),
    ints,
    bands,
    (i) => uf.find(i),
    (x, y) => {
      const key = Math.min(x, y) * n + Math.max(x, y);
      if (handed.has(key)) twice++;
      handed.add(key);
      if (ints[x] !== ints[y] || uf.find(x) === uf.find(y)) return;
      verified++;
      if (jaccard(sigs[x].nearShingles, sigs[y].nearShingles) >= NEAR_THRESHOLD) uf.union(x, y);
    },
    stats,
  );
  assert.ok(stats.bounded > 0 && stats.largest > EXHAUSTIVE_BUCKET, 'bounded buckets were met');
  assert.ok(verified > n, `${verified} pairs verified`);
  assert.equal(twice, 0);
});

test('verification range by range (rangesReach) answers as the whole merge does', () => {
  // sets like renamed copies' (a shared core, tens of own elements each), near and far from
  // the threshold: the range-by-range merge with slack ub − need answers exactly as
  // jaccardAtLeastIn, and the range bound never refuses a pair that reaches the threshold
  const r = rng(7);
  const u32 = () => Math.floor(r() * 2 ** 32) >>> 0;
  const counts = (s: Uint32Array) => {
    const c = new Uint8Array(64);
    for (const v of s) c[v >>> 26]++;
    return c;
  };
  let reached = 0,
    refused = 0;
  for (let trial = 0; trial < 4000; trial++) {
    const core = Array.from({ length: 1 + Math.floor(r() * 600) }, u32);
    const own = () => Array.from({ length: Math.floor(r() * 80) }, u32);
    const a = Uint32Array.from(new Set([...core.slice(Math.floor(r() * 3)), ...own()])).sort();
    const b = Uint32Array.from(new Set([...core.slice(0, core.length - Math.floor(r() * 3)), ...own()])).sort();
    if (!a.length || !b.length) continue;
    const t = [0.9, 0.95, 0.5, 0.99][trial % 4];
    const whole = jaccardAtLeastIn(a, 0, a.length, b, 0, b.length, t);
    const need = leastIntersection(a.length, b.length, t);
    const c = counts(a),
      d = counts(b);
    let ub = 0;
    for (let k = 0; k < 64; k++) ub += Math.min(c[k], d[k]);
    if (need > Math.min(a.length, b.length) || ub < need) {
      assert.equal(whole, false);
      continue;
    }
    const ranges = rangesReach(a, 0, c, 0, b, 0, d, 0, ub - need);
    assert.equal(ranges, whole, `trial ${trial}: |a| ${a.length}, |b| ${b.length}, t ${t}`);
    assert.equal(whole, jaccard(a, b) >= t);
    if (whole) reached++;
    else refused++;
  }
  assert.ok(reached > 100 && refused > 100, `${reached} reached, ${refused} refused`);
});

test('the range bound of byte counts four to a word (rangeBound) is the sum of the minimums', () => {
  // counts from 0 to 127 (narrowCounts keeps no more), the extremes in every lane
  const r = rng(11);
  const words = new Uint32Array(2 * 16);
  const bytes = new Uint8Array(words.buffer);
  for (let trial = 0; trial < 5000; trial++) {
    for (let k = 0; k < 128; k++) {
      const x = r();
      bytes[k] = trial % 5 === 0 ? (x < 0.5 ? 0 : 127) : trial % 5 === 1 ? Math.floor(x * 128) : Math.floor(x * 20);
    }
    let want = 0;
    for (let k = 0; k < 64; k++) want += Math.min(bytes[k], bytes[64 + k]);
    assert.equal(rangeBound(words, 0, 16), want, `trial ${trial}`);
  }
});

test('a set with a range of more than 127 values is verified without the range bound, and clusters as before', async () => {
  // two large blocks (thousands of shingles: ~140 a range) that differ in a few lines, and
  // a third that differs in many: the first two are near duplicates, the third is not
  const lines = (n: number, renamed: (i: number) => boolean) =>
    Array.from(
      { length: n },
      (_, i) => `        self.w${i} = x.mean(dim=${i % 7}) + ${renamed(i) ? 'q' : 'v'}${i} * ${i}`,
    );
  const block = (rename: (i: number) => boolean) =>
    `import torch\n\n\nclass Big(torch.nn.Module):\n    def forward(self, x):\n${lines(1600, rename).join('\n')}\n        return x\n`;
  const blocks: DedupInput[] = [
    { id: 'a', repo: 'r', text: block(() => false) },
    { id: 'b', repo: 'r', text: block((i) => i % 97 === 3) },
    { id: 'c', repo: 'r', text: block((i) => i % 4 === 1) },
  ];
  const sig = blocks.map((b) => computeSignature(b.text));
  const maxRange = (s: Uint32Array) => {
    const c = new Array(64).fill(0);
    for (const v of s) c[v >>> 26]++;
    return Math.max(...c);
  };
  assert.ok(maxRange(sig[0].nearShingles) > 127, 'a range of more than 127 values');
  assert.ok(jaccard(sig[0].nearShingles, sig[1].nearShingles) >= NEAR_THRESHOLD);
  assert.ok(jaccard(sig[0].nearShingles, sig[2].nearShingles) < NEAR_THRESHOLD);
  const res = await dedup(blocks, { threads: 0, syntaxCheck: 'lexical' });
  assert.deepEqual(
    res.clusters.map((c) => [c.kind, c.members]),
    [['near', ['a', 'b']]],
  );
});

test('LSH buckets: positions sorted by key then position (radixOrder), as the sort of key · 2^21 + position', () => {
  const r = rng(13);
  const count = new Uint32Array((1 << 16) + 1);
  for (const [n, spread] of [
    [1, 2 ** 32],
    [5000, 2 ** 32],
    [5000, 40],
    [70000, 2 ** 20],
    [3000, 2 ** 17],
  ]) {
    // keys spread over the whole range, or few (many equal keys: buckets), or in the high
    // half only; keys of a band are uint32
    const key = Uint32Array.from(
      { length: n },
      () => (Math.floor(r() * spread) * (spread < 2 ** 32 ? 65599 : 1)) >>> 0,
    );
    const pos = new Int32Array(n);
    radixOrder(key, n, pos, new Int32Array(n), count);
    const packed = Float64Array.from({ length: n }, (_, p) => key[p] * 2 ** 21 + p).sort();
    assert.deepEqual(
      Array.from(pos),
      Array.from(packed, (v) => v % 2 ** 21),
    );
  }
});
