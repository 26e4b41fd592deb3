// Search benchmark: 10,000 synthetic library blocks (class names, docstrings, layers,
// parameters, identifiers drawn from a neural-network vocabulary) stored as extractions of
// a fresh store, synced into the FTS5 index, then timed queries (p50 / p95 / max ms per
// query, after one warm-up pass): free text, prefixes, camelCase names, filters, empty
// results. Also times `similar` over the same 10,000 blocks' stored MinHash signatures.
//   node dist/bench/search.js [N]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { IndexStore } from '../src/store/store.js';
import { extractionIds, putExtraction, textHash } from '../src/store/records.js';
import { emptyRecord } from '../src/records/block.js';
import { searchBlocks, syncSearchIndex, type SearchOptions } from '../src/search/fts.js';
import { similarBlocks, syncSignatures } from '../src/search/similar.js';

const N = Number(process.argv[2] ?? 10_000);

// deterministic PRNG (mulberry32)
let seed = 0x9e3779b9;
const rnd = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const pick = <T>(a: readonly T[]): T => a[Math.floor(rnd() * a.length)];

const PREFIX = [
  'Window',
  'Multi',
  'Head',
  'Cross',
  'Local',
  'Global',
  'Depthwise',
  'Inverted',
  'Residual',
  'Squeeze',
  'Excite',
  'Gated',
  'Linear',
  'Swin',
  'Patch',
  'Token',
  'Channel',
  'Spatial',
  'Mixer',
  'Conv',
  'Group',
  'Pyramid',
  'Dense',
  'Sparse',
  'Relative',
  'Rotary',
  'Shifted',
  'Dilated',
  'Efficient',
  'Mobile',
];
const SUFFIX = [
  'Attention',
  'Block',
  'Mlp',
  'Conv2d',
  'Norm',
  'Pool',
  'Embed',
  'Layer',
  'Stage',
  'Head',
  'Bottleneck',
  'Unit',
  'Module',
  'Encoder',
  'Decoder',
  'Gate',
  'Proj',
  'Stem',
];
const WORDS =
  'tokens attend within windows channels spatial features projection residual shortcut normalization dropout activation kernel stride padding heads embedding positional relative bias scale softmax pooling average maximum depthwise pointwise expansion ratio hidden dimension sequence patch image resolution stage downsample upsample gating squeeze excitation mixing transformer convolution layer block output input'.split(
    ' ',
  );
const LAYERS = [
  'Linear',
  'Conv2d',
  'BatchNorm2d',
  'LayerNorm',
  'GELU',
  'ReLU',
  'Dropout',
  'AvgPool2d',
  'MaxPool2d',
  'Softmax',
  'Identity',
  'GroupNorm',
  'Embedding',
  'MultiheadAttention',
];
const PARAMS = [
  'dim',
  'num_heads',
  'window_size',
  'qkv_bias',
  'mlp_ratio',
  'drop_path',
  'in_chs',
  'out_chs',
  'kernel_size',
  'stride',
  'act_layer',
  'norm_layer',
  'expansion',
  'groups',
  'dilation',
  'eps',
];

