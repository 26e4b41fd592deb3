// RepoCache against the real git CLI and local bare repositories (file:// URLs, no
// network): sparse blobless clones, update detection, local folders, refused sources,
// and two processes sharing one cache.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { RepoCache, sparsePatterns } from '../../src/repos/cache.js';
import type { ConfiguredRepo } from '../../src/config/repos.js';
import { configuredRepoFromArg } from '../../src/config/repos.js';
import { UsageError } from '../../src/util/errors.js';
import { repoRoot, tempDir } from '../helpers.js';
import { makeRemote, sh, writeFiles, type Remote } from './git-helpers.js';

const spec = (over: Partial<ConfiguredRepo>): ConfiguredRepo => ({
  name: 'acme/nets',
  url: null,
  path: null,
  priority: 1,
  paths: [],
  description: null,
  packageRoots: null,
  ...over,
});

const timmLike = () => ({
  'timm/__init__.py': 'from .layers import Mlp\n',
  'timm/layers/__init__.py': 'from .mlp import Mlp\n',
  'timm/layers/mlp.py': 'import torch.nn as nn\nclass Mlp(nn.Module):\n    pass\n',
  'timm/models/vit.py': 'x = 1\n',
  'timm/layers/weights.pth': Buffer.alloc(4096, 7),
  'timm/layers/table.bin': Buffer.alloc(1024, 1),
  'README.md': '# nets\n',
  'train.py': 'print(1)\n',
});

let sharedRemote: Remote | undefined;
/** One timm-like remote for the tests that never push to it (creating one costs ~0.3 s). */
const shared = () => (sharedRemote ??= makeRemote(timmLike()));

/** Files in a work tree, excluding .git. */
function tree(root: string): string[] {
  const out: string[] = [];
  const walk = (d: string, rel: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.name === '.git') continue;
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(path.join(d, e.name), r);
      else out.push(r);
    }
  };
  walk(root, '');
  return out.sort();
}

test('clones shallow, blobless and sparse: only .py files inside the paths, no weights', async () => {
  const remote = shared();
  const cache = new RepoCache(tempDir());
  const co = await cache.prepare(spec({ url: remote.url, paths: ['timm/layers'] }));
  assert.equal(co.action, 'cloned');
  assert.equal(co.local, false);
  assert.equal(co.revision, sh(remote.work, 'rev-parse', 'HEAD'));
  assert.equal(co.originUrl, remote.url);
  // the ancestor timm/__init__.py comes along so that the package root is detectable
  assert.deepEqual(tree(co.root), ['timm/__init__.py', 'timm/layers/__init__.py', 'timm/layers/mlp.py']);
  assert.deepEqual(co.packageRoots, ['']);
  assert.equal(sh(co.root, 'rev-parse', '--is-shallow-repository'), 'true');
  // blobless: the blobs of the weights were never fetched into the object store
  const missing = sh(co.root, 'rev-list', '--objects', '--all', '--missing=print')
    .split('\n')
    .filter((l) => l.startsWith('?'));
  const pth = sh(remote.work, 'rev-parse', 'HEAD:timm/layers/weights.pth');
  assert.ok(missing.includes(`?${pth}`), `weights blob should be missing, got ${missing.join(',')}`);
  // no temporary folder or lock left in the cache
  assert.deepEqual(
    readdirSync(cache.cacheDir).filter((n) => n.includes('.tmp-') || n.endsWith('.lock')),
    [],
  );
});

test('without paths every .py file is checked out and nothing else', async () => {
  const remote = shared();
  const co = await new RepoCache(tempDir()).prepare(spec({ url: remote.url }));
  assert.deepEqual(tree(co.root), [
    'timm/__init__.py',
    'timm/layers/__init__.py',
    'timm/layers/mlp.py',
    'timm/models/vit.py',
    'train.py',
  ]);
});

test('update: a new remote commit gives a new revision; the same head does not fetch', async () => {
  const remote = makeRemote(timmLike());
  const cache = new RepoCache(tempDir());
  const s = spec({ url: remote.url, paths: ['timm/'] });
  const first = await cache.prepare(s);
  const fetchHead = path.join(first.root, '.git', 'FETCH_HEAD');

  const same = await cache.prepare(s, { update: true });
  assert.equal(same.action, 'unchanged');
  assert.equal(same.revision, first.revision);
  assert.equal(existsSync(fetchHead), false, 'no fetch when the remote head did not move');

  const next = remote.commit({ 'timm/layers/new_block.py': 'class New: pass\n' });
  const cached = await cache.prepare(s); // without update: stays on the recorded revision
  assert.equal(cached.revision, first.revision);
  const updated = await cache.prepare(s, { update: true });
  assert.equal(updated.action, 'updated');
  assert.equal(updated.revision, next);
  assert.ok(existsSync(path.join(updated.root, 'timm/layers/new_block.py')));
  assert.ok(!existsSync(path.join(updated.root, 'timm/layers/weights.pth')));
});

