// Benchmark for the sandboxed validator: pool start time (interpreter discovery + N
// workers importing torch inside bubblewrap) and validations per second through
// parse → compile → import → instantiate → forward on ~60 small generated blocks
// (MLPs, conv blocks, norms, attention, embeddings; some need constructor arguments
// guessed from their names).
//
// Usage: node dist/bench/validate.js [--workers 2] [--blocks 60] [--python PATH] [--no-sandbox] [--json]
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ValidatorPool, type Stage, type ValidationRequest } from '../src/validate/index.js';

const KINDS = ['mlp', 'conv', 'norm', 'attn', 'embed', 'gate'] as const;

/** One small generated block (our own code, not taken from any repository). */
export function makeBlock(i: number): ValidationRequest {
  const kind = KINDS[i % KINDS.length];
  const w = [8, 12, 16, 24, 32][i % 5];
  const name = `Bench${kind[0].toUpperCase()}${kind.slice(1)}${i}`;
  let body: string;
  switch (kind) {
    case 'mlp':
      body = `class ${name}(nn.Module):
    def __init__(self, in_features=${w}, hidden=${w * 2}):
        super().__init__()
        self.a = nn.Linear(in_features, hidden)
        self.b = nn.Linear(hidden, in_features)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))
`;
      break;
    case 'conv':
      body = `class ${name}(nn.Module):
    def __init__(self, in_chs, out_chs, kernel_size=3):
        super().__init__()
        self.conv = nn.Conv2d(in_chs, out_chs, kernel_size, padding=kernel_size // 2)
        self.bn = nn.BatchNorm2d(out_chs)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))
`;
      break;
    case 'norm':
      body = `class ${name}(nn.Module):
    def __init__(self, dim=${w}, eps=1e-6):
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=eps)
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return self.norm(x) * self.scale
`;
      break;
    case 'attn':
      body = `class ${name}(nn.Module):
    def __init__(self, dim, num_heads=2):
        super().__init__()
        self.h = num_heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.h, c // self.h).permute(2, 0, 3, 1, 4)
        a = (q @ k.transpose(-2, -1) * (c // self.h) ** -0.5).softmax(-1)
        return self.out((a @ v).transpose(1, 2).reshape(b, n, c))
`;
      break;
    case 'embed':
      body = `class ${name}(nn.Module):
    def __init__(self, vocab_size=50, dim=${w}):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, dim)

    def forward(self, ids):
        return self.emb(ids).mean(1)
`;
      break;
    default:
      body = `class ${name}(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.g = nn.Conv1d(channels, channels, 1)

    def forward(self, x):
        return x * torch.sigmoid(self.g(x))
`;
  }
  return { id: `bench.${name}`, source: `import torch\nfrom torch import nn\n\n\n${body}`, className: name };
}

async function main() {
  const argv = process.argv.slice(2);
  const opt = (n: string, d: number) => {
    const i = argv.indexOf(n);
    return i >= 0 ? Number(argv[i + 1]) : d;
  };
  const workers = opt('--workers', 2);
  const n = opt('--blocks', 60);
  const sandbox = !argv.includes('--no-sandbox');
  const blocks = Array.from({ length: n }, (_, i) => makeBlock(i));

  const pi = argv.indexOf('--python');
  const python = pi >= 0 ? argv[pi + 1] : undefined;
  const pool = await ValidatorPool.start({ workers, sandbox, python });
  try {
    const t0 = performance.now();
    const first = await pool.validateMany(blocks);
    const coldS = (performance.now() - t0) / 1000;
    const t1 = performance.now();
    const second = await pool.validateMany(blocks);
    const warmS = (performance.now() - t1) / 1000;
    // equivalence against an original package (the test fixture repository): the first
    // request imports it in a zygote, the rest fork from there
    const eqRoot = path.join(
      path.dirname(fileURLToPath(import.meta.url)),
      '..',
      '..',
      'test',
      'fixtures',
      'validate',
      'equiv',
    );
    const eqSource = readFileSync(path.join(eqRoot, 'gate_same.py'), 'utf8');
    const eqReqs = Array.from({ length: 20 }, (_, i) => ({
      id: `eq${i}`,
      source: eqSource,
      className: 'ScaledGate',
      original: { module: 'eqpkg.blocks', className: 'ScaledGate', sysPath: [path.join(eqRoot, 'repo')] },
      requiredStages: ['import', 'instantiate', 'forward', 'equivalence'] as Stage[],
    }));
    await pool.validate(eqReqs[0]); // binds the root (worker restart) and starts the zygote
    const t2 = performance.now();
    const eq = await pool.validateMany(eqReqs);
    const eqS = (performance.now() - t2) / 1000;
    const failed = [...first, ...second, ...eq].filter((r) => !r.ok);
    const perCheck = first.map((r) => r.ms).sort((a, b) => a - b);
    const out = {
      workers,
      sandbox,
      blocks: n,
      torch: pool.torch,
      poolStartMs: Math.round(pool.startMs),
      findInterpreterMs: Math.round(pool.startBreakdown.environmentMs),
      workersReadyMs: Math.round(pool.startBreakdown.workersMs),
      firstPassPerSecond: +(n / coldS).toFixed(1),
      secondPassPerSecond: +(n / warmS).toFixed(1),
      medianCheckMs: +perCheck[Math.floor(perCheck.length / 2)].toFixed(1),
      equivalencePerSecond: +(eqReqs.length / eqS).toFixed(1),
      failed: failed.map((r) => `${r.id}: ${r.stage} ${r.category} ${r.error}`),
    };
    if (argv.includes('--json')) console.log(JSON.stringify(out));
    else {
      console.log(`validator pool: ${workers} workers, sandbox ${sandbox ? 'on' : 'OFF'}, torch ${pool.torch}`);
      console.log(
        `  pool start            ${out.poolStartMs} ms (target <= 2000): interpreter ${out.findInterpreterMs} ms, workers ready ${out.workersReadyMs} ms`,
      );
      console.log(`  validations/s (1st)   ${out.firstPassPerSecond} over ${n} blocks (target >= 20)`);
      console.log(`  validations/s (2nd)   ${out.secondPassPerSecond}`);
      console.log(`  median check          ${out.medianCheckMs} ms (fork to report, in the worker)`);
      console.log(`  with equivalence/s    ${out.equivalencePerSecond} (original imported once per worker)`);
      console.log(`  failed                ${failed.length}`);
      for (const f of out.failed.slice(0, 10)) console.log(`    ${f}`);
    }
    if (failed.length) process.exitCode = 1;
  } finally {
    await pool.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
