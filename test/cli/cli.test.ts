// The command line as a user runs it: exit codes (0 ok, 1 failure in the work, 2 bad
// usage), --json output, --names-json, bare names, refused repository sources.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { repoRoot, tempDir } from '../helpers.js';

const bin = path.join(repoRoot, 'dist', 'src', 'cli', 'bin.js');
function nnrag(...args: string[]) {
  const r = spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', cwd: repoRoot });
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
    const blocks = JSON.parse(r.stdout) as { id: string; name: string; module: string; repo: string; path: string; line: number; bases: string[] }[];
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
    const r = nnrag('extract', '--store', store, '--blocks', 'WindowAttention', 'tinyvision.models.mixer.Mlp', '--no-validate', '--out', out, '--json');
    assert.equal(r.code, 0, r.stderr);
    const recs = JSON.parse(r.stdout) as { id: string; file: string; ok: boolean; lines: number; interned: string[]; externs: string[] }[];
    assert.deepEqual(recs.map((x) => x.id), ['tinyvision.layers.attention.WindowAttention', 'tinyvision.models.mixer.Mlp']);
    for (const rec of recs) {
      assert.ok(rec.ok);
      assert.ok(existsSync(rec.file));
      assert.ok(rec.file.startsWith(out));
      assert.ok(rec.externs.includes('torch'));
    }
    const bad = nnrag('extract', '--store', store, '--block', 'NoSuchBlock', '--no-validate');
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /no block named "NoSuchBlock"/);
    // Mlp is ambiguous: a usage error that lists the candidates with their repositories
    const amb = nnrag('extract', '--store', store, '--block', 'Mlp', '--no-validate', '--out', out);
    assert.equal(amb.code, 2, amb.stderr);
    assert.match(amb.stderr, /"Mlp" is ambiguous/);
    assert.match(amb.stderr, /tinyvision\.layers\.mlp\.Mlp +\(\S+, tinyvision\/layers\/mlp\.py:\d+\)/);
    assert.match(amb.stderr, /tinyvision\.models\.mixer\.Mlp +\(\S+, tinyvision\/models\/mixer\.py:\d+\)/);
  });
});
