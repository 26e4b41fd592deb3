// Resolution as of the repositories' revisions (src/environment/as-of.ts): the dates a
// group's requirements are resolved as of, uv's messages the fallbacks read, and a whole
// PyPI environment resolved by the real uv against a package index served here on
// 127.0.0.1 (PEP 691 JSON with PEP 700 upload times; no network): a repository whose
// revision is of May 2020 gets the release of its date, a distribution with nothing
// old enough or only a source distribution of its date falls back to the newest release,
// torchvision stays the newest, and --no-as-of / --as-of change the dates.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  AS_OF_MARGIN_DAYS,
  asOfArgs,
  asOfHeader,
  asOfPlan,
  datedFailures,
  parseAsOf,
  revisionDate,
  sourceOnlyPins,
  type AsOfContext,
} from '../../src/environment/as-of.js';
import { findUv, lockPins, syncPyPIEnvironment, type PyPINeeds } from '../../src/environment/pypi.js';
import { BASE, commitAt, indexFolder, makeFile, pointUvAt, serveIndex, uvTestSkip } from './local-index.js';

const ctxOf = (dates: Record<string, string | null>, over: Partial<AsOfContext> = {}): AsOfContext => ({
  choice: 'revisions',
  dates: new Map(Object.entries(dates).map(([k, v]) => [k, v ? new Date(v) : null])),
  exempt: new Set(['torch', 'torchvision']),
  lifted: new Map(),
  now: new Date('2026-01-01T00:00:00Z'),
  ...over,
});
const req = (spec: string, neededBy: string[], checkout = false) => ({
  spec,
  name: /^[A-Za-z0-9._-]+/.exec(spec)![0],
  neededBy,
  ...(checkout ? { checkout } : {}),
});

test('a requirement is dated by the newest revision of the repositories that name it, plus the margin', () => {
  assert.equal(AS_OF_MARGIN_DAYS, 30);
  const ctx = ctxOf({ 'a/old': '2022-01-01T00:00:00Z', 'b/new': '2024-11-01T00:00:00Z' });
  const plan = asOfPlan(
    [
      req('transformers>=4.28', ['b/new']),
      req('h5py', ['a/old']),
      req('numpy', ['nnrag', 'a/old', 'b/new']),
      req('pytest', ['nnrag']),
      req('torchvision', ['a/old']),
      req('mmcv==2.2.0', ['b/new'], true),
    ],
    ctx,
  );
  // transitive requirements and the tools: the group's newest revision plus the margin
  assert.equal(plan.global, '2024-12-01T00:00:00Z');
  assert.equal(plan.packages.get('transformers'), '2024-12-01T00:00:00Z');
  assert.equal(plan.packages.get('h5py'), '2022-01-31T00:00:00Z');
  assert.equal(plan.packages.get('numpy'), '2024-12-01T00:00:00Z', 'the newest of the repositories naming it');
  assert.equal(plan.packages.has('pytest'), false, "nnrag's tools follow the group's date");
  // never dated: torch's family, a checkout's stand-in wheel
  assert.equal(plan.packages.get('torchvision'), false);
  assert.equal(plan.packages.get('mmcv'), false);
  assert.deepEqual(asOfArgs(plan).slice(0, 4), [
    '--exclude-newer',
    '2024-12-01T00:00:00Z',
    '--exclude-newer-package',
    'h5py=2022-01-31T00:00:00Z',
  ]);
  assert.match(
    asOfHeader(plan, ctx),
    /^# nnrag as-of: revisions \+ 30 days; others before 2024-12-01T00:00:00Z\n# dated: h5py=/,
  );
  // a repository outside git dates nothing it names, nor the group
  const undated = asOfPlan(
    [req('h5py', ['a/old', 'c/nogit']), req('rich', ['a/old'])],
    ctxOf({ 'a/old': '2022-01-01T00:00:00Z', 'c/nogit': null }),
  );
  assert.equal(undated.global, undefined);
  assert.equal(undated.packages.get('rich'), '2022-01-31T00:00:00Z');
  assert.equal(undated.packages.has('h5py'), false);
  // a revision within the margin of now dates nothing
  const recent = asOfPlan([req('rich', ['b/new'])], ctxOf({ 'b/new': '2025-12-20T00:00:00Z' }));
  assert.equal(recent.global, undefined);
  assert.equal(recent.packages.size, 0);
  // a distribution that fell back is resolved without a date
  const lifted = ctxOf({ 'a/old': '2022-01-01T00:00:00Z' });
  lifted.lifted.set('h5py', 'no wheel');
  assert.equal(asOfPlan([req('h5py', ['a/old'])], lifted).packages.get('h5py'), false);
});