test('changing the configured paths re-applies the sparse checkout', async () => {
  const remote = shared();
  const cache = new RepoCache(tempDir());
  const a = await cache.prepare(spec({ url: remote.url, paths: ['timm/models'] }));
  assert.deepEqual(tree(a.root), ['timm/__init__.py', 'timm/models/vit.py']);
  const b = await cache.prepare(spec({ url: remote.url, paths: ['timm/layers/mlp.py'] }));
  assert.equal(b.root, a.root);
  assert.deepEqual(tree(b.root), ['timm/__init__.py', 'timm/layers/__init__.py', 'timm/layers/mlp.py']);
});

test('sparse patterns select .py files only, with module-form and ancestor __init__.py', () => {
  assert.deepEqual(sparsePatterns([]), ['*.py']);
  assert.deepEqual(sparsePatterns(['src/transformers/models/bert']), [
    '/src/transformers/models/bert.py',
    '/src/transformers/models/bert/**/*.py',
    '/src/__init__.py',
    '/src/transformers/__init__.py',
    '/src/transformers/models/__init__.py',
  ]);
  for (const p of sparsePatterns(['weights', 'models/*', 'x.py'])) assert.match(p, /\.py$/);
});

test('a local git work tree is used in place with its HEAD revision', async () => {
  const remote = shared();
  const co = await new RepoCache(tempDir()).prepare(spec({ path: remote.work }));
  assert.equal(co.action, 'local');
  assert.equal(co.local, true);
  assert.equal(co.root, remote.work);
  assert.equal(co.revision, sh(remote.work, 'rev-parse', 'HEAD'));
  // timm/models has no __init__.py: a namespace package inside timm (PEP 420), run from the root
  assert.deepEqual(co.packageRoots, ['']);
});

test('a plain folder is used in place with no revision; config package roots override detection', async () => {
  const dir = tempDir();
  writeFiles(dir, { 'scripts/a.py': 'x = 1\n', 'src/pkg/__init__.py': '', 'src/pkg/m.py': '' });
  const cache = new RepoCache(tempDir());
  const co = await cache.prepare(spec({ path: dir }));
  assert.equal(co.revision, null);
  assert.equal(co.originUrl, null);
  // scripts/ holds modules (a namespace package under the root); src/ only a regular package
  assert.deepEqual(co.packageRoots, ['', 'src']);
  const forced = await cache.prepare(spec({ path: dir, packageRoots: [''] }));
  assert.deepEqual(forced.packageRoots, ['']);
});

test('a local bare repository path is cloned (depth 1 through file://)', async () => {
  const remote = makeRemote(timmLike());
  remote.commit({ 'timm/layers/more.py': 'y = 2\n' });
  const s = configuredRepoFromArg(remote.bare);
  assert.equal(s.url, pathToFileURL(remote.bare).href);
  assert.equal(s.name, 'remote');
  const co = await new RepoCache(tempDir()).prepare(s);
  assert.equal(co.action, 'cloned');
  assert.equal(co.local, false);
  assert.equal(sh(co.root, 'rev-list', '--count', 'HEAD'), '1', 'shallow: one commit of two');
  assert.ok(existsSync(path.join(co.root, 'timm/layers/more.py')));
});

test('dangerous sources are refused before git runs', async () => {
  const cache = new RepoCache(tempDir());
  const marker = path.join(tempDir(), 'pwned');
  for (const url of [
    `ext::sh -c touch% ${marker}`,
    'fd::17',
    'foo::https://example.com/x',
    '-u',
    `--upload-pack=touch ${marker}`,
    'https://example.com/a b',
    'https://example.com/a\nb',
    'ssh://-oProxyCommand=touch/x',
    'gopher://example.com/x',
  ]) {
    await assert.rejects(cache.prepare(spec({ url })), UsageError, url);
    assert.throws(() => configuredRepoFromArg(url), UsageError, url);
  }
  assert.equal(existsSync(marker), false);
});

