// Benchmark for `nnrag dedup`: generates N synthetic PyTorch-style nn.Module blocks
// (30–80 lines: docstrings, comments, __init__ with layers, forward, helper methods) with
// planted duplicates — exact copies (comments/docstrings/whitespace changed), near copies
// (one statement changed or added), structural copies (every bound name renamed) — and
// near-misses (same block with a different layer width), de-duplicates them, and prints the
// timings and how many planted relations were found / wrongly merged.
//
// Usage: node dist/bench/dedup.js [N=100000] [--threads T] [--json]
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import { dedup, type DedupInput } from '../src/library/dedup.js';

/** Deterministic PRNG (mulberry32). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WIDTHS = [8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024];
const ACTS = ['nn.ReLU()', 'nn.GELU()', 'nn.SiLU()', 'nn.LeakyReLU(0.1)', 'nn.Tanh()', 'nn.Hardswish()'];
const WORDS = [
  'conv',
  'proj',
  'fc',
  'mix',
  'gate',
  'embed',
  'head',
  'stem',
  'block',
  'norm',
  'attn',
  'mlp',
  'down',
  'up',
  'skip',
  'pool',
];
const NOUNS = [
  'Residual',
  'Bottleneck',
  'Mixer',
  'Gated',
  'Dense',
  'Sparse',
  'Squeeze',
  'Inverted',
  'Depthwise',
  'Patch',
  'Window',
  'Linear',
  'Conv',
  'Attention',
  'Fusion',
  'Cross',
];
const SUFFIX = ['Block', 'Layer', 'Unit', 'Module', 'Stage', 'Head', 'Net', 'Cell'];

interface Spec {
  name: string;
  layers: { attr: string; ctor: string }[];
  widths: number[];
  act: string;
  extra: string[];
  doc: string;
  useNorm: boolean;
  residual: boolean;
  helper: boolean;
  dropout: number;
}

function pick<T>(r: () => number, xs: readonly T[]): T {
  return xs[Math.floor(r() * xs.length)];
}

function makeSpec(r: () => number, i: number): Spec {
  const nLayers = 2 + Math.floor(r() * 7);
  const widths = Array.from({ length: nLayers + 1 }, () => pick(r, WIDTHS));
  const layers = [];
  const used = new Set<string>();
  for (let k = 0; k < nLayers; k++) {
    let attr = `${pick(r, WORDS)}${k + 1}`;
    while (used.has(attr)) attr += '_';
    used.add(attr);
    const kind = r();
    const a = `self.in_dim`,
      b = widths[k + 1];
    const ctor =
      kind < 0.45
        ? `nn.Linear(${k === 0 ? a : widths[k]}, ${b})`
        : kind < 0.75
          ? `nn.Conv2d(${k === 0 ? a : widths[k]}, ${b}, kernel_size=${pick(r, [1, 3, 5, 7])}, padding=${pick(r, [0, 1, 2, 3])})`
          : kind < 0.9
            ? `nn.BatchNorm2d(${widths[k]})`
            : `nn.LayerNorm(${widths[k]}, eps=${pick(r, ['1e-5', '1e-6'])})`;
    layers.push({ attr, ctor });
  }
  const extra = [];
  const nExtra = Math.floor(r() * 6);
  for (let k = 0; k < nExtra; k++) {
    extra.push(
      pick(r, [
        `x = x * self.scale`,
        `x = x.flatten(${pick(r, [1, 2])})`,
        `x = torch.clamp(x, min=-${pick(r, [1, 2, 3, 5, 10])}.0, max=${pick(r, [1, 2, 3, 5, 10])}.0)`,
        `x = F.dropout(x, p=self.drop, training=self.training)`,
        `x = x.transpose(${pick(r, [1, 2])}, -1).contiguous()`,
        `x = x + torch.randn_like(x) * ${pick(r, ['0.01', '0.1', '0.001'])}`,
        `if x.dim() == ${pick(r, [2, 3, 4])}:\n            x = x.unsqueeze(${pick(r, [0, 1, -1])})`,
        `x = torch.cat([x, x.mean(dim=${pick(r, [1, -1])}, keepdim=True)], dim=${pick(r, [1, -1])})`,
      ]),
    );
  }
  return {
    name: `${pick(r, NOUNS)}${pick(r, NOUNS)}${pick(r, SUFFIX)}${i}`,
    layers,
    widths,
    act: pick(r, ACTS),
    extra,
    doc: `${pick(r, NOUNS)} ${pick(r, SUFFIX).toLowerCase()} with ${nLayers} layers (generated ${i}).`,
    useNorm: r() < 0.5,
    residual: r() < 0.5,
    helper: r() < 0.6,
    dropout: pick(r, [0, 0.1, 0.2, 0.5]),
  };
}

interface RenderOpts {
  comments?: boolean;
  docstring?: string | null;
  indent?: number;
  rename?: (s: string) => string;
}

function render(s: Spec, o: RenderOpts = {}): string {
  const I = ' '.repeat(o.indent ?? 4);
  const rn = o.rename ?? ((x: string) => x);
  const L: string[] = [];
  L.push(`class ${rn(s.name)}(nn.Module):`);
  if (o.docstring !== null)
    L.push(`${I}"""${o.docstring ?? s.doc}`, '', `${I}Args:`, `${I}    in_dim: input width`, `${I}"""`);
  if (o.comments) L.push(`${I}# layers are created in __init__ and applied in order`);
  L.push('');
  L.push(`${I}def __init__(self, ${rn('in_dim')}=${s.widths[0]}, ${rn('drop')}=${s.dropout}, ${rn('scale')}=1.0):`);
  L.push(`${I}${I}super().__init__()`);
  L.push(`${I}${I}self.${rn('in_dim')} = ${rn('in_dim')}`);
  L.push(`${I}${I}self.${rn('drop')} = ${rn('drop')}`);
  L.push(`${I}${I}self.${rn('scale')} = ${rn('scale')}`);
  for (const l of s.layers) {
    if (o.comments) L.push(`${I}${I}# ${l.attr} layer`);
    L.push(`${I}${I}self.${rn(l.attr)} = ${l.ctor.replace('self.in_dim', rn('in_dim'))}`);
  }
  L.push(`${I}${I}self.${rn('act')} = ${s.act}`);
  if (s.useNorm) L.push(`${I}${I}self.${rn('norm')} = nn.LayerNorm(${s.widths[s.widths.length - 1]})`);
  L.push('');
  L.push(`${I}def forward(self, ${rn('x')}):`);
  if (o.docstring !== null) L.push(`${I}${I}"""Apply the block."""`);
  if (s.residual) L.push(`${I}${I}${rn('shortcut')} = ${rn('x')}`);
  for (const l of s.layers) {
    L.push(`${I}${I}${rn('x')} = self.${rn(l.attr)}(${rn('x')})`);
    L.push(`${I}${I}${rn('x')} = self.${rn('act')}(${rn('x')})`);
  }
  for (const e of s.extra)
    L.push(
      ...e
        .split('\n')
        .map(
          (line) =>
            `${I}${I}${line.replace(/\bx\b/g, rn('x')).replace(/self\.(scale|drop)\b/g, (_m, a) => `self.${rn(a)}`)}`,
        ),
    );
  if (s.useNorm) L.push(`${I}${I}${rn('x')} = self.${rn('norm')}(${rn('x')})`);
  if (s.residual) {
    L.push(`${I}${I}if ${rn('x')}.shape == ${rn('shortcut')}.shape:`);
    if (o.comments) L.push(`${I}${I}${I}# residual connection`);
    L.push(`${I}${I}${I}${rn('x')} = ${rn('x')} + ${rn('shortcut')}`);
  }
  L.push(`${I}${I}return ${rn('x')}`);
  if (s.helper) {
    L.push('');
    L.push(`${I}def ${rn('extra_repr')}(self):`);
    L.push(`${I}${I}return f"in_dim={self.${rn('in_dim')}}, layers=${s.layers.length}"`);
    L.push('');
    L.push(`${I}@torch.no_grad()`);
    L.push(`${I}def ${rn('init_weights')}(self, ${rn('std')}=0.02):`);
    L.push(`${I}${I}for ${rn('m')} in self.modules():`);
    L.push(`${I}${I}${I}if isinstance(${rn('m')}, nn.Linear):`);
    L.push(`${I}${I}${I}${I}nn.init.trunc_normal_(${rn('m')}.weight, std=${rn('std')})`);
    L.push(`${I}${I}${I}${I}if ${rn('m')}.bias is not None:`);
    L.push(`${I}${I}${I}${I}${I}nn.init.zeros_(${rn('m')}.bias)`);
  }
  return L.join('\n') + '\n';
}

export interface Planted {
  blocks: DedupInput[];
  /** pairs that must end in the same cluster */
  same: [string, string][];
  /** pairs that must not */
  different: [string, string][];
}

