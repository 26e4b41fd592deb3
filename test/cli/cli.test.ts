// The command line as a user runs it: exit codes (0 ok, 1 failure in the work, 2 bad
// usage), --json output, --names-json, bare names, refused repository sources.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, existsSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { repoRoot, tempDir } from '../helpers.js';

const bin = path.join(repoRoot, 'dist', 'src', 'cli', 'bin.js');
function nnrag(...args: string[]) {
  const r = spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', cwd: repoRoot, timeout: 60000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function nnragInput(input: string, ...args: string[]) {
  const r = spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', cwd: repoRoot, input, timeout: 60000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('cli', () => {
  const store = tempDir();
  before(() => {
    const r = nnrag('index', '--repo', path.join(repoRoot, 'examples'), '--store', store, '--json');
    assert.equal(r.code, 0, r.stderr);
  });

  it('prints help and rejects bad usage with exit code 2', () => {
    assert.equal(nnrag('--help').code, 0);
    assert.match(nnrag('--help').stdout, /extract/);
    assert.equal(nnrag('frobnicate').code, 2);
    assert.equal(nnrag('discover', '--no-such-flag').code, 2);
    assert.equal(nnrag('index', '--mode', 'sometimes', '--store', store).code, 2);
    assert.equal(nnrag('extract', '--store', store).code, 2);
    // env create's dates: a date that is not one, or both --as-of and --no-as-of, before
    // anything is made
    const envDir = path.join(tempDir(), 'env');
    const badDate = nnrag('env', 'create', envDir, '--as-of', 'last year');
    assert.equal(badDate.code, 2, badDate.stderr);
    assert.match(badDate.stderr, /--as-of: "last year" is not a date/);
    assert.equal(nnrag('env', 'create', envDir, '--as-of', '2024-01-01', '--no-as-of').code, 2);
    assert.equal(existsSync(envDir), false);
    // `witnesses --repo R` as its usage says: an unknown repository is bad usage; a known
    // one with no stored harvest is listed as such (exit 1: nothing harvested)
    assert.equal(nnrag('witnesses', '--repo', 'no/such', '--show', '--store', store).code, 2);
    const shown = nnrag('witnesses', '--repo', 'examples', '--show', '--store', store, '--json');
    assert.equal(shown.code, 1, shown.stderr);
    assert.deepEqual(
      JSON.parse(shown.stdout).map((x: { repo: string }) => x.repo),
      ['examples'],
    );
  });

  it('index runs the same whether it comes first (the short way, bin.ts) or after common options (main.ts)', () => {
    const first = tempDir();
    const after = tempDir();
    const a = nnrag('index', '--repo', path.join(repoRoot, 'examples'), '--store', first, '--json');
    const b = nnrag('--store', after, '--json', 'index', '--repo', path.join(repoRoot, 'examples'));
    assert.equal(a.code, 0, a.stderr);
    assert.equal(b.code, 0, b.stderr);
    const brief = (out: string) => {
      const { runId: _r, timings: _t, ...rest } = JSON.parse(out);
      return rest;
    };
    assert.deepEqual(brief(b.stdout), brief(a.stdout));
    assert.equal(brief(a.stdout).parsed, 15, 'a cold index parses every file');
    // bad usage is exit 2 either way, --help prints the same usage
    assert.equal(nnrag('--store', after, 'index', '--mode', 'sometimes').code, 2);
    assert.equal(nnrag('index', '--help').stdout, nnrag('--store', after, 'index', '--help').stdout);
  });

  it('refuses dangerous repository sources', () => {
    for (const src of ['ext::sh -c touch% /tmp/pwned', '--upload-pack=touch /tmp/pwned', 'fd::17']) {
      const r = nnrag('index', '--repo', src, '--store', store);
      assert.equal(r.code, 2, `${src}: ${r.stderr}`);
      assert.match(r.stderr, /refus|not allowed|dangerous|option/i);
    }
  });

  it('index --json and stats --json report files and timings', () => {
    const r = nnrag('index', '--store', store, '--json');
    assert.equal(r.code, 0, r.stderr);
    const rep = JSON.parse(r.stdout);
    assert.equal(rep.files, 15);
    assert.equal(rep.parsed, 0, 'nothing changed, nothing parsed');
    const s = JSON.parse(nnrag('stats', '--store', store, '--json').stdout);
    assert.equal(s.files, 15);
    assert.ok(s.lastRun.timings.total >= 0);
  });

  it('discover --json prints the block records and --names-json the bare names', () => {
    const names = path.join(tempDir(), 'names.json');
    const r = nnrag('discover', '--store', store, '--json', '--names-json', names);
    assert.equal(r.code, 0, r.stderr);
    const blocks = JSON.parse(r.stdout) as {
      id: string;
      name: string;
      module: string;
      repo: string;
      path: string;
      line: number;
      bases: string[];
    }[];
    assert.equal(blocks.length, 13);
    const b = blocks.find((x) => x.id === 'tinyvision.models.variants.ResBottleneck')!;
    assert.deepEqual(Object.keys(b).sort(), ['bases', 'id', 'line', 'module', 'name', 'path', 'repo']);
    assert.equal(b.path, 'tinyvision/models/variants.py');
    const list = JSON.parse(readFileSync(names, 'utf8')) as string[];
    // bare names, except where several blocks share one: their ids
    const count = new Map<string, number>();
    for (const x of blocks) count.set(x.name, (count.get(x.name) ?? 0) + 1);
    assert.deepEqual(list, [...new Set(blocks.map((x) => (count.get(x.name) === 1 ? x.name : x.id)))].sort());
    assert.ok(list.includes('tinyvision.layers.mlp.Mlp') && !list.includes('Mlp'));
  });

  it('extract --no-validate --json writes standalone modules; bare names resolve, unknown ones fail', () => {
    const out = tempDir();
    const r = nnrag(
      'extract',
      '--store',
      store,
      '--blocks',
      'WindowAttention',
      'tinyvision.models.mixer.Mlp',
      '--no-validate',
      '--out',
      out,
      '--json',
    );
    assert.equal(r.code, 0, r.stderr);
    const recs = JSON.parse(r.stdout) as {
      id: string;
      file: string;
      ok: boolean;
      lines: number;
      interned: string[];
      externs: string[];
    }[];
    assert.deepEqual(
      recs.map((x) => x.id),
      ['tinyvision.layers.attention.WindowAttention', 'tinyvision.models.mixer.Mlp'],
    );
    for (const rec of recs) {
      assert.ok(rec.ok);
      assert.ok(existsSync(rec.file));
      assert.ok(rec.file.startsWith(out));
      assert.ok(rec.externs.includes('torch'));
    }
    const bad = nnrag('extract', '--store', store, '--block', 'NoSuchBlock', '--no-validate');
    assert.equal(bad.code, 2, 'a name that names no block is bad usage (README)');
    assert.match(bad.stderr, /no block named "NoSuchBlock"/);
    // Mlp is ambiguous: a usage error that lists the candidates with their repositories
    const amb = nnrag('extract', '--store', store, '--block', 'Mlp', '--no-validate', '--out', out);
    assert.equal(amb.code, 2, amb.stderr);
    assert.match(amb.stderr, /"Mlp" is ambiguous/);
    assert.match(amb.stderr, /tinyvision\.layers\.mlp\.Mlp +\(\S+, tinyvision\/layers\/mlp\.py:\d+\)/);
    assert.match(amb.stderr, /tinyvision\.models\.mixer\.Mlp +\(\S+, tinyvision\/models\/mixer\.py:\d+\)/);
  });

  it('reads --names-json from standard input with - and /dev/stdin', () => {
    for (const file of ['-', '/dev/stdin']) {
      const r = nnragInput(
        '["WindowAttention"]',
        'extract',
        '--store',
        store,
        '--names-json',
        file,
        '--no-validate',
        '--out',
        tempDir(),
        '--json',
      );
      assert.equal(r.code, 0, `${file}: ${r.stderr}`);
      assert.deepEqual(
        (JSON.parse(r.stdout) as { id: string }[]).map((x) => x.id),
        ['tinyvision.layers.attention.WindowAttention'],
      );
    }
  });

  it('refuses option-like host names hidden behind %-escapes', () => {
    for (const src of ['ssh://%2doProxyCommand=touch%20pwned/x', 'ssh://%2Dx@host/repo', 'git://%2dhost/x']) {
      const r = nnrag('index', '--repo', src, '--store', store);
      assert.equal(r.code, 2, `${src}: ${r.stderr}`);
      assert.match(r.stderr, /starts with "-"/);
    }
  });

  it('range-checks --workers and caps it at the core count unless forced', () => {
    for (const w of ['0', '-2', '1.5', 'many', '100000']) {
      const r = nnrag('index', '--store', store, '--workers', w);
      assert.equal(r.code, 2, `${w}: ${r.stderr}`);
      assert.match(r.stderr, /--workers/);
    }
    const cores = os.availableParallelism();
    const r = nnrag('index', '--store', store, '--workers', String(cores + 7), '--json');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, new RegExp(`using ${cores}`));
    assert.ok(JSON.parse(r.stdout).workers <= cores);
    const forced = nnrag('index', '--store', store, '--workers', String(cores + 1), '--force-workers', '--json');
    assert.equal(forced.code, 0, forced.stderr);
    assert.ok(!/using/.test(forced.stderr), forced.stderr);
  });

  it('fails fast and clearly on a store folder that cannot be created', () => {
    const t0 = Date.now();
    const r = nnrag('index', '--repo', path.join(repoRoot, 'examples'), '--store', '/proc/nnrag-no-such-store');
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /cannot create store folder/);
    assert.ok(Date.now() - t0 < 30000);
  });

  it('says when a repository has no Python files, and names undecodable file names', () => {
    const empty = tempDir();
    const r = nnrag('index', '--repo', empty, '--store', tempDir(), '--json');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /has no Python files/);
    const odd = tempDir();
    writeFileSync(path.join(odd, 'ok.py'), 'x = 1\n');
    writeFileSync(Buffer.concat([Buffer.from(odd + '/bad'), Buffer.from([0xff, 0xfe]), Buffer.from('.py')]), 'y = 2\n');
    const q = nnrag('index', '--repo', odd, '--store', tempDir(), '--json');
    assert.equal(q.code, 0, q.stderr);
    const problems = JSON.parse(q.stdout).problems as { path: string; message?: string; kind?: string }[];
    assert.ok(
      problems.some((p) => /not valid UTF-8/.test(JSON.stringify(p))),
      JSON.stringify(problems),
    );
    assert.ok(!/ENOENT/.test(q.stdout));
  });
});
