// SWHIDs must equal what real git computes: content ids vs `git hash-object`,
// revision ids vs `git rev-parse HEAD` of a real repository.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from '../helpers.js';
import {
  contentSwhid,
  gitBlobId,
  revisionSwhid,
  parseSwhid,
  qualifiedSwhid,
  originUrl,
} from '../../src/library/swhid.js';

function git(args: string[], cwd?: string): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();
}

test('contentSwhid equals git hash-object for assorted files', () => {
  const dir = tempDir();
  const cases: [string, Buffer][] = [
    ['empty.py', Buffer.alloc(0)],
    ['mod.py', Buffer.from('import torch\nclass A(torch.nn.Module):\n    pass\n')],
    ['unicode.py', Buffer.from('# ünïcödé λ → ✓\nx = "日本"\n', 'utf8')],
    ['crlf.py', Buffer.from('a = 1\r\nb = 2\r\n')],
    ['binary.bin', Buffer.from([0, 1, 2, 255, 254, 0, 10, 13])],
    ['big.py', Buffer.from('x = 1\n'.repeat(50000))],
  ];
  for (const [name, bytes] of cases) {
    const p = path.join(dir, name);
    writeFileSync(p, bytes);
    // --no-filters: hash the bytes as they are, like a blob read from a repository
    const expected = git(['hash-object', '--no-filters', p]);
    assert.equal(contentSwhid(readFileSync(p)), `swh:1:cnt:${expected}`, name);
    assert.equal(gitBlobId(bytes), expected, name);
  }
  // the well-known empty blob id
  assert.equal(contentSwhid(Buffer.alloc(0)), 'swh:1:cnt:e69de29bb2d1d6434b8b29ae775ad8c2e48c5391');
});

test('contentSwhid matches blob ids stored in a real repository and revision SWHID', () => {
  const dir = tempDir();
  git(['init', '-q', dir]);
  writeFileSync(path.join(dir, 'a.py'), 'def f():\n    return 1\n');
  git(['add', 'a.py'], dir);
  git(['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', 'x'], dir);
  const blob = git(['rev-parse', 'HEAD:a.py'], dir);
  assert.equal(contentSwhid(readFileSync(path.join(dir, 'a.py'))), `swh:1:cnt:${blob}`);
  const head = git(['rev-parse', 'HEAD'], dir);
  assert.equal(revisionSwhid(head.toUpperCase()), `swh:1:rev:${head}`);
  assert.throws(() => revisionSwhid('abc123'));
});

test('parse and qualify SWHIDs', () => {
  const id = contentSwhid('x');
  assert.deepEqual(parseSwhid(id), { type: 'cnt', hash: id.slice(10) });
  assert.equal(parseSwhid('swh:1:cnt:xyz'), null);
  const q = qualifiedSwhid(id, {
    origin: 'https://github.com/huggingface/pytorch-image-models.git',
    anchor: 'a'.repeat(40),
    path: 'timm/layers/mlp.py',
    lines: [10, 42],
  });
  assert.equal(
    q,
    `${id};origin=https://github.com/huggingface/pytorch-image-models;anchor=swh:1:rev:${'a'.repeat(40)};path=/timm/layers/mlp.py;lines=10-42`,
  );
  assert.equal(originUrl('https://github.com/a/b/'), 'https://github.com/a/b');
});
