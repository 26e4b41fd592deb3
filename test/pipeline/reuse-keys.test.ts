// The reuse keys name a checkout by its repository, not its folder (issue 28,
// pipeline/reuse.ts): two folders of one checkout give one key; a folder the sandbox cannot
// read, or recorded values that hold absolute paths, keep the difference in the key. The
// end-to-end move of a checkout is test/pipeline/places.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { keyedSysPath, rootsKeyed } from '../../src/pipeline/reuse.js';
import { sandboxCanRead } from '../../src/validate/environment.js';
import { Places, repositoryPlaces } from '../../src/validate/places.js';
import { tempDir } from '../helpers.js';

test("a request's sys.path is keyed by repository, with whether the sandbox reads it", () => {
  const dir = tempDir();
  chmodSync(dir, 0o755);
  const keyIn = (folder: string) => {
    const root = path.join(dir, folder);
    mkdirSync(path.join(root, 'src'), { recursive: true });
    const places = new Places(repositoryPlaces([{ name: 'acme/net', root }]));
    return keyedSysPath([root, path.join(root, 'src')], places);
  };
  const a = keyIn('a');
  assert.deepEqual(a, ['<acme/net>', '<acme/net>/src']);
  assert.deepEqual(keyIn('b'), a);
  // a folder that is gone (or unreadable to the sandbox) is not the same place to validate in
  const gone = path.join(dir, 'gone');
  assert.equal(sandboxCanRead(gone), false);
  assert.deepEqual(keyedSysPath([gone], new Places(repositoryPlaces([{ name: 'acme/net', root: gone }]))), [
    '<acme/net>\0unreadable',
  ]);
});

test('recorded values that name absolute paths keep the folders in the keys', () => {
  assert.equal(rootsKeyed([[{ args: [64], kwargs: { act: 'relu' } }], undefined]), false);
  assert.equal(rootsKeyed([[{ args: [], kwargs: { cfg: '/src/net/models/a.yaml' } }]]), true);
  assert.equal(rootsKeyed(undefined), false);
});