test('a missing remote is a clear error and leaves nothing behind', async () => {
  const cache = new RepoCache(tempDir());
  const url = pathToFileURL(path.join(tempDir(), 'nope.git')).href;
  await assert.rejects(cache.prepare(spec({ url })), /cannot clone/);
  assert.deepEqual(readdirSync(cache.cacheDir), []);
});

test('leftovers of a killed clone and a stale lock are cleaned up', async () => {
  const remote = shared();
  const cacheDir = tempDir();
  const cache = new RepoCache(cacheDir);
  const s = spec({ url: remote.url });
  const { cacheKey } = await import('../../src/repos/cache.js');
  const key = cacheKey(s.name, remote.url);
  // a half clone and a lock whose owner process is dead
  mkdirSync(path.join(cacheDir, `${key}.tmp-999999-dead`, '.git'), { recursive: true });
  mkdirSync(path.join(cacheDir, `${key}.lock`));
  writeFileSync(
    path.join(cacheDir, `${key}.lock`, 'owner.json'),
    JSON.stringify({ pid: 2 ** 22 + 12345, host: (await import('node:os')).hostname(), token: 'x', since: Date.now() }),
  );
  const co = await cache.prepare(s);
  assert.equal(co.action, 'cloned');
  assert.deepEqual(readdirSync(cacheDir), [key]);
});

test('two processes preparing the same repository both succeed and share one checkout', async () => {
  const remote = shared();
  const cacheDir = tempDir();
  const mod = pathToFileURL(path.join(repoRoot, 'dist', 'src', 'repos', 'cache.js')).href;
  const code = `
    const { RepoCache } = await import(${JSON.stringify(mod)});
    const co = await new RepoCache(process.argv[1]).prepare({ name: 'acme/nets', url: process.argv[2], path: null,
      priority: 1, paths: ['timm/layers'], description: null, packageRoots: null });
    console.log(JSON.stringify(co));`;
  const run = () =>
    new Promise<{ root: string; revision: string; action: string }>((resolve, reject) => {
      execFile(process.execPath, ['--input-type=module', '-e', code, cacheDir, remote.url], (err, stdout, stderr) =>
        err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout)),
      );
    });
  const [a, b] = await Promise.all([run(), run()]);
  assert.equal(a.root, b.root);
  assert.equal(a.revision, b.revision);
  assert.deepEqual([a.action, b.action].sort(), ['cloned', 'unchanged']);
  assert.deepEqual(readdirSync(cacheDir), [path.basename(a.root)]);
  assert.deepEqual(tree(a.root), ['timm/__init__.py', 'timm/layers/__init__.py', 'timm/layers/mlp.py']);
  assert.equal(sh(a.root, 'status', '--porcelain'), '');
  assert.ok(statSync(path.join(a.root, '.git', 'nnrag-state.json')).isFile());
});

test('a checkout left mid-update by a killed process is restored on the next prepare', async () => {
  const remote = shared();
  const cache = new RepoCache(tempDir());
  const s = spec({ url: remote.url, paths: ['timm/layers'] });
  const co = await cache.prepare(s);
  const stateFile = path.join(co.root, '.git', 'nnrag-state.json');
  const state = JSON.parse(readFileSync(stateFile, 'utf8'));
  writeFileSync(stateFile, JSON.stringify({ ...state, complete: false }));
  rmSync(path.join(co.root, 'timm/layers/mlp.py'));
  writeFileSync(path.join(co.root, '.git', 'index.lock'), '');
  const again = await cache.prepare(s);
  assert.equal(again.revision, co.revision);
  assert.ok(existsSync(path.join(co.root, 'timm/layers/mlp.py')));
  assert.equal(JSON.parse(readFileSync(stateFile, 'utf8')).complete, true);
});

test('waiting for a lock held by a live process times out with a clear error', async () => {
  const cacheDir = tempDir();
  const remote = shared();
  const s = spec({ url: remote.url });
  const { cacheKey } = await import('../../src/repos/cache.js');
  const lock = path.join(cacheDir, `${cacheKey(s.name, remote.url)}.lock`);
  mkdirSync(lock);
  const host = (await import('node:os')).hostname();
  writeFileSync(
    path.join(lock, 'owner.json'),
    JSON.stringify({ pid: process.pid, host, token: 'other', since: Date.now() }),
  );
  await assert.rejects(
    new RepoCache(cacheDir, { timeoutMs: 150 }).prepare(s),
    /timed out .* waiting for lock .*held by pid/,
  );
  assert.ok(existsSync(lock), 'a live lock is never broken');
});