test('--as-of dates everything by the date given; --no-as-of dates nothing', () => {
  const given = ctxOf({ 'a/old': '2022-01-01T00:00:00Z' }, { choice: { date: '2023-05-01' } });
  const plan = asOfPlan([req('h5py', ['a/old']), req('torchvision', ['a/old'])], given);
  assert.equal(plan.global, '2023-05-01T23:59:59Z');
  assert.equal(plan.packages.has('h5py'), false);
  assert.equal(plan.packages.get('torchvision'), false);
  assert.match(asOfHeader(plan, given), /as-of: 2023-05-01 \(given\)/);
  const none = ctxOf({ 'a/old': '2022-01-01T00:00:00Z' }, { choice: false });
  const p2 = asOfPlan([req('h5py', ['a/old'])], none);
  assert.deepEqual(asOfArgs(p2), []);
  assert.equal(asOfHeader(p2, none), '# nnrag as-of: none (newest releases)\n');
  assert.equal(parseAsOf('2024-11-01T12:00:00Z').toISOString(), '2024-11-01T12:00:00.000Z');
  assert.throws(() => parseAsOf('last year'), /--as-of: "last year" is not a date/);
  assert.throws(() => parseAsOf('2024-13-45'), /is not a date/);
});

test("uv's messages: what it filtered by date, what failed to build, what would be built from source", () => {
  const err = [
    '  × No solution found when resolving dependencies:',
    '  ╰─▶ Because only ultralytics<=8.0.232 is available and you require ultralytics>=8.4.118, we can conclude that your requirements are unsatisfiable.',
    '',
    '      hint: `ultralytics` was filtered by `exclude-newer-package` to only include packages uploaded before 2024-01-02T00:00:00Z. The latest version satisfying the requirement is v8.4.190.',
    '      hint: `Setuptools` was filtered by `exclude-newer` to only include packages uploaded before 2024-01-02T00:00:00Z.',
    '  × Failed to build `h5py==3.7.0`',
    '  × Failed to download and build `scikit-image==0.19.3`',
  ].join('\n');
  assert.deepEqual(datedFailures(err), { filtered: ['ultralytics', 'setuptools'], unbuilt: ['h5py', 'scikit-image'] });
  const pylock = [
    'lock-version = "1.0"',
    '[[packages]]',
    'name = "h5py"',
    'version = "3.7.0"',
    'sdist = { url = "https://x/h5py-3.7.0.tar.gz", upload-time = 2022-05-24T09:59:22Z }',
    '',
    '[[packages]]',
    'name = "Six"',
    'version = "1.16.0"',
    'sdist = { url = "https://x/six-1.16.0.tar.gz" }',
    'wheels = [{ url = "https://x/six-1.16.0-py2.py3-none-any.whl" }]',
    '',
    '[[packages]]',
    'name = "local"',
    'version = "1.0"',
    'directory = { path = "x" }',
  ].join('\n');
  assert.deepEqual(sourceOnlyPins(pylock), [{ name: 'h5py', version: '3.7.0' }]);
});

// ---- a whole environment, the real uv, a local index ----

const uv = findUv();
const skip = uvTestSkip(uv);

