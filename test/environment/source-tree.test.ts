// The tree an indexed repository is installed from (src/environment/source-tree.ts), with
// real git: a whole checkout is used as it is; a sparse checkout that leaves out a file
// the build needs (the LICENSE a pyproject names) gives the whole tree at its revision,
// with the checkout's modified tracked files laid over it; a partial clone that lacks the
// left-out files' objects is used as it is, with the reason, without fetching them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { installableTree } from '../../src/environment/source-tree.js';
import { tempDir } from '../helpers.js';

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-C', cwd, '-c', 'user.name=t', '-c', 'user.email=t@example.org', ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });

function repository(root: string): string {
  const files: Record<string, string> = {
    'pyproject.toml': '[project]\nname = "nnragfix-tree"\nversion = "1.0"\nlicense = {file = "LICENSE"}\n',
    LICENSE: 'MIT\n',
    'nnragfix_tree/__init__.py': 'VALUE = 1\n',
    'nnragfix_tree/ops/kernel.h': '#pragma once\n',
  };
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    writeFileSync(path.join(root, rel), text);
  }
  git(root, 'init', '-q', '-b', 'main');
  git(root, 'add', '.');
  git(root, 'commit', '-q', '-m', 'first');
  return root;
}

test('a whole checkout is installed as it is', async () => {
  const repo = repository(path.join(tempDir('nnrag-tree-'), 'repo'));
  const t = await installableTree(repo);
  assert.equal(t.dir, repo);
  assert.equal(t.exported, undefined);
  t.dispose();
  assert.ok(existsSync(path.join(repo, 'LICENSE')), 'the checkout is never removed');
});

test('a sparse checkout is installed from the whole tree at its revision, its modified files laid over it', async () => {
  const repo = repository(path.join(tempDir('nnrag-tree-'), 'repo'));
  const rev = git(repo, 'rev-parse', 'HEAD').trim();
  git(repo, 'sparse-checkout', 'set', '--no-cone', '/pyproject.toml', '*.py');
  assert.ok(!existsSync(path.join(repo, 'LICENSE')) && !existsSync(path.join(repo, 'nnragfix_tree/ops/kernel.h')));
  writeFileSync(path.join(repo, 'nnragfix_tree/__init__.py'), 'VALUE = 2  # as indexed\n');
  const t = await installableTree(repo);
  try {
    assert.notEqual(t.dir, repo);
    assert.deepEqual(t.exported, { revision: rev, missingInCheckout: 2 });
    assert.equal(readFileSync(path.join(t.dir, 'LICENSE'), 'utf8'), 'MIT\n');
    assert.ok(existsSync(path.join(t.dir, 'nnragfix_tree/ops/kernel.h')));
    assert.equal(readFileSync(path.join(t.dir, 'nnragfix_tree/__init__.py'), 'utf8'), 'VALUE = 2  # as indexed\n');
    assert.ok(!existsSync(path.join(t.dir, '.git')));
  } finally {
    t.dispose();
  }
  assert.ok(!existsSync(t.dir), 'the exported tree is removed');
  // a folder inside the checkout (a nested package of operators) maps into the tree
  const sub = await installableTree(path.join(repo, 'nnragfix_tree'));
  try {
    assert.ok(existsSync(path.join(sub.dir, 'ops', 'kernel.h')));
  } finally {
    sub.dispose();
  }
});

test('a sparse checkout of a partial clone that lacks the objects is used as it is, with the reason, nothing fetched', async () => {
  const dir = tempDir('nnrag-tree-');
  const repo = repository(path.join(dir, 'repo'));
  git(repo, 'config', 'uploadpack.allowFilter', 'true');
  const clone = path.join(dir, 'clone');
  execFileSync('git', ['clone', '-q', '--filter=blob:none', '--no-checkout', `file://${repo}`, clone], {
    stdio: 'ignore',
  });
  git(clone, 'sparse-checkout', 'set', '--no-cone', '*.py', '/pyproject.toml');
  git(clone, 'checkout', '-q', 'main');
  assert.ok(existsSync(path.join(clone, 'nnragfix_tree/__init__.py')) && !existsSync(path.join(clone, 'LICENSE')));
  // the origin is gone: a fetch on demand could not even be tried
  git(clone, 'remote', 'set-url', 'origin', `file://${path.join(dir, 'gone')}`);
  const t = await installableTree(clone);
  assert.equal(t.dir, clone);
  assert.equal(t.exported, undefined);
  assert.match(t.incomplete ?? '', /sparse checkout \(2 tracked files not in it\) of a clone that lacks 2 objects/);
  assert.ok(t.incomplete?.includes(clone));
  // a clone whose object store lacks them without being a partial clone: git archive
  // cannot read them, and the checkout is used as it is too
  git(clone, 'config', '--unset', 'remote.origin.promisor');
  const u = await installableTree(clone);
  assert.equal(u.dir, clone);
  assert.match(u.incomplete ?? '', /lacks objects/);
});
