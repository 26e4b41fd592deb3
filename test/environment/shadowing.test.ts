// A checkout that shadows an installed package with compiled files (src/environment/
// shadowing.ts): found from the files themselves, by extension module name, and not for
// an editable install (the installed package is the checkout) or a package not installed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { shadowedPackages } from '../../src/environment/shadowing.js';
import { tempDir } from '../helpers.js';

function files(root: string, rels: string[]) {
  for (const rel of rels) {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    writeFileSync(path.join(root, rel), '');
  }
}

test("a checkout lacking an installed release's extension modules shadows it; an editable install does not", () => {
  const dir = tempDir();
  const repo = path.join(dir, 'repo');
  const site = path.join(dir, 'site');
  files(repo, ['vis/__init__.py', 'vis/ops/__init__.py', 'other/__init__.py', 'tool.py']);
  files(site, [
    'vis/__init__.py',
    'vis/_C.cpython-311-x86_64-linux-gnu.so',
    'vis/ops/__init__.py',
    'vis/ops/_ext.so',
    'vis/__pycache__/x.so',
  ]);
  const repos = [{ repo: 'org/vis', root: repo, packages: ['other', 'tool.py', 'vis'] }];
  assert.deepEqual(shadowedPackages(repos, [path.join(dir, 'empty'), site]), [
    {
      repo: 'org/vis',
      package: 'vis',
      installed: path.join(site, 'vis'),
      missing: ['_C.cpython-311-x86_64-linux-gnu.so', 'ops/_ext.so'],
    },
  ]);
  // built in place (another ABI tag names the same module): only what is still missing
  files(repo, ['vis/_C.so']);
  assert.deepEqual(shadowedPackages(repos, [site])[0].missing, ['ops/_ext.so']);
  // an editable install: the installed package is the checkout
  const editable = path.join(dir, 'editable');
  mkdirSync(editable);
  symlinkSync(path.join(repo, 'vis'), path.join(editable, 'vis'));
  assert.deepEqual(shadowedPackages(repos, [editable, site]), []);
  // the checkout has every compiled file: nothing
  files(repo, ['vis/ops/_ext.cpython-311-x86_64-linux-gnu.so']);
  assert.deepEqual(shadowedPackages(repos, [site]), []);
});