function moduleText(i: number, name: string): string {
  const layers = Array.from({ length: 2 + Math.floor(rnd() * 5) }, () => pick(LAYERS));
  const params = [...new Set(Array.from({ length: 2 + Math.floor(rnd() * 4) }, () => pick(PARAMS)))];
  const doc = Array.from({ length: 8 + Math.floor(rnd() * 12) }, () => pick(WORDS)).join(' ');
  return [
    `# ${name}: synthetic block ${i}`,
    'import torch',
    'import torch.nn as nn',
    '',
    '',
    `class ${name}(nn.Module):`,
    `    """${doc[0].toUpperCase()}${doc.slice(1)}."""`,
    '',
    `    def __init__(self, ${params.map((p, j) => `${p}=${j + 2}`).join(', ')}):`,
    '        super().__init__()',
    ...layers.map((l, j) => `        self.${pick(WORDS)}_${j} = nn.${l}(${(i * 7 + j) % 97}, ${(i * 13 + j) % 89})`),
    '',
    '    def forward(self, x):',
    ...layers.map((_, j) => `        x = self.${'layer'}_${j}(x) + ${j}`),
    '        return x',
    '',
  ].join('\n');
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

const dir = mkdtempSync(path.join(tmpdir(), 'nnrag-bench-search-'));
try {
  const store = IndexStore.open(dir);
  let t = performance.now();
  store.write(() => {
    for (let i = 0; i < N; i++) {
      const name = `${pick(PREFIX)}${pick(SUFFIX)}${i % 7 === 0 ? 'V2' : ''}`;
      const id = `repo${i % 5}.models.m${i % 200}.${name}${i}`;
      const text = moduleText(i, `${name}${i}`);
      const status = rnd() < 0.8 ? 'validated' : 'failed';
      putExtraction(store, {
        id,
        hash: textHash(text),
        ok: status === 'validated',
        status,
        lines: text.split('\n').length,
        record: {
          ...emptyRecord(id),
          externs: ['torch'],
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
            category: null,
            error: null,
            args: null,
            input_shapes: null,
            output_shapes: null,
            params: Math.floor(rnd() * 5e6),
            envId: 'bench',
          },
        },
        text,
      });
    }
  });
  console.log(`stored ${N} synthetic extractions in ${(performance.now() - t).toFixed(0)} ms`);
  t = performance.now();
  const r = syncSearchIndex(store);
  console.log(`index sync (full): ${r.added} documents in ${(performance.now() - t).toFixed(0)} ms`);
  t = performance.now();
  const again = syncSearchIndex(store);
  console.log(`index sync (nothing changed): ${again.unchanged} unchanged in ${(performance.now() - t).toFixed(1)} ms`);

  const queries: [string, SearchOptions][] = [];
  for (let i = 0; i < 40; i++) queries.push([`${pick(PREFIX).toLowerCase()} ${pick(SUFFIX).toLowerCase()}`, {}]);
  for (let i = 0; i < 20; i++) queries.push([`${pick(PREFIX)}${pick(SUFFIX)}`, {}]);
  for (let i = 0; i < 20; i++) queries.push([`${pick(WORDS)} ${pick(WORDS).slice(0, 4)}`, {}]);
  for (let i = 0; i < 20; i++) queries.push([pick(WORDS), { validated: true, minParams: 1000, maxParams: 2e6 }]);
  for (let i = 0; i < 10; i++) queries.push([`${pick(LAYERS)}`, { repo: 'repo1', category: 'attention' }]);
  queries.push(
    ['zzznothing', {}],
    ['attention', {}],
    ['block', {}],
    ['window attention', {}],
    ['"; DROP TABLE x; --', {}],
  );
  for (const [q, f] of queries) searchBlocks(store, q, f); // warm-up: prepared statements, page cache
  const times: number[] = [];
  const cpu: number[] = [];
  let hits = 0;
  for (let rep = 0; rep < 3; rep++) {
    for (const [q, f] of queries) {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      const res = searchBlocks(store, q, { ...f, limit: 20 });
      times.push(performance.now() - t0);
      const c = process.cpuUsage(c0);
      cpu.push((c.user + c.system) / 1000);
      hits += res.hits.length;
    }
  }
  // wall time depends on the machine's load; CPU time is this process's own work
  console.log(
    `search: ${times.length} queries over ${N} blocks (load average ${(await import('node:os')).loadavg()[0].toFixed(1)}):`,
  );
  console.log(
    `  wall p50 ${pct(times, 50).toFixed(2)} ms, p95 ${pct(times, 95).toFixed(2)} ms, max ${Math.max(...times).toFixed(2)} ms`,
  );
  console.log(
    `  cpu  p50 ${pct(cpu, 50).toFixed(2)} ms, p95 ${pct(cpu, 95).toFixed(2)} ms, max ${Math.max(...cpu).toFixed(2)} ms (${(hits / times.length).toFixed(1)} hits/query)`,
  );
  const worst = queries
    .map(([q, f]) => {
      const t0 = performance.now();
      searchBlocks(store, q, f);
      return [performance.now() - t0, q] as const;
    })
    .sort((a, b) => b[0] - a[0])
    .slice(0, 3);
  console.log(`slowest: ${worst.map(([ms, q]) => `${JSON.stringify(q)} ${ms.toFixed(2)} ms`).join(', ')}`);

  t = performance.now();
  const nsig = syncSignatures(store);
  console.log(`signatures: ${nsig} computed in ${(performance.now() - t).toFixed(0)} ms`);
  const ids = extractionIds(store)
    .sort(() => Math.random() - 0.5)
    .slice(0, 20);
  const st: number[] = [];
  for (const id of ids) {
    const t0 = performance.now();
    similarBlocks(store, id, 10);
    st.push(performance.now() - t0);
  }
  console.log(
    `similar: ${ids.length} queries over ${N} blocks: p50 ${pct(st, 50).toFixed(1)} ms, p95 ${pct(st, 95).toFixed(1)} ms`,
  );
  store.close();
} finally {
  if (process.env.NNRAG_BENCH_KEEP) console.log(`store kept in ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}
