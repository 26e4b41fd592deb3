// `nnrag env create/sync --store`: a real Debian root filesystem (debootstrap, a small
// package set: python3 only, no torch) gets what a repository declares, through apt in
// the root filesystem; a distribution Debian does not package is named, not dropped; the
// package set is part of the environment id. Runs wherever it can (root, debootstrap,
// bubblewrap, a reachable Debian mirror), else skips saying which is missing.
// debootstrap's downloads are kept in a cache folder between runs.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { checkRootfs, environmentId } from '../../src/validate/index.js';
import { createRootfs } from '../../src/environment/rootfs.js';
import {
  debianCandidatesFor,
  installedDebianPackages,
  packageSetDigest,
  readManifest,
  storeNeeds,
  syncEnvironment,
} from '../../src/environment/debian.js';
import { repositoryRequirements } from '../../src/environment/repo-requirements.js';
import { which } from '../../src/validate/environment.js';
import { initParser } from '../../src/parse/parser.js';
import { fixture, tempDir } from '../helpers.js';
import { needsSandbox } from '../support/tier.js';

const MIRROR = 'http://deb.debian.org/debian';

async function reachable(url: string): Promise<boolean> {
  try {
    const r = await fetch(url, { method: 'HEAD', signal: AbortSignal.timeout(8000) });
    return r.ok;
  } catch {
    return false;
  }
}

let skip: string | false = false;
before(async () => {
  await initParser();
  if (needsSandbox()) skip = needsSandbox();
  else if (process.getuid?.() !== 0) skip = 'needs root (debootstrap, apt-get in a chroot)';
  else if (!which('debootstrap')) skip = 'debootstrap is not installed';
  else if (!which('bwrap')) skip = 'bubblewrap is not installed';
  else if (!(await reachable(`${MIRROR}/dists/trixie/Release`))) skip = `${MIRROR} is not reachable`;
});

test('Debian package candidates: dh-python table, the distribution, the import name', () => {
  assert.deepEqual(debianCandidatesFor({ distribution: 'PyYAML', modules: ['yaml'] }), ['python3-yaml']);
  assert.deepEqual(debianCandidatesFor({ distribution: 'scikit-learn', modules: ['sklearn'] })[0], 'python3-sklearn');
  assert.deepEqual(debianCandidatesFor({ distribution: 'opencv-python', modules: ['cv2'] }), [
    'python3-opencv-python',
    'python3-cv2',
  ]);
});

test('needs: imports and install requirements without markers; an indexed repository provides its own', () => {
  const reqs = repositoryRequirements(
    [{ name: 'small', root: fixture('envsync', 'smallrepo') }],
    [{ repo: 'small', externs: ['six', 'torch.nn', 'timm.layers', 'os'] }],
    (m) => m,
    (m) => m === 'os',
  );
  const needs = storeNeeds(reqs, new Map([['timm', 'huggingface/pytorch-image-models']]));
  const by = Object.fromEntries(needs.map((n) => [n.distribution, n]));
  assert.deepEqual(Object.keys(by).sort(), ['nnrag-fixture-no-such-dist', 'six', 'timm', 'torch']);
  assert.equal(by.six.neededBy.length, 2, 'imported and declared');
  assert.equal(by.timm.indexedBy, 'huggingface/pytorch-image-models');
  assert.equal(by.six.indexedBy, undefined);
});

test('env create with a small package set, then sync from a store: installed, named when missing, id changes', {
  timeout: 20 * 60_000,
}, async (t) => {
  if (skip) return t.skip(skip);
  const work = tempDir('nnrag-env-sync-');
  chmodSync(work, 0o755); // the sandbox's user must reach the root filesystem
  const dir = path.join(work, 'rootfs');
  const cacheDir = path.join(tmpdir(), 'nnrag-debootstrap-cache');
  mkdirSync(cacheDir, { recursive: true });
  await createRootfs(dir, { base: ['python3'], cacheDir, mirror: MIRROR, check: checkRootfs });
  const probe = { realpath: '/usr/bin/python3' } as never;
  const id = () =>
    environmentId({ python: '/usr/bin/python3', pythonVersion: '3', torch: '-', sandbox: true, rootfs: dir, probe });
  const id0 = id();
  const digest0 = packageSetDigest(dir);
  assert.ok(!installedDebianPackages(dir).some((p) => p.startsWith('python3-six=')));

  const reqs = repositoryRequirements(
    [{ name: 'small', root: fixture('envsync', 'smallrepo') }],
    [],
    (m) => m,
    () => false,
  );
  const r = await syncEnvironment(dir, storeNeeds(reqs), {});
  assert.deepEqual(r.installed, ['python3-six']);
  assert.notEqual(r.after, digest0);
  assert.notEqual(id(), id0, 'the environment id follows the package set');
  const m = readManifest(dir)!;
  const by = Object.fromEntries(m.entries.map((e) => [e.distribution, e]));
  assert.equal(by.six.status, 'installed');
  assert.equal(by.six.package, 'python3-six');
  assert.equal(by['nnrag-fixture-no-such-dist'].status, 'no-package', 'named, not dropped');
  assert.equal(by.pytest, undefined, 'a requirement with a marker is conditional');
  assert.deepEqual(
    r.missing.map((e) => e.distribution),
    ['nnrag-fixture-no-such-dist'],
  );
  // it imports inside the root filesystem
  assert.equal(
    execFileSync('chroot', [dir, 'python3', '-c', 'import six; print(six.__name__)'], {
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
    })
      .toString()
      .trim(),
    'six',
  );

  // a second sync with nothing new: nothing installed, same id
  const id1 = id();
  const again = await syncEnvironment(dir, storeNeeds(reqs), {});
  assert.deepEqual(again.installed, []);
  assert.equal(again.before, again.after);
  assert.equal(id(), id1);
  assert.equal(readManifest(dir)!.entries.find((e) => e.distribution === 'six')!.status, 'present');
  assert.ok(JSON.parse(readFileSync(path.join(dir, 'var/lib/nnrag/environment.json'), 'utf8')).updated);
});
