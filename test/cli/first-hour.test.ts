// What a new user trips over first (issue 15), on the example corpus through the real
// pipeline (sandboxed validator, /usr/bin/python3's torch): extraction without validation
// keeps what was validated, `force` re-validates, a failed block is not exported unless
// asked for and its header names the failing stage, exported requirements are pins pip
// accepts, exported module names keep the class name readable.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import { exportBlock, moduleNameFor } from '../../src/export/export.js';
import { getExtraction, listExtractions } from '../../src/store/records.js';
import { compareRelease, testedPin } from '../../src/environment/requirements.js';
import { extractAndValidate } from '../../src/pipeline/pipeline.js';
import { ValidatorPool, type ValidationRequest } from '../../src/validate/index.js';
import { NnragError } from '../../src/util/errors.js';
import { duration, progressLine } from '../../src/cli/progress.js';
import { repoRoot, tempDir } from '../helpers.js';

const PY = '/usr/bin/python3';
const haveTorch =
  existsSync(PY) &&
  (() => {
    try {
      execFileSync(PY, ['-c', 'import torch'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
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
    repos: [
      {
        name: 'examples',
        url: null,
        path: path.join(repoRoot, 'examples'),
        priority: 1,
        paths: [],
        description: null,
        packageRoots: null,
      },
    ],
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

test('extraction without validation keeps the stored validation of an unchanged module; force re-validates', {
  skip,
}, async () => {
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
  await assert.rejects(
    exportBlock(ws.store, FAILING, { into, python: PY }),
    (e: unknown) =>
      e instanceof NnragError && /failed at instantiate/.test(e.message) && /--allow-failed/.test(e.message),
  );
  assert.ok(!existsSync(path.join(into, 'feature_tap.py')), 'nothing written');
  const r = await exportBlock(ws.store, FAILING, { into, python: PY, allowFailed: true });
  const head = readFileSync(r.file, 'utf8').split('\n')[0];
  assert.match(head, /FAILED at instantiate \(needs-args\)/);
  assert.doesNotMatch(head, /failed: parse/);
  // the CLI says the same and exits 1
  const bin = path.join(repoRoot, 'dist', 'src', 'cli', 'bin.js');
  const cli = spawnSync(process.execPath, [bin, 'export', FAILING, '--into', tempDir(), '--store', ws.storeDir], {
    encoding: 'utf8',
  });
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
  // the pin is the tested version as a lower bound, from the record's environment facts
  // (Debian's torch is 1.13.0a0+gitunknown: the public version, pre-release label kept so
  // the bound admits it under PEP 440's ordering; no local label, no upper bound)
  const env = getExtraction(ws.store, GOOD)!.record.validation!.environment!;
  assert.ok(env, 'the validation carries the environment facts');
  const tested = env.torch.split('+')[0];
  assert.equal(torch, `torch>=${tested}`);
  assert.doesNotMatch(torch!, /\+|==|</);
  const header = readFileSync(r.file, 'utf8').split('\n');
  assert.match(header[0], /\(validated: .*forward/);
  const line = header.find((l) => l.startsWith('# Tested with: '));
  assert.ok(line, header.slice(0, 6).join('\n'));
  assert.ok(line!.includes(`python ${env.python}, torch ${env.torch}`), line);
  assert.equal(
    env.python,
    execFileSync(PY, ['-c', 'import platform; print(platform.python_version())'], { encoding: 'utf8' }).trim(),
  );
  // the recorded usage runs in a fresh interpreter next to the exported module
  assert.ok(r.usage, 'a usage snippet was recorded');
  assert.match(r.usage!, /^Mlp\(.*\)\(torch\./);
  const shape = execFileSync(
    PY,
    [
      '-c',
      `import torch, sys; sys.path.insert(0, ${JSON.stringify(into)}); import mlp; y = eval(${JSON.stringify(r.usage)}, dict(vars(mlp), torch=torch)); print(list(y.shape))`,
    ],
    { encoding: 'utf8' },
  ).trim();
  const rec = getExtraction(ws.store, GOOD)!.record.validation as { output_shapes: number[][] };
  assert.equal(shape, JSON.stringify(rec.output_shapes[0]).replace(/,/g, ', '));
});

test('pins say what was tested: a lower bound at the tested version, no upper bound', () => {
  // a pre-release keeps its label, else the bound excludes the version tested
  // (1.13.0a0 < 1.13.0); the local label goes
  assert.equal(testedPin('torch', '1.13.0a0+gitunknown'), 'torch>=1.13.0a0');
  assert.equal(testedPin('torch', '2.9.1+cpu'), 'torch>=2.9.1');
  assert.equal(testedPin('numpy', '1.24.2'), 'numpy>=1.24.2');
  assert.equal(testedPin('six', '1'), 'six>=1');
  assert.equal(testedPin('tzdata', '2024.1.post1'), 'tzdata>=2024.1');
  assert.equal(testedPin('odd', 'unknown-version'), 'odd');
  assert.ok(compareRelease('2.6.0', '2.10') < 0);
  assert.equal(compareRelease('2.6', '2.6.0'), 0);
  assert.ok(compareRelease('1.13.0a0', '2.9.1') < 0);
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
  const child = spawn(process.execPath, [bin, 'discover', '--json', '--store', ws.storeDir], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.destroy();
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  assert.equal(code, 0, err);
  assert.doesNotMatch(err, /EPIPE|Error/);
});

test('help: every flag of every command has a line, every command an example', async () => {
  const { commands, main } = await import('../../src/cli/main.js');
  const { common } = await import('../../src/cli/context.js');
  const { EXAMPLES, flagHelp } = await import('../../src/cli/help.js');
  // the executable prints a command's help (one process; the other commands in this one:
  // `main` answers --help before its first await, so stdout is captured for that call only)
  const bin = path.join(repoRoot, 'dist', 'src', 'cli', 'bin.js');
  const viaBin = spawnSync(process.execPath, [bin, 'index', '--help'], { encoding: 'utf8' });
  assert.equal(viaBin.status, 0, viaBin.stderr);
  assert.match(viaBin.stdout, /--store\b.* \S/);
  const helpOf = async (name: string) => {
    let stdout = '';
    const write = process.stdout.write;
    process.stdout.write = ((chunk: string | Uint8Array) => {
      stdout += String(chunk);
      return true;
    }) as typeof process.stdout.write;
    let status: Promise<number>;
    try {
      status = main([name, '--help']);
    } finally {
      process.stdout.write = write;
    }
    return { status: await status, stdout };
  };
  for (const [name, cmd] of Object.entries(commands)) {
    assert.ok(EXAMPLES[name]?.startsWith(`nnrag ${name}`), `an example for ${name}`);
    const help = await helpOf(name);
    assert.equal(help.status, 0);
    assert.match(help.stdout, /^usage: /m, `nnrag ${name} --help prints its usage`);
    for (const flag of Object.keys({ ...cmd.options, ...common })) {
      assert.ok(flagHelp(name, flag), `nnrag ${name} --${flag} has a description`);
      assert.match(help.stdout, new RegExp(`--${flag}\\b.* \\S`), `nnrag ${name} --help lists --${flag}`);
    }
  }
});

test('discover --symbols matches case-insensitively', { skip }, () => {
  const found = api.discover(ws, { symbols: ['*attention'] }).map((b) => b.id);
  assert.ok(found.includes('tinyvision.layers.attention.WindowAttention'), found.join());
  assert.deepEqual(
    api.discover(ws, { symbols: ['TINYVISION.LAYERS.MLP.MLP'] }).map((b) => b.id),
    ['tinyvision.layers.mlp.Mlp'],
  );
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

test('the first hour, scripted: one-step extract from a local repository, search, export, run the usage', {
  skip,
}, () => {
  const bin = path.join(repoRoot, 'dist', 'src', 'cli', 'bin.js');
  const store = path.join(tempDir(), 'fresh-store'); // does not exist yet
  const cli = (...args: string[]) =>
    spawnSync(process.execPath, [bin, ...args, '--store', store], { encoding: 'utf8' });
  const ex = cli(
    'extract',
    '--repo',
    path.join(repoRoot, 'examples'),
    '--block',
    'WindowAttention',
    '--python',
    PY,
    '--json',
  );
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

// ---------------------------------------------------------------- round two (issue 26)

const nnragBin = path.join(repoRoot, 'dist', 'src', 'cli', 'bin.js');
const fixtureRepo = (name: string) => path.join(repoRoot, 'test', 'fixtures', 'firsthour', name);

test('a block the validator cannot guess: the failure shows what was tried and the next step; --args and --input-shape are tried first', {
  skip,
}, () => {
  const store = path.join(tempDir(), 'store');
  const cli = (...args: string[]) =>
    spawnSync(process.execPath, [nnragBin, ...args, '--store', store, '--python', PY], { encoding: 'utf8' });
  // stdout is a pipe here: the block's line is written there as it finishes
  const first = cli('extract', '--repo', fixtureRepo('userargs'), '--block', 'SpecBlock');
  assert.equal(first.status, 1, first.stderr);
  const lines = first.stdout.split('\n');
  const at = lines.findIndex((l) => l.startsWith('✗ pkg.blocks.SpecBlock'));
  assert.ok(at >= 0, first.stdout);
  assert.match(lines[at + 1], /^ {4}tried: (args \{.*\}|no arguments built)/);
  assert.match(lines[at + 2], /^ {4}next: .*nnrag validate pkg\.blocks\.SpecBlock --force --(args|input-shape)/);
  assert.equal(
    lines.filter((l) => l.startsWith('✗ pkg.blocks.SpecBlock')).length,
    1,
    'one line per block, not repeated in the summary',
  );

  const given = cli(
    'validate',
    'SpecBlock',
    '--args',
    '{"spec": {"width": 24, "tokens": 7}}',
    '--input-shape',
    '2,7,24',
    '--json',
  );
  assert.equal(given.status, 0, given.stderr + given.stdout);
  const [rec] = JSON.parse(given.stdout) as {
    ok: boolean;
    validation: { argumentsSource: string; args: unknown; input_shapes: number[][]; output_shapes: number[][] };
  }[];
  assert.equal(rec.ok, true);
  assert.equal(rec.validation.argumentsSource, 'user');
  assert.deepEqual(rec.validation.args, { spec: { width: 24, tokens: 7 } });
  assert.deepEqual(rec.validation.input_shapes, [[2, 7, 24]]);
  assert.deepEqual(rec.validation.output_shapes, [[2, 7, 24]]);
  // the same from files
  const dir = tempDir();
  writeFileSync(path.join(dir, 'args.json'), '{"args": [{"width": 16, "tokens": 3}]}');
  writeFileSync(path.join(dir, 'inputs.json'), '[[1, 3, 16]]');
  const files = cli(
    'validate',
    'SpecBlock',
    '--args',
    `@${path.join(dir, 'args.json')}`,
    '--input-shape',
    `@${path.join(dir, 'inputs.json')}`,
    '--json',
  );
  assert.equal(files.status, 0, files.stderr);
  assert.deepEqual(JSON.parse(files.stdout)[0].validation.input_shapes, [[1, 3, 16]]);
  // bad usage: not JSON, not a shape, with --all
  assert.equal(cli('validate', 'SpecBlock', '--args', '{dim: 3}').status, 2);
  assert.equal(cli('validate', 'SpecBlock', '--input-shape', '2,x').status, 2);
  assert.equal(cli('validate', '--all', '--args', '{}').status, 2);
});

test('an unknown block name is bad usage (exit 2); a folder without Python files says so', { skip }, () => {
  const store = path.join(tempDir(), 'store');
  const none = spawnSync(
    process.execPath,
    [nnragBin, 'extract', '--repo', fixtureRepo('nopython'), '--block', 'Anything', '--store', store],
    { encoding: 'utf8' },
  );
  assert.equal(none.status, 2, none.stderr);
  assert.match(none.stderr, /no Python files \(.*nopython/);
  const ok = spawnSync(
    process.execPath,
    [
      nnragBin,
      'extract',
      '--repo',
      path.join(repoRoot, 'examples'),
      '--block',
      'WindowAtention',
      '--no-validate',
      '--store',
      store,
    ],
    { encoding: 'utf8' },
  );
  assert.equal(ok.status, 2, ok.stderr);
  assert.match(ok.stderr, /did you mean WindowAttention/);
});

test('Ctrl-C says what was kept and exits 130; the finished blocks are in the store', { skip }, async () => {
  const store = path.join(tempDir(), 'store');
  const child = spawn(
    process.execPath,
    [
      nnragBin,
      'extract',
      '--repo',
      path.join(repoRoot, 'examples'),
      '--all',
      '--python',
      PY,
      '--workers',
      '1',
      '--store',
      store,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const code = await new Promise<number | null>((resolve) => {
    child.stdout.on('data', (d) => {
      out += d;
      // the first finished block's line came through the pipe: interrupt
      if (/^[✓✗] /m.test(out) && !child.killed) child.kill('SIGINT');
    });
    child.on('close', (c) => resolve(c));
  });
  assert.equal(code, 130, err);
  // the harvest before the first block's line said what it was doing, into the pipe
  assert.match(err, /^witnesses of examples: running its own model builds, tests and examples/m);
  assert.match(err, /^witnesses of examples: \d+ classes from \d+ entry points in /m);
  assert.match(err, /interrupted — (\d+) of \d+ blocks finished and kept/);
  const kept = Number(/interrupted — (\d+)/.exec(err)![1]);
  assert.ok(kept >= 1);
  const ws = api.Workspace.open(store);
  try {
    const stored = listExtractions(ws.store);
    const done = stored.filter((e) => e.status !== 'extracted');
    assert.ok(done.length >= kept, `${done.length} validated or failed blocks stored, ${kept} reported`);
  } finally {
    ws.close();
  }
});

test('results per environment: a run in another environment adds its verdict, a failure there does not demote; --env filters', {
  skip,
}, async () => {
  // a second, real environment: a virtual environment over the same interpreter with one
  // more distribution (its own id), readable by the sandbox's user
  const root = tempDir();
  chmodSync(root, 0o755);
  const venv = path.join(root, 'venv');
  execFileSync(PY, ['-m', 'venv', '--system-site-packages', '--without-pip', venv]);
  const site = execFileSync(
    path.join(venv, 'bin', 'python'),
    ['-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'],
    { encoding: 'utf8' },
  ).trim();
  mkdirSync(site, { recursive: true });
  writeFileSync(path.join(site, 'nnrag_fixture_helper.py'), 'def twice(x):\n    return x * 2\n');
  mkdirSync(path.join(site, 'nnrag_fixture_helper-1.2.3.dist-info'));
  writeFileSync(
    path.join(site, 'nnrag_fixture_helper-1.2.3.dist-info', 'METADATA'),
    'Metadata-Version: 2.1\nName: nnrag-fixture-helper\nVersion: 1.2.3\n',
  );
  execFileSync('chmod', ['-R', 'a+rX', root]);
  const store = path.join(root, 'store');
  const cli = (...args: string[]) =>
    spawnSync(process.execPath, [nnragBin, ...args, '--store', store], { encoding: 'utf8' });
  const inVenv = cli(
    'extract',
    '--repo',
    fixtureRepo('envs'),
    '--block',
    'Helped',
    '--python',
    path.join(venv, 'bin', 'python'),
    '--json',
  );
  assert.equal(inVenv.status, 0, inVenv.stderr + inVenv.stdout);
  const onHost = cli('validate', 'Helped', '--python', PY, '--json');
  assert.equal(onHost.status, 0, `it passed in the virtual environment, so it stays validated: ${onHost.stderr}`);
  const [rec] = JSON.parse(onHost.stdout) as api.BlockRecord[];
  const envs = Object.values(rec.validations!);
  assert.equal(envs.length, 2, 'the host run added its verdict');
  const venvEnv = envs.find((e) => e.ok)!;
  const hostEnv = envs.find((e) => !e.ok)!;
  assert.ok(venvEnv.label.startsWith(venv), venvEnv.label);
  assert.equal(hostEnv.category, 'missing-extern');
  assert.equal(rec.validation!.envId, venvEnv.envId, 'the validation shown is the one that passed');
  assert.ok(existsSync(path.join(store, 'library', 'blocks', 'pkg.uses_helper.Helped.py')), 'still in blocks/');
  assert.ok(
    venvEnv.environment!.distributions!.includes('nnrag-fixture-helper==1.2.3'),
    JSON.stringify(venvEnv.environment),
  );
  // export pins what was tested where it passed
  const proj = tempDir();
  const exp = cli('export', 'Helped', '--into', proj, '--json');
  assert.equal(exp.status, 0, exp.stderr);
  assert.ok(JSON.parse(exp.stdout).added.includes('nnrag-fixture-helper>=1.2.3'), exp.stdout);
  // --env: by id prefix and by label
  const rep = cli('report', '--no-dedup', '--env', venvEnv.envId.slice(0, 8), '--json');
  assert.equal(rep.status, 0, rep.stderr);
  assert.equal(JSON.parse(rep.stdout).totals.validated, 1);
  const repHost = JSON.parse(cli('report', '--no-dedup', '--env', hostEnv.envId, '--json').stdout);
  assert.equal(repHost.totals.validated, 0);
  assert.equal(repHost.totals.failed, 1);
  assert.equal(repHost.environments.length, 2);
  assert.equal(JSON.parse(cli('search', 'helped', '--env', venv, '--json').stdout).hits.length, 1);
  assert.equal(
    JSON.parse(cli('search', 'helped', '--env', hostEnv.envId, '--json').stdout).hits.length,
    0,
    'failed there',
  );
  assert.equal(JSON.parse(cli('search', 'helped', '--env', hostEnv.envId, '--all', '--json').stdout).hits.length, 1);
  const bad = cli('search', 'helped', '--env', 'no-such-environment');
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /names no environment.*environments: /);
});

test('every installed dependency with an install script is declared in package.json allowScripts (npm 11 warns otherwise)', () => {
  const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
    allowScripts?: Record<string, boolean>;
  };
  const nm = path.join(repoRoot, 'node_modules');
  const withScripts: string[] = [];
  const look = (dir: string, name: string) => {
    try {
      const p = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
        scripts?: Record<string, string>;
      };
      if (['preinstall', 'install', 'postinstall'].some((s) => p.scripts?.[s])) withScripts.push(name);
    } catch {
      /* not a package */
    }
  };
  for (const e of readdirSync(nm)) {
    if (e.startsWith('.')) continue;
    if (e.startsWith('@')) for (const s of readdirSync(path.join(nm, e))) look(path.join(nm, e, s), `${e}/${s}`);
    else look(path.join(nm, e), e);
  }
  assert.ok(withScripts.includes('better-sqlite3'), withScripts.join());
  for (const name of withScripts)
    assert.equal(pkg.allowScripts?.[name], true, `${name} runs an install script: declare it in allowScripts`);
});
