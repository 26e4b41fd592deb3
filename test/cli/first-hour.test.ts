// What a new user trips over first (issue 15), on the example corpus through the real
// pipeline (sandboxed validator, /usr/bin/python3's torch): extraction without validation
// keeps what was validated, `force` re-validates, a failed block is not exported unless
// asked for and its header names the failing stage, exported requirements are pins pip
// accepts, exported module names keep the class name readable.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import { exportBlock, moduleNameFor } from '../../src/export/export.js';
import { getExtraction } from '../../src/store/records.js';
import { compatiblePin } from '../../src/library/requirements.js';
import { extractAndValidate } from '../../src/commands/extract.js';
import { ValidatorPool, type ValidationRequest } from '../../src/validate/index.js';
import { NnragError } from '../../src/util/errors.js';
import { duration, progressLine } from '../../src/cli/progress.js';
import { repoRoot, tempDir } from '../helpers.js';

const PY = '/usr/bin/python3';
const haveTorch = existsSync(PY) && (() => {
  try { execFileSync(PY, ['-c', 'import torch'], { stdio: 'ignore' }); return true; } catch { return false; }
})();
const skip = !haveTorch && 'no /usr/bin/python3 with torch';

const GOOD = 'tinyvision.layers.mlp.Mlp';
const FAILING = 'tinyvision.models.wrappers.FeatureTap';

let ws: api.Workspace;
let pool: ValidatorPool;
let calls = 0;

before(async () => {
  if (!haveTorch) return;
  ws = api.Workspace.open(tempDir());
  await api.index(ws, {
    repos: [{ name: 'examples', url: null, path: path.join(repoRoot, 'examples'), priority: 1, paths: [], description: null, packageRoots: null }],
  });
  pool = await ValidatorPool.start({ python: PY, workers: 1 });
  // count the validations that really run (the pool itself is real)
  const validate = pool.validate.bind(pool);
  pool.validate = (req: ValidationRequest) => {
    calls++;
    return validate(req);
  };
});

after(async () => {
  await pool?.close();
  ws?.close();
});

test('extraction without validation keeps the stored validation of an unchanged module; force re-validates', { skip }, async () => {
  const [first] = await extractAndValidate(ws, [GOOD], { validator: pool });
  assert.equal(first.ok, true, JSON.stringify(first.validation));
  assert.equal(calls, 1);
  const [again] = await extractAndValidate(ws, [GOOD], { validator: pool });
  assert.equal(calls, 1, 'an unchanged module in the same environment is not validated again');
  assert.equal(again.ok, true);
  const [forced] = await extractAndValidate(ws, [GOOD], { validator: pool, force: true });
  assert.equal(calls, 2, 'force runs the validation again');
  assert.equal(forced.ok, true);

  const [plain] = await extractAndValidate(ws, [GOOD], { validate: false });
  assert.equal(plain.ok, true);
  assert.ok(plain.validation, 'the record keeps its validation');
  assert.equal(getExtraction(ws.store, GOOD)!.status, 'validated');
  const out = path.join(ws.storeDir, 'library');
  assert.ok(existsSync(path.join(out, 'blocks', `${GOOD}.py`)), 'the module stays in blocks/');
  assert.ok(!existsSync(path.join(out, 'extracted', `${GOOD}.py`)));
});

test('a failed block is exported only when asked, and its header names the failing stage', { skip }, async () => {
  const [rec] = await extractAndValidate(ws, [FAILING], { validator: pool });
  assert.equal(rec.ok, false);
  const into = tempDir();
  await assert.rejects(exportBlock(ws.store, FAILING, { into, python: PY }), (e: unknown) => e instanceof NnragError && /failed at instantiate/.test(e.message) && /--allow-failed/.test(e.message));
  assert.ok(!existsSync(path.join(into, 'feature_tap.py')), 'nothing written');
  const r = await exportBlock(ws.store, FAILING, { into, python: PY, allowFailed: true });
  const head = readFileSync(r.file, 'utf8').split('\n')[0];
  assert.match(head, /FAILED at instantiate \(needs-args\)/);
  assert.doesNotMatch(head, /failed: parse/);
  // the CLI says the same and exits 1
  const bin = path.join(repoRoot, 'dist', 'src', 'cli', 'bin.js');
  const cli = spawnSync(process.execPath, [bin, 'export', FAILING, '--into', tempDir(), '--store', ws.storeDir], { encoding: 'utf8' });
  assert.equal(cli.status, 1, cli.stderr);
  assert.match(cli.stderr, /failed at instantiate/);
});

