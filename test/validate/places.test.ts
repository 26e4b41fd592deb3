// How stored texts name places (validate/places.ts, issue 28): the interpreter's folders
// and the repositories' checkouts by what they are, the longest folder first, only where a
// path starts and ends; the harness's frames without line numbers. The end-to-end check
// (two checkout folders, real sandbox and torch) is test/pipeline/places.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { nnragHome } from '../../src/environment/pypi.js';
import { interpreterPlaces, Places, repositoryPlaces, storePlaces } from '../../src/validate/places.js';

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

test("values are named by their folders and mapped back to this machine's; the store and nnrag home by name", () => {
  const places = new Places([
    ...repositoryPlaces([
      { name: 'acme/net', root: '/src/net' },
      { name: 'acme/vendored', root: '/src/net/third_party/vendored' },
    ]),
    ...storePlaces([], '/data/store'),
  ]);
  const home = nnragHome();
  const witness = {
    args: ['/src/net/models/a.yaml', '/src/net2/b.yaml', '/src/net'],
    kwargs: { cfg: '/src/net/third_party/vendored/c.yaml', cache: '/data/store/x', env: `${home}/envs/e`, n: 3 },
    inputs: { args: [{ $tensor: [1, 3] }], kwargs: {} },
  };
  const named = places.nameValue(witness);
  assert.deepEqual(named, {
    args: ['<acme/net>/models/a.yaml', '/src/net2/b.yaml', '<acme/net>'],
    kwargs: {
      cfg: '<acme/vendored>/c.yaml',
      cache: '<store>/x',
      env: '<nnrag-home>/envs/e',
      n: 3,
    },
    inputs: { args: [{ $tensor: [1, 3] }], kwargs: {} },
  });
  // what did not change is shared, not copied
  assert.equal(named.inputs, witness.inputs);
  // and back: the same value on this machine
  assert.deepEqual(places.localValue(named), witness);
  // on another machine, its folders: the names map to where that machine has them
  const there = new Places(
    storePlaces(
      [
        { name: 'acme/net', root: '/elsewhere/net' },
        { name: 'acme/vendored', root: '/elsewhere/vendored' },
      ],
      '/elsewhere/store',
    ),
  );
  assert.deepEqual(there.localValue(named).kwargs, {
    cfg: '/elsewhere/vendored/c.yaml',
    cache: '/elsewhere/store/x',
    env: `${home}/envs/e`,
    n: 3,
  });
  // a usage line: the folder where a path starts only
  assert.equal(
    places.nameFolders('Net(cfg="/src/net/models/a.yaml", alt="/x/src/net/y")'),
    'Net(cfg="<acme/net>/models/a.yaml", alt="/x/src/net/y")',
  );
  assert.equal(
    there.localText('Net(cfg="<acme/net>/models/a.yaml", other="<acme/other>/z")'),
    'Net(cfg="/elsewhere/net/models/a.yaml", other="<acme/other>/z")',
  );
  // a repository configured as `store` keeps its name; the store's folder is then not named
  assert.deepEqual(
    storePlaces([{ name: 'store', root: '/src/s' }], '/data/store').map((p) => [p.name, p.dir]),
    [
      ['<store>', '/src/s'],
      ['<nnrag-home>', home],
    ],
  );
  // a parsed value's `__proto__` key stays a key
  const odd = JSON.parse('{"__proto__": "/src/net/p", "k": 1}') as Record<string, unknown>;
  const oddNamed = places.nameValue(odd);
  assert.deepEqual(Object.getOwnPropertyDescriptor(oddNamed, '__proto__')?.value, '<acme/net>/p');
  assert.equal(Object.getPrototypeOf(oddNamed), Object.prototype);
});