test("an environment resolved as of its repository's revision, with per-distribution fallbacks, by the real uv", {
  skip,
  timeout: 300_000,
}, async () => {
  const { dir, files } = indexFolder('nnrag-asof-');
  const OLD = '2020-01-01T00:00:00.000000Z';
  const NEW = '2024-06-01T00:00:00.000000Z';
  const uploaded = new Map<string, string>([
    // nnragfix-dep: a release of the repository's time and a later one
    [makeFile(files, 'wheel', 'nnragfix-dep', '1.0'), OLD],
    [makeFile(files, 'wheel', 'nnragfix-dep', '2.0'), NEW],
    // nnragfix-src: of the repository's time only a source distribution (no wheel for any
    // interpreter), later a wheel
    [makeFile(files, 'sdist', 'nnragfix-src', '1.0'), OLD],
    [makeFile(files, 'wheel', 'nnragfix-src', '2.0'), NEW],
    // nnragfix-late: first released after the revision
    [makeFile(files, 'wheel', 'nnragfix-late', '3.0'), NEW],
    // torchvision: versioned with torch, never dated
    [makeFile(files, 'wheel', 'torchvision', '0.1'), OLD],
    [makeFile(files, 'wheel', 'torchvision', '0.2'), NEW],
    // the tools every environment has (numpy, pytest), as stand-ins
    [makeFile(files, 'wheel', 'numpy', '1.0'), OLD],
    [makeFile(files, 'wheel', 'pytest', '1.0'), OLD],
  ]);
  const index = await serveIndex(files, uploaded);
  // a repository whose revision is of May 2020
  const repo = path.join(dir, 'old');
  mkdirSync(repo);
  writeFileSync(path.join(repo, 'requirements.txt'), 'nnragfix-dep\nnnragfix-src\nnnragfix-late\ntorchvision\n');
  commitAt(repo, '2020-05-01T00:00:00Z', 'revision of May 2020');
  assert.equal((await revisionDate(repo))?.toISOString(), '2020-05-01T00:00:00.000Z');
  const needs: PyPINeeds = {
    repos: [
      {
        name: 'acme/old',
        root: repo,
        declared: ['nnragfix-dep', 'nnragfix-src', 'nnragfix-late', 'torchvision'],
        imported: [],
        unknown: [],
      },
    ],
    indexed: new Map(),
  };
  const restore = pointUvAt(index.url, path.join(dir, 'uv-cache'));
  try {
    const logs: string[] = [];
    const env = path.join(dir, 'env');
    const m = await syncPyPIEnvironment(env, needs, { python: BASE, systemTorch: true, onLog: (l) => logs.push(l) });
    const g = m.groups[0];
    const show = `${JSON.stringify(g.asOf)}\n${logs.join('\n')}`;
    assert.equal(m.asOf, 'revisions');
    assert.ok(g.pins.includes('nnragfix-dep==1.0'), `the release of its time: ${g.pins}\n${show}`);
    assert.ok(
      g.pins.includes('nnragfix-src==2.0'),
      `the source-only release falls back to a wheel: ${g.pins}\n${show}`,
    );
    assert.ok(g.pins.includes('nnragfix-late==3.0'), `nothing old enough: the newest: ${g.pins}\n${show}`);
    assert.ok(g.pins.includes('torchvision==0.2'), `torch's family is not dated: ${g.pins}\n${show}`);
    assert.equal(g.asOf?.global, '2020-05-31T00:00:00Z');
    assert.equal(g.asOf?.dated['nnragfix-dep'], '2020-05-31T00:00:00Z');
    assert.deepEqual(g.asOf?.lifted.map((l) => l.distribution).sort(), ['nnragfix-late', 'nnragfix-src']);
    assert.match(
      g.asOf!.lifted.find((l) => l.distribution === 'nnragfix-src')!.reason,
      /no wheel for this interpreter/,
    );
    assert.ok(
      logs.some((l) => /nnragfix-late: no release before 2020-05-31T00:00:00Z meets/.test(l)),
      show,
    );
    // the dates are part of the lock, hence of its digest
    const lock = readFileSync(path.join(env, 'nnrag-lock.txt'), 'utf8');
    assert.match(lock, /^# nnrag as-of: revisions \+ 30 days; others before 2020-05-31T00:00:00Z$/m);
    assert.ok(lockPins(lock).includes('nnragfix-dep==1.0'));
    // no path of this folder in the lock: the same resolution has the same digest anywhere
    assert.ok(!lock.includes(env), lock);
    assert.match(lock, /# via -r requirements\.in/);
    const ver = execFileSync(path.join(env, 'bin', 'python'), [
      '-c',
      'import nnragfix_dep; print(nnragfix_dep.__version__)',
    ])
      .toString()
      .trim();
    assert.equal(ver, '1.0');

    // env sync keeps the choice; --no-as-of takes the newest, and says so in the lock
    const newest = await syncPyPIEnvironment(env, needs, { python: BASE, systemTorch: true, asOf: false });
    assert.equal(newest.asOf, false);
    assert.ok(newest.groups[0].pins.includes('nnragfix-dep==2.0'), `${newest.groups[0].pins}`);
    assert.equal(newest.groups[0].asOf, undefined);
    assert.match(readFileSync(path.join(env, 'nnrag-lock.txt'), 'utf8'), /^# nnrag as-of: none/m);
    const kept = await syncPyPIEnvironment(env, needs, { python: BASE, systemTorch: true });
    assert.equal(kept.asOf, false, 'env sync keeps what the environment was made with');
    // --as-of DATE: one date for everything
    const given = await syncPyPIEnvironment(env, needs, {
      python: BASE,
      systemTorch: true,
      asOf: { date: '2021-01-01' },
    });
    assert.equal(given.groups[0].asOf?.global, '2021-01-01T23:59:59Z');
    assert.ok(given.groups[0].pins.includes('nnragfix-dep==1.0'), `${given.groups[0].pins}`);
    assert.notEqual(given.groups[0].lockDigest, newest.groups[0].lockDigest);
  } finally {
    index.close();
    restore();
  }
});