/**
 * N blocks: ~72% originals, then for random originals: 8% exact copies (comments,
 * docstring, indentation changed), 8% near copies (one extra statement or a changed
 * activation), 6% structural copies (all bound names renamed, comments dropped), 6%
 * near-misses (one layer width changed, otherwise identical).
 */
export function generateBlocks(N: number, seed = 1): Planted {
  const r = rng(seed);
  const blocks: DedupInput[] = [];
  const same: [string, string][] = [];
  const different: [string, string][] = [];
  const specs: Spec[] = [];
  const nOrig = Math.max(1, Math.round(N * 0.72));
  const repos = ['timm', 'torchvision', 'mmdet', 'detectron2', 'fairseq', 'lucidrains', 'hf', 'misc'];
  for (let i = 0; i < nOrig; i++) {
    const s = makeSpec(r, i);
    specs.push(s);
    blocks.push({ id: `b${i}`, repo: pick(r, repos), text: render(s) });
  }
  let k = nOrig;
  while (blocks.length < N) {
    const j = Math.floor(r() * nOrig);
    const s = specs[j];
    const id = `b${k++}`;
    const u = r();
    let text: string;
    if (u < 0.286) {
      text = render(s, {
        comments: true,
        docstring: `Copied from somewhere else (${id}).`,
        indent: 2 + 2 * Math.floor(r() * 2),
      });
      same.push([`b${j}`, id]);
    } else if (u < 0.572) {
      const t = { ...s, extra: [...s.extra] };
      if (r() < 0.5) t.extra.push('x = x.contiguous()');
      else t.act = t.act === 'nn.ReLU()' ? 'nn.ReLU(inplace=True)' : 'nn.ReLU()';
      text = render(t, { comments: r() < 0.5 });
      // only a planted near duplicate if the change keeps Jaccard ≥ 0.9 (small blocks may not)
      same.push([`b${j}`, id]);
    } else if (u < 0.786) {
      const suffix = pick(r, ['_v2', 'X', '_copy', 'Alt']);
      text = render(s, { docstring: null, rename: (x) => (x === s.name ? `My${x}` : `${x}${suffix}`) });
      same.push([`b${j}`, id]);
    } else {
      const t = { ...s, layers: s.layers.map((l) => ({ ...l })) };
      const li = Math.floor(r() * t.layers.length);
      // change one width literal of one layer
      t.layers[li].ctor = t.layers[li].ctor.replace(/\b(\d+)\b(?![.e\d])/, (_m, w) => `${Number(w) * 2 + 8}`);
      if (t.layers[li].ctor === s.layers[li].ctor) t.layers[li].ctor = t.layers[li].ctor.replace('(', '(2 * ');
      text = render(t);
      different.push([`b${j}`, id]);
    }
    blocks.push({ id, repo: pick(r, repos), text });
  }
  return { blocks, same, different };
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const N = Number(args.find((a) => /^\d+$/.test(a)) ?? 100000);
  const ti = args.indexOf('--threads');
  const threads = ti >= 0 ? Number(args[ti + 1]) : undefined;
  const t0 = performance.now();
  const { blocks, same, different } = generateBlocks(N);
  const tGen = performance.now() - t0;
  const lines = blocks.reduce((a, b) => a + b.text.split('\n').length - 1, 0);
  // In nnrag the blocks handed to dedup have passed validation stage 1 (CPython parses
  // them), so `parseable` is known; --check-syntax measures the tree-sitter fallback instead.
  const checkSyntax = args.includes('--check-syntax');
  if (!checkSyntax) for (const b of blocks) b.parseable = true;
  const c0 = process.cpuUsage();
  const t1 = performance.now();
  const res = await dedup(blocks, { threads });
  const tDedup = performance.now() - t1;
  const cpu = process.cpuUsage(c0);
  // check the planted relations
  const clusterOf = new Map<string, number>();
  res.clusters.forEach((c, i) => {
    for (const m of c.members) clusterOf.set(m, i);
  });
  const together = (a: string, b: string) => clusterOf.has(a) && clusterOf.get(a) === clusterOf.get(b);
  const found = same.filter(([a, b]) => together(a, b)).length;
  const wrong = different.filter(([a, b]) => together(a, b)).length;
  const kinds: Record<string, number> = {};
  for (const c of res.clusters) kinds[c.kind] = (kinds[c.kind] ?? 0) + 1;
  const out = {
    blocks: N,
    lines,
    cpus: os.availableParallelism?.() ?? os.cpus().length,
    generateMs: Math.round(tGen),
    dedupMs: Math.round(tDedup),
    cpuMs: Math.round((cpu.user + cpu.system) / 1000),
    loadavg: os.loadavg()[0],
    syntaxCheck: checkSyntax ? 'tree-sitter' : 'parseable given',
    phases: res.timings,
    phasesCpu: res.cpu,
    syntaxChecked: res.syntaxChecked,
    clusters: res.clusters.length,
    clusterKinds: kinds,
    uniqueCount: res.uniqueCount,
    plantedDuplicates: same.length,
    plantedFound: found,
    nearMisses: different.length,
    nearMissesMerged: wrong,
  };
  if (args.includes('--json')) console.log(JSON.stringify(out));
  else {
    console.log(
      `dedup of ${N} synthetic blocks (${lines} lines) on ${out.cpus} cpus: ${out.dedupMs} ms wall, ${out.cpuMs} ms cpu (load average ${out.loadavg.toFixed(2)}; ${out.syntaxCheck})`,
    );
    console.log(`  phases, wall ms: ${JSON.stringify(res.timings)}; tree-sitter syntax checks: ${res.syntaxChecked}`);
    console.log(`  phases, cpu ms:  ${JSON.stringify(res.cpu)}`);
    console.log(`  cpu per block: ${((out.cpuMs * 1000) / N).toFixed(0)} us`);
    console.log(`  clusters: ${out.clusters} ${JSON.stringify(kinds)}; unique ${res.uniqueCount}`);
    console.log(
      `  planted duplicate pairs found: ${found}/${same.length}; near-misses (width changed) merged: ${wrong}/${different.length}`,
    );
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
