// Operator libraries loaded once by content (src/validate/python/nnrag_harness/extensions.py),
// with the real torchvision of the default environment: a second file with the bytes of
// torchvision's `_C_stable.so` (as a checkout holding its built library beside the
// installed package has) registers the same operators again when torch.ops.load_library
// loads it, and the process aborts; with the harness's wrapper the copy is answered by the
// library already loaded, and its operators work.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultEnvDir, envPython } from '../../src/environment/pypi.js';
import { tempDir } from '../helpers.js';
import { needsTorch } from '../support/tier.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const HARNESS = path.resolve(here, '../../../src/validate/python');
const py = envPython(defaultEnvDir());
const site = existsSync(path.join(defaultEnvDir(), 'lib'))
  ? readdirSync(path.join(defaultEnvDir(), 'lib'))
      .map((d) => path.join(defaultEnvDir(), 'lib', d, 'site-packages', 'torchvision'))
      .find((d) => existsSync(path.join(d, '_C_stable.so')) || existsSync(path.join(d, '_C.so')))
  : undefined;
const skip = needsTorch() || (!existsSync(py) ? 'no default environment' : !site ? 'no torchvision with _C' : false);

function run(copy: string, once: boolean) {
  const script = [
    // as the worker does: the wrapper right after torch, before any library is loaded
    'import sys, torch',
    ...(once
      ? [
          `sys.path.insert(0, ${JSON.stringify(HARNESS)})`,
          'from nnrag_harness.extensions import load_each_library_once',
          'load_each_library_once(torch)',
        ]
      : []),
    'import torchvision',
    `torch.ops.load_library(${JSON.stringify(copy)})`,
    `print(${JSON.stringify(copy)} in torch.ops.loaded_libraries)`,
    // nms is one of the library's compiled operators (torchvision::nms)
    'print(torchvision.ops.nms(torch.tensor([[0., 0., 2., 2.], [1., 1., 3., 3.]]), torch.tensor([0.9, 0.8]), 0.5).tolist())',
  ].join('\n');
  return spawnSync(py, ['-c', script], { encoding: 'utf8', timeout: 300_000 });
}

test('a second copy of a loaded operator library aborts the process; the harness loads it once', {
  skip,
  timeout: 600_000,
}, () => {
  const lib = ['_C_stable.so', '_C.so'].map((f) => path.join(site!, f)).find((f) => existsSync(f))!;
  const copy = path.join(tempDir('nnrag-ext-'), path.basename(lib));
  copyFileSync(lib, copy);
  const bare = run(copy, false);
  assert.equal(bare.signal, 'SIGABRT', `${bare.status} ${bare.stderr.slice(-400)}`);
  assert.match(bare.stderr, /register.*multiple times|registered/i);
  const once = run(copy, true);
  assert.equal(once.status, 0, once.stderr.slice(-800));
  assert.deepEqual(once.stdout.trim().split('\n'), ['True', '[0, 1]']);
});
