// The decisions of an earlier environment reused by the next one on the machine
// (src/environment/decisions.ts, pypi.ts): by the real uv against a package index served on
// 127.0.0.1 (no network), a first environment falls back to the newest release of a
// distribution with nothing of its date, learns at import a bound nnragfix-user enforces
// and resolves again, and builds the repository's own checkout as a wheel. A second
// environment of the same input, in a new folder, reuses all of it: its lock is
// byte-identical to the first one's (the cold computation), it runs no resolution (the
// index offers the same files of the undated distributions), builds nothing and imports
// nothing to probe. An environment of another input (another date, a changed checkout)
// reuses none of it; a new release of an undated distribution makes the same input resolve
// again, to the lock a cold resolution gives.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { checkoutContentKey } from '../../src/environment/decisions.js';
import { envPython, findUv, syncPyPIEnvironment, type PyPINeeds } from '../../src/environment/pypi.js';
import { forgetIndexPages } from '../../src/environment/index-state.js';
import { BASE, commitAt, indexFolder, makeFile, pointUvAt, serveIndex, uvTestSkip } from './local-index.js';

const uv = findUv();
const skip = uvTestSkip(uv);

// a PEP 517 build backend inside the source tree (`backend-path`), so that building the
// checkout needs nothing from an index: it writes a wheel of the package folder
const BACKEND = String.raw`
import base64, hashlib, os, zipfile
NAME, VERSION, PKG = "nnragfix_app", "0.1", "nnragfix_app"
def get_requires_for_build_wheel(config_settings=None):
    return []
def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    stem = NAME + "-" + VERSION
    files = {}
    for f in sorted(os.listdir(PKG)):
        if f.endswith(".py"):
            files[PKG + "/" + f] = open(os.path.join(PKG, f), "rb").read()
    files[stem + ".dist-info/METADATA"] = ("Metadata-Version: 2.1\nName: nnragfix-app\nVersion: %s\n" % VERSION).encode()
    files[stem + ".dist-info/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    rec = []
    for p, b in files.items():
        h = base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode()
        rec.append("%s,sha256=%s,%d" % (p, h, len(b)))
    rec.append(stem + ".dist-info/RECORD,,")
    files[stem + ".dist-info/RECORD"] = ("\n".join(rec) + "\n").encode()
    name = stem + "-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as z:
        for p, b in files.items():
            z.writestr(p, b)
    return name
`;