test('a validated block is exported with pins pip accepts for every extern import', { skip }, async () => {
  const into = tempDir();
  const r = await exportBlock(ws.store, GOOD, { into, python: PY });
  assert.equal(r.module, 'mlp');
  const reqs = readFileSync(path.join(into, 'requirements.txt'), 'utf8').trim().split('\n');
  const torch = reqs.find((l) => /^torch\b/.test(l));
  assert.ok(torch, reqs.join(', '));
  // Debian's torch is 1.13.0a0+gitunknown: no local label, no pre-release pin
  assert.match(torch!, /^torch>=\d+\.\d+,<\d+\.\d+$/);
  assert.doesNotMatch(torch!, /a0|\+|==/);
  assert.match(readFileSync(r.file, 'utf8').split('\n')[0], /\(validated: .*forward/);
  // the recorded usage runs in a fresh interpreter next to the exported module
  assert.ok(r.usage, 'a usage snippet was recorded');
  assert.match(r.usage!, /^Mlp\(.*\)\(torch\./);
  const shape = execFileSync(PY, ['-c', `import torch, sys; sys.path.insert(0, ${JSON.stringify(into)}); import mlp; y = eval(${JSON.stringify(r.usage)}, dict(vars(mlp), torch=torch)); print(list(y.shape))`], { encoding: 'utf8' }).trim();
  const rec = getExtraction(ws.store, GOOD)!.record.validation as { output_shapes: number[][] };
  assert.equal(shape, JSON.stringify(rec.output_shapes[0]).replace(/,/g, ', '));
});

test('pins from installed versions', () => {
  assert.equal(compatiblePin('torch', '1.13.0a0+gitunknown'), 'torch>=1.13,<1.14');
  assert.equal(compatiblePin('numpy', '1.24.2'), 'numpy>=1.24,<1.25');
  assert.equal(compatiblePin('einops', '0.8.0'), 'einops>=0.8,<0.9');
  assert.equal(compatiblePin('six', '1'), 'six>=1,<2');
  assert.equal(compatiblePin('tzdata', '2024.1.post1'), 'tzdata>=2024.1,<2024.2');
  assert.equal(compatiblePin('odd', 'unknown-version'), 'odd');
});

test('exported module names keep the class name readable', () => {
  assert.equal(moduleNameFor('ViT'), 'vit');
  assert.equal(moduleNameFor('WindowAttention'), 'window_attention');
  assert.equal(moduleNameFor('MHSABlock'), 'mhsa_block');
  assert.equal(moduleNameFor('ConvNeXtBlock'), 'conv_next_block');
  assert.equal(moduleNameFor('ResNet'), 'res_net');
  assert.equal(moduleNameFor('Conv2dSame'), 'conv2d_same');
  assert.equal(moduleNameFor('Mlp'), 'mlp');
});

test('progress shows passed and failed so far, the rate and the time left', () => {
  const line = progressLine('extract', 'validate', 50, 200, 10, { ok: 45, failed: 5 });
  assert.match(line, /50\/200/);
  assert.match(line, /✓ 45 ✗ 5/);
  assert.match(line, /5\.0\/s/);
  assert.match(line, /ETA 30 s/);
  assert.match(progressLine('x', 'validate', 2, 10, 8), /4\.0 s each {2}ETA 32 s/);
  assert.doesNotMatch(progressLine('x', 'validate', 10, 10, 8), /ETA/);
  assert.equal(duration(4000), '67 min');
  assert.equal(duration(7200), '2.0 h');
});

test('common options may come before the command; a closed output pipe is not an error', { skip }, async () => {
  const bin = path.join(repoRoot, 'dist', 'src', 'cli', 'bin.js');
  const r = spawnSync(process.execPath, [bin, '--store', ws.storeDir, '--json', 'stats'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.ok(JSON.parse(r.stdout).files > 0);
  // the reader goes away before nnrag writes (`nnrag discover --json | head -0`)
  const child = spawn(process.execPath, [bin, 'discover', '--json', '--store', ws.storeDir], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.destroy();
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  assert.equal(code, 0, err);
  assert.doesNotMatch(err, /EPIPE|Error/);
});

test('help: every flag of every command has a line, every command an example', async () => {
  const { commands } = await import('../../src/cli/main.js');
  const { common } = await import('../../src/cli/context.js');
  const { EXAMPLES, flagHelp } = await import('../../src/cli/help.js');
  const bin = path.join(repoRoot, 'dist', 'src', 'cli', 'bin.js');
  for (const [name, cmd] of Object.entries(commands)) {
    assert.ok(EXAMPLES[name]?.startsWith(`nnrag ${name}`), `an example for ${name}`);
    const help = spawnSync(process.execPath, [bin, name, '--help'], { encoding: 'utf8' });
    assert.equal(help.status, 0);
    for (const flag of Object.keys({ ...cmd.options, ...common })) {
      assert.ok(flagHelp(name, flag), `nnrag ${name} --${flag} has a description`);
      assert.match(help.stdout, new RegExp(`--${flag}\\b.* \\S`), `nnrag ${name} --help lists --${flag}`);
    }
  }
});

test('discover --symbols matches case-insensitively', { skip }, () => {
  const found = api.discover(ws, { symbols: ['*attention'] }).map((b) => b.id);
  assert.ok(found.includes('tinyvision.layers.attention.WindowAttention'), found.join());
  assert.deepEqual(api.discover(ws, { symbols: ['TINYVISION.LAYERS.MLP.MLP'] }).map((b) => b.id), ['tinyvision.layers.mlp.Mlp']);
});

test('an unknown name gets the nearest names; an empty store says to index first', { skip }, async () => {
  assert.throws(() => api.resolveBlockNames(ws, ['WindowAtention']), /did you mean WindowAttention\?/);
  const empty = api.Workspace.open(tempDir(), { create: true });
  try {
    assert.throws(() => api.resolveBlockNames(empty, ['Mlp']), /nnrag index --repo/);
  } finally {
    empty.close();
  }
  const { suggest, editDistance } = await import('../../src/util/suggest.js');
  assert.equal(editDistance('kitten', 'sitting'), 3);
  assert.deepEqual(suggest('mlp', ['Mlp', 'MLP', 'GluMlp', 'Attention']), ['Mlp', 'MLP', 'GluMlp']);
  assert.deepEqual(suggest('zzzz', ['Mlp']), []);
});

test('the first hour, scripted: one-step extract from a local repository, search, export, run the usage', { skip }, () => {
  const bin = path.join(repoRoot, 'dist', 'src', 'cli', 'bin.js');
  const store = path.join(tempDir(), 'fresh-store'); // does not exist yet
  const cli = (...args: string[]) => spawnSync(process.execPath, [bin, ...args, '--store', store], { encoding: 'utf8' });
  const ex = cli('extract', '--repo', path.join(repoRoot, 'examples'), '--block', 'WindowAttention', '--python', PY, '--json');
  assert.equal(ex.status, 0, ex.stderr);
  const [rec] = JSON.parse(ex.stdout) as { id: string; ok: boolean; validation: { usage?: string } }[];
  assert.equal(rec.id, 'tinyvision.layers.attention.WindowAttention');
  assert.ok(rec.ok && rec.validation.usage);
  const found = cli('search', 'window', 'attentions', '--json');
  assert.equal(found.status, 0, found.stderr);
  assert.equal(JSON.parse(found.stdout).hits[0].id, rec.id);
  const project = tempDir();
  const exp = cli('export', 'WindowAttention', '--into', project, '--json');
  assert.equal(exp.status, 0, exp.stderr);
  const report = JSON.parse(exp.stdout) as { module: string; usage: string };
  assert.equal(report.module, 'window_attention');
  // the exported file runs in a fresh interpreter with the usage that passed validation
  const code = `import torch, sys; sys.path.insert(0, ${JSON.stringify(project)}); from window_attention import *; y = ${report.usage}; print(tuple(y.shape))`;
  const run = spawnSync(PY, ['-c', code], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /^\(\d+(, \d+)*\)$/m);
});
