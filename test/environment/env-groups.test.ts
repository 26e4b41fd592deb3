// Which group of an environment folder validates a repository's blocks (pypi.ts envGroups):
// the group made for it, else the shared one, never a group that only installs it for
// another repository (the manifest below has the shape `env create --store` writes for the
// reference corpus: mmocr's and mmpose's groups both install mmengine's checkout).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { envFor, envGroups, manifestPath } from '../../src/environment/pypi.js';
import { tempDir } from '../helpers.js';

function manifest(dir: string, groups: { name: string; repos: string[] }[]): void {
  const group = (g: { name: string; repos: string[] }) => ({
    name: g.name,
    dir: g.name === 'shared' ? dir : path.join(dir, 'repos', g.name.replace(/\//g, '__')),
    repos: g.repos,
    requirements: [],
    lockDigest: '0',
    pins: [],
    native: [],
    indexed: [],
  });
  writeFileSync(
    manifestPath(dir),
    JSON.stringify({ version: 1, backend: 'pypi', basePython: '/usr/bin/python3', groups: groups.map(group) }),
  );
}

test('a repository another group installs validates in its own group or the shared one', () => {
  const dir = tempDir();
  manifest(dir, [
    { name: 'shared', repos: ['acme/engine', 'acme/vision'] },
    { name: 'acme/ocr', repos: ['acme/ocr', 'acme/engine', 'acme/helper'] },
    { name: 'acme/pose', repos: ['acme/pose', 'acme/engine'] },
  ]);
  const of = envGroups(dir);
  // listed by the shared group and by two groups of others: the shared group (was
  // acme/pose's, the last group listing it)
  assert.equal(of('acme/engine'), dir);
  assert.equal(of('acme/ocr'), path.join(dir, 'repos', 'acme__ocr'));
  assert.equal(envFor(dir, 'acme/pose'), path.join(dir, 'repos', 'acme__pose'));
  assert.equal(of('acme/vision'), dir);
  // only a group of another repository installs it: that group (the shared one lacks it)
  assert.equal(of('acme/helper'), path.join(dir, 'repos', 'acme__ocr'));
  // not in the manifest, or no repository: the shared group
  assert.equal(of('acme/other'), dir);
  assert.equal(of(undefined), dir);
});

test('a repository whose own group did not resolve validates in the shared group', () => {
  const dir = tempDir();
  // env create moved it into the shared group; another group still installs it
  manifest(dir, [
    { name: 'shared', repos: ['acme/engine', 'acme/lib'] },
    { name: 'acme/app', repos: ['acme/app', 'acme/lib'] },
  ]);
  assert.equal(envFor(dir, 'acme/lib'), dir);
  assert.equal(envFor(dir, 'acme/app'), path.join(dir, 'repos', 'acme__app'));
});