test("an earlier environment's fallbacks, learnt bounds, probe and checkout wheel are reused; the lock is the same bytes", {
  skip,
  timeout: 600_000,
}, async () => {
  const { dir, files } = indexFolder('nnrag-decisions-');
  const OLD = '2020-01-01T00:00:00.000000Z';
  const NEW = '2024-06-01T00:00:00.000000Z';
  const check =
    "import nnragfix_dep\nassert nnragfix_dep.__version__.startswith('1.'), f'nnragfix-dep=={nnragfix_dep.__version__} is used but incompatible. Please install nnragfix-dep>=1.0, <2.0.'\n";
  const uploaded = new Map<string, string>([
    // both releases of the repository's time: the resolver takes 2.0, which nnragfix-user
    // refuses at import
    [makeFile(files, 'wheel', 'nnragfix-dep', '1.0'), OLD],
    [makeFile(files, 'wheel', 'nnragfix-dep', '2.0'), OLD],
    [makeFile(files, 'wheel', 'nnragfix-user', '1.0', ['nnragfix-dep'], check), OLD],
    // first released after the revision: falls back to the newest release
    [makeFile(files, 'wheel', 'nnragfix-late', '3.0'), NEW],
    [makeFile(files, 'wheel', 'numpy', '1.0'), OLD],
    [makeFile(files, 'wheel', 'pytest', '1.0'), OLD],
  ]);
  const index = await serveIndex(files, uploaded);
  // the repository: a package named for its distribution (installed from its checkout),
  // at a revision of May 2020
  const repo = path.join(dir, 'app');
  mkdirSync(path.join(repo, 'nnragfix_app'), { recursive: true });
  writeFileSync(
    path.join(repo, 'pyproject.toml'),
    '[project]\nname = "nnragfix-app"\nversion = "0.1"\n\n[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n',
  );
  writeFileSync(path.join(repo, 'backend.py'), BACKEND);
  writeFileSync(path.join(repo, 'nnragfix_app', '__init__.py'), 'VALUE = 1\n');
  commitAt(repo, '2020-05-01T00:00:00Z', 'revision of May 2020');
  const needs: PyPINeeds = {
    repos: [{ name: 'acme/app', root: repo, declared: ['nnragfix-user', 'nnragfix-late'], imported: [], unknown: [] }],
    indexed: new Map([['nnragfix_app', 'acme/app']]),
  };
  // uv through a shim that notes each command
  const calls = path.join(dir, 'uv-calls.txt');
  const shim = path.join(dir, 'uv-shim');
  writeFileSync(shim, `#!/bin/sh\nprintf '%s\\n' "$*" >> ${calls}\nexec ${uv} "$@"\n`, { mode: 0o755 });
  const savedUv = process.env.NNRAG_UV;
  process.env.NNRAG_UV = shim;
  const restore = pointUvAt(index.url, path.join(dir, 'uv-cache'));
  const decisions = path.join(dir, 'decisions');
  const wheelCache = path.join(dir, 'wheels');
  const create = async (name: string, over: { asOf?: { date: string } } = {}) => {
    writeFileSync(calls, '');
    const logs: string[] = [];
    const env = path.join(dir, name);
    const m = await syncPyPIEnvironment(env, needs, {
      python: BASE,
      systemTorch: true,
      decisions,
      wheelCache,
      onLog: (l) => logs.push(l),
      ...over,
    });
    const uvCalls = readFileSync(calls, 'utf8').split('\n').filter(Boolean);
    return {
      env,
      m,
      logs,
      show: logs.join('\n'),
      uvCalls,
      lock: readFileSync(path.join(env, 'nnrag-lock.txt'), 'utf8'),
    };
  };
  const compiles = (c: string[]) => c.filter((l) => l.startsWith('pip compile')).length;
  const builds = (c: string[]) => c.filter((l) => l.startsWith('build ')).length;
  try {
    // the first environment: every decision made here
    const a = await create('env-a');
    const ga = a.m.groups[0];
    assert.deepEqual(
      a.m.importConstraints?.map((c) => [c.requirement, c.by, c.repos]),
      [['nnragfix-dep>=1.0,<2.0', 'nnragfix-user==1.0', ['acme/app']]],
      a.show,
    );
    assert.ok(ga.pins.includes('nnragfix-dep==1.0') && ga.pins.includes('nnragfix-late==3.0'), `${ga.pins}\n${a.show}`);
    assert.deepEqual(
      ga.asOf?.lifted.map((l) => l.distribution),
      ['nnragfix-late'],
    );
    assert.deepEqual(ga.importFailures, []);
    assert.ok(
      ga.indexed.some((x) => x.repo === 'acme/app' && !x.error),
      JSON.stringify(ga.indexed),
    );
    assert.ok(builds(a.uvCalls) >= 1, a.uvCalls.join('\n'));

    // a second environment of the same input, in a new folder
    const b = await create('env-b');
    const gb = b.m.groups[0];
    assert.equal(b.lock, a.lock, 'the lock is byte-identical to the one resolved afresh');
    assert.equal(gb.lockDigest, ga.lockDigest);
    assert.deepEqual(gb.pins, ga.pins);
    assert.deepEqual(b.m.importConstraints, a.m.importConstraints);
    assert.deepEqual(gb.asOf, ga.asOf);
    assert.deepEqual(gb.importFailures, ga.importFailures);
    assert.ok(
      b.logs.some((l) => /enforces nnragfix-dep>=1.0,<2.0 at import .*learnt by an earlier environment/.test(l)),
      b.show,
    );
    assert.ok(
      b.logs.some((l) => /as in an earlier environment of the same lock/.test(l)),
      b.show,
    );
    assert.ok(
      b.logs.some((l) => /the wheel built from this revision before/.test(l)),
      b.show,
    );
    assert.ok(!b.logs.some((l) => /resolving again with it/.test(l)), b.show);
    // no resolution: the index offers the same files of the distributions the lock does
    // not date (nnragfix-late, the fallback), so uv's answer of then is the answer; no round
    // that finds a fallback, no check of the wheels of a lock an earlier environment checked
    assert.equal(
      compiles(b.uvCalls),
      0,
      `resolutions: ${compiles(b.uvCalls)} against ${compiles(a.uvCalls)}\n${b.uvCalls.join('\n')}`,
    );
    assert.ok(
      b.logs.some((l) => /uv's answer of an earlier resolution of the same input/.test(l)),
      b.show,
    );
    assert.ok(compiles(a.uvCalls) > 2, a.uvCalls.join('\n'));
    assert.equal(builds(b.uvCalls), 0, b.uvCalls.join('\n'));
    assert.equal(
      execFileSync(
        envPython(b.env),
        ['-c', 'import nnragfix_app, nnragfix_dep; print(nnragfix_app.VALUE, nnragfix_dep.__version__)'],
        {
          cwd: '/',
        },
      )
        .toString()
        .trim(),
      '1 1.0',
    );

    // another input: another date, and a change to the checkout: nothing of it is reused
    const before = await checkoutContentKey(repo);
    appendFileSync(path.join(repo, 'nnragfix_app', '__init__.py'), 'VALUE = 2\n');
    assert.notEqual(await checkoutContentKey(repo), before, 'a change to a tracked file changes the key');
    const c = await create('env-c', { asOf: { date: '2021-01-01' } });
    assert.ok(!c.logs.some((l) => /earlier environment/.test(l)), c.show);
    assert.ok(
      c.logs.some((l) => /enforces nnragfix-dep>=1.0,<2.0 at import .*resolving again with it/.test(l)),
      c.show,
    );
    assert.ok(builds(c.uvCalls) >= 1, c.uvCalls.join('\n'));
    assert.equal(
      execFileSync(envPython(c.env), ['-c', 'import nnragfix_app; print(nnragfix_app.VALUE)'], { cwd: '/' })
        .toString()
        .trim(),
      '2',
    );
    // and without the cache (decisions: false) the same lock as the first environment's
    writeFileSync(path.join(repo, 'nnragfix_app', '__init__.py'), 'VALUE = 1\n');
    const cold = await syncPyPIEnvironment(path.join(dir, 'env-d'), needs, {
      python: BASE,
      systemTorch: true,
      decisions: false,
      wheelCache: path.join(dir, 'wheels-d'),
    });
    assert.equal(readFileSync(path.join(dir, 'env-d', 'nnrag-lock.txt'), 'utf8'), a.lock);
    assert.equal(cold.groups[0].lockDigest, ga.lockDigest);

    // a release of the undated fallback that the index did not have (uploaded two hours
    // ago: before the time up to which a resolution's index state is kept): the first
    // environment's input again, but the index has changed, so it is resolved again, to the
    // lock a cold resolution gives now
    uploaded.set(makeFile(files, 'wheel', 'nnragfix-late', '4.0'), new Date(Date.now() - 7_200_000).toISOString());
    forgetIndexPages(); // this process read the index's pages minutes ago
    const e = await create('env-e');
    assert.ok(compiles(e.uvCalls) >= 1, e.uvCalls.join('\n'));
    assert.ok(e.m.groups[0].pins.includes('nnragfix-late==4.0'), `${e.m.groups[0].pins}\n${e.show}`);
    await syncPyPIEnvironment(path.join(dir, 'env-f'), needs, {
      python: BASE,
      systemTorch: true,
      decisions: false,
      wheelCache: path.join(dir, 'wheels-f'),
    });
    assert.equal(readFileSync(path.join(dir, 'env-f', 'nnrag-lock.txt'), 'utf8'), e.lock);
    // and the state of then is kept: the next environment reuses it
    const f = await create('env-g');
    assert.equal(compiles(f.uvCalls), 0, f.uvCalls.join('\n'));
    assert.equal(f.lock, e.lock);
  } finally {
    index.close();
    restore();
    if (savedUv === undefined) delete process.env.NNRAG_UV;
    else process.env.NNRAG_UV = savedUv;
  }
});
