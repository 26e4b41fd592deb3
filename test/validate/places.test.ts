// How stored texts name places (validate/places.ts, issue 28): the interpreter's folders
// and the repositories' checkouts by what they are, the longest folder first, only where a
// path starts and ends; the harness's frames without line numbers. The end-to-end check
// (two checkout folders, real sandbox and torch) is test/pipeline/places.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { interpreterPlaces, Places, repositoryPlaces } from '../../src/validate/places.js';

const venv = '/envs/e1';
const paths = {
  stdlib: '/usr/lib/python3.11',
  // a virtual environment's platstdlib is its own lib/python3.X, not on sys.path (PEP 405)
  platstdlib: `${venv}/lib/python3.11`,
  purelib: `${venv}/lib/python3.11/site-packages`,
  platlib: `${venv}/lib/python3.11/site-packages`,
};
const sysPath = ['/usr/lib/python311.zip', '/usr/lib/python3.11', '/usr/lib/python3.11/lib-dynload', paths.purelib];

test('folders are named by role, the longest first, only whole path components', () => {
  const places = new Places([
    ...interpreterPlaces(paths, sysPath),
    ...repositoryPlaces([
      { name: 'acme/net', root: '/src/net' },
      // a checkout inside another's folder: its own name wins
      { name: 'acme/vendored', root: '/src/net/third_party/vendored' },
    ]),
  ]);
  const tb = [
    'Traceback (most recent call last):',
    '  File "<nnrag_harness/stages.py>", line 294, in _instantiate_forward',
    '  File "<scratch>/candidate.py", line 12, in __init__',
    `  File "${paths.purelib}/torch/serialization.py", line 1566, in load`,
    '  File "/usr/lib/python3.11/json/decoder.py", line 337, in decode',
    '  File "/usr/lib/python3.11/lib-dynload/x.py", line 3, in f',
    '  File "/src/net/models/yolo.py", line 533, in _forward_once',
    '  File "/src/net/third_party/vendored/ops.py", line 9, in g',
    '  File "/nnrag/harness.py", line 170, in main',
    "FileNotFoundError: [Errno 2] No such file or directory: '/src/net/weights/a.pt'",
  ].join('\n');
  assert.equal(
    places.name(tb),
    [
      'Traceback (most recent call last):',
      '  File "<nnrag_harness/stages.py>", in _instantiate_forward',
      '  File "<scratch>/candidate.py", line 12, in __init__',
      '  File "<site-packages>/torch/serialization.py", line 1566, in load',
      '  File "<stdlib>/json/decoder.py", line 337, in decode',
      '  File "<stdlib>/lib-dynload/x.py", line 3, in f',
      '  File "<acme/net>/models/yolo.py", line 533, in _forward_once',
      '  File "<acme/vendored>/ops.py", line 9, in g',
      '  File "<harness.py>", in main',
      "FileNotFoundError: [Errno 2] No such file or directory: '<acme/net>/weights/a.pt'",
    ].join('\n'),
  );
  // not a folder of ours: a longer name, or the folder inside another path
  for (const s of ['/src/network/a.py', '/x/src/net/a.py', `${venv}/lib/python3.11/other.py`, 'see /src/net2'])
    assert.equal(places.name(s), s);
  // the folder itself, at the end of a message or before a quote
  assert.equal(places.name("no such directory: '/src/net'"), "no such directory: '<acme/net>'");
  assert.equal(places.name(null), null);
});

test("a harness frame keeps its file and function, never its line; a candidate's keeps it", () => {
  const places = new Places([]);
  const a = places.name('  File "<nnrag_harness/stages.py>", line 294, in _instantiate_forward');
  const b = places.name('  File "<nnrag_harness/stages.py>", line 301, in _instantiate_forward');
  assert.equal(a, b);
  assert.equal(a, '  File "<nnrag_harness/stages.py>", in _instantiate_forward');
  // without a sandbox the entry point runs from a scratch copy (environment.ts)
  assert.equal(
    places.name('  File "/tmp/nnrag-validate-Ab12/harness.py", line 9, in main'),
    '  File "<harness.py>", in main',
  );
  const own = '  File "<scratch>/candidate.py", line 12, in __init__';
  assert.equal(places.name(own), own);
  // a repository's own harness.py is not the harness
  const theirs = '  File "/src/net/harness.py", line 3, in run';
  assert.equal(places.name(theirs), theirs);
});
