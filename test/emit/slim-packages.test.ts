// Slim emission's package boundary (src/emit/slim/packages.ts, closure.ts `installed`),
// end to end with the real uv, offline: the fixture's two repositories (test/fixtures/
// slimpkg: acme/apppkg declares nnragfix-basepkg, the distribution of acme/basepkg) are
// indexed, a PyPI environment is made for them (basepkg installed from its checkout,
// torch the base interpreter's: Debian's python3-torch), and the slim Block imports
// basepkg's layers from the installed distribution instead of copying them, validates
// with the namespace stage proving the imported names are the original's objects, and
// exports with basepkg pinned. A checkout that no longer matches the installed files is
// copied again, and the header says why. The first test writes the installed layout
// itself (a site folder with the files and their .dist-info RECORD, as an installer
// writes them) and needs no Python: the rule's cases one by one.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { appendFileSync, chmodSync, cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { extractAndValidate, extractText } from '../../src/pipeline/pipeline.js';
import { pypiNeeds } from '../../src/commands/environment.js';
import { InstalledFiles, parseRecordLine, recordDigest } from '../../src/environment/installed.js';
import { pinImportedPackages } from '../../src/environment/requirements.js';
import { envPython, findUv, syncPyPIEnvironment } from '../../src/environment/pypi.js';
import * as api from '../../src/nnrag.js';
import { fixture, tempDir } from '../helpers.js';
import { needsSandbox, needsTorch } from '../support/tier.js';

const BASE = '/usr/bin/python3';
const ID = 'apppkg.blocks.Block';
/** `files` (path relative to the site folder → bytes) installed into `site` as
 *  distribution `dist` `version`: the files and `<dist>-<version>.dist-info` with its
 *  METADATA and RECORD (sha256, urlsafe base64 without padding, PEP 376/627). */
function install(site: string, dist: string, version: string, files: Record<string, string>): void {
  const info = `${dist.replace(/-/g, '_')}-${version}.dist-info`;
  const all: Record<string, string> = {
    ...files,
    [`${info}/METADATA`]: `Metadata-Version: 2.1\nName: ${dist}\nVersion: ${version}\n`,
  };
  const rows = Object.entries(all).map(([f, t]) => `${f},sha256=${recordDigest(t)},${Buffer.byteLength(t)}`);
  all[`${info}/RECORD`] = [...rows, `${info}/RECORD,,`].join('\n') + '\n';
  for (const [f, t] of Object.entries(all)) {
    mkdirSync(path.dirname(path.join(site, f)), { recursive: true });
    writeFileSync(path.join(site, f), t);
  }
}

function fixtureFiles(repo: string, files: string[]): Record<string, string> {
  return Object.fromEntries(files.map((f) => [f, readFileSync(fixture('slimpkg', repo, f), 'utf8')]));
}

test('the package boundary, case by case: same files imported, other files or none copied, the own repository copied', async () => {
  const dir = tempDir('nnrag-slimpkg-');
  const spec = (name: string) => ({
    name: `acme/${name}`,
    url: null,
    path: fixture('slimpkg', name),
    priority: 1,
    paths: [name],
    description: null,
    packageRoots: null,
  });
  const ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
  try {
    await api.index(ws, { repos: [spec('basepkg'), spec('apppkg')], workers: 1 });
    const base = fixtureFiles('basepkg', ['basepkg/__init__.py', 'basepkg/layers.py']);
    const app = fixtureFiles('apppkg', [
      'apppkg/__init__.py',
      'apppkg/blocks.py',
      'apppkg/helpers.py',
      'apppkg/norms.py',
    ]);
    const site = path.join(dir, 'site');
    install(site, 'nnragfix-basepkg', '0.3', base);
    // the block's own repository installed too: its code is still copied
    install(site, 'nnragfix-apppkg', '1.0', app);
    const slim = (s: string) => extractText(ws, ID, { profile: 'slim', installed: new InstalledFiles([s]) });

    const same = slim(site);
    assert.equal(same.record.ok, true, JSON.stringify(same.record.diagnostics));
    assert.match(same.text, /^from basepkg\.layers import (Scale, make_act|make_act, Scale)$/m, same.text);
    assert.doesNotMatch(same.text, /class Scale|def make_act|^ACTS = /m);
    for (const own of ['double(x)', 'build_scale(dim)']) assert.ok(same.text.includes(`def ${own}:`), own);
    // the lazy import in the function body stays as written, lazily
    assert.match(same.text, /^def build_scale\(dim\):\n {4}from basepkg\.layers import Scale\n/m);
    assert.deepEqual(same.record.emission.packages, [
      { distribution: 'nnragfix-basepkg', version: '0.3', repo: 'acme/basepkg', modules: ['basepkg.layers'] },
    ]);
    // the namespace map holds the imported names with their origins, for the namespace stage
    const ns = JSON.stringify(same.namespace);
    assert.ok(ns.includes('basepkg.layers') && ns.includes('Scale'), ns);

    // the faithful profile copies whatever is installed
    const faithful = extractText(ws, ID, { profile: 'faithful', installed: new InstalledFiles([site]) });
    assert.match(faithful.text, /^class Scale\(nn\.Module\):/m);
    assert.doesNotMatch(faithful.text, /^from basepkg/m);

    // an installed file changed after installation is not the distribution's: copied
    const edited = path.join(dir, 'edited');
    install(edited, 'nnragfix-basepkg', '0.3', base);
    appendFileSync(path.join(edited, 'basepkg', 'layers.py'), '# edited\n');
    const e = slim(edited);
    assert.match(e.text, /^class Scale\(nn\.Module\):/m);
    assert.match(
      e.text,
      /^# {3}basepkg\.layers \(acme\/basepkg: the installed nnragfix-basepkg 0\.3 files differ from its RECORD\)$/m,
    );

    // another release's bytes (its RECORD is right, the files are not the indexed ones): copied
    const other = path.join(dir, 'other');
    install(other, 'nnragfix-basepkg', '0.2', { ...base, 'basepkg/layers.py': `${base['basepkg/layers.py']}# 0.2\n` });
    const o = slim(other);
    assert.match(o.text, /^class Scale\(nn\.Module\):/m);
    assert.match(o.text, /has other bytes in these files than the indexed checkout\)$/m);
    assert.equal(o.record.emission.packages, undefined);

    // files on the path without an installed distribution (a checkout put on sys.path): copied
    const bare = path.join(dir, 'bare');
    for (const [f, t] of Object.entries(base)) {
      mkdirSync(path.dirname(path.join(bare, f)), { recursive: true });
      writeFileSync(path.join(bare, f), t);
    }
    const b = slim(bare);
    assert.match(b.text, /^class Scale\(nn\.Module\):/m);
    assert.match(b.text, /no distribution installed in the validation environment lists these basepkg files\)$/m);
  } finally {
    ws.close();
  }
});

test('RECORD rows: quoted paths, rows without a hash, paths outside the folder', () => {
  assert.deepEqual(parseRecordLine('pkg/mod.py,sha256=abc,12'), { file: 'pkg/mod.py', sha256: 'abc' });
  assert.deepEqual(parseRecordLine('"pkg/a,b.py",sha256=x_-y,3\r'), { file: 'pkg/a,b.py', sha256: 'x_-y' });
  assert.equal(parseRecordLine('pkg-1.dist-info/RECORD,,'), null);
  assert.equal(parseRecordLine('pkg/mod.py,md5=abc,12'), null);
  assert.equal(parseRecordLine('../bin/tool,sha256=abc,1'), null);
  // the digest RECORD writes: sha256, urlsafe base64 without padding
  assert.equal(recordDigest(''), '47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU');
});

test('export pins the distributions a slim module imports to the version it was validated with', () => {
  const pkgs = [{ distribution: 'nnragfix-basepkg', version: '0.3' }];
  assert.deepEqual(pinImportedPackages(['torch>=2.6.0', 'nnragfix_basepkg>=0.3'], pkgs), [
    'torch>=2.6.0',
    'nnragfix-basepkg==0.3',
  ]);
  assert.deepEqual(pinImportedPackages(['torch>=2.6.0'], pkgs), ['torch>=2.6.0', 'nnragfix-basepkg==0.3']);
});

const skip =
  needsTorch() ||
  needsSandbox() ||
  (!findUv()
    ? 'uv is not installed (scripts/setup.sh installs it)'
    : !existsSync(BASE)
      ? 'no /usr/bin/python3'
      : false);

test('slim imports another repository installed with the same files, copies it where the files differ', {
  skip,
  timeout: 900_000,
}, async () => {
  const dir = tempDir('nnrag-slimpkg-');
  chmodSync(dir, 0o755); // the sandbox's user (uid 65534 under root) enters the environment
  const roots: Record<string, string> = {};
  for (const name of ['basepkg', 'apppkg']) {
    roots[name] = path.join(dir, name);
    cpSync(fixture(path.join('slimpkg', name)), roots[name], { recursive: true });
    execFileSync('git', ['init', '-q', roots[name]]);
  }
  const spec = (name: string) => ({
    name: `acme/${name}`,
    url: null,
    path: roots[name],
    priority: 1,
    // the package only: installing from the checkout leaves a build/lib copy beside it
    paths: [name],
    description: null,
    packageRoots: null,
  });
  const ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
  try {
    const config = { repos: [spec('basepkg'), spec('apppkg')], workers: 1 };
    await api.index(ws, config);
    assert.ok(api.discover(ws).some((b) => b.id === ID));
    await extractAndValidate(ws, [ID], { validate: false });
    const env = path.join(dir, 'env');
    const logs: string[] = [];
    const m = await syncPyPIEnvironment(env, await pypiNeeds(ws, { python: BASE }), {
      python: BASE,
      systemTorch: true,
      offline: true,
      onLog: (l) => logs.push(l),
    });
    const inst = m.groups[0].indexed.find((x) => x.repo === 'acme/basepkg');
    assert.ok(
      inst && !inst.error,
      `basepkg is installed from its checkout: ${JSON.stringify(inst)}\n${logs.join('\n')}`,
    );

    // the faithful profile still copies every indexed definition
    const faithful = extractText(ws, ID, { profile: 'faithful' });
    assert.match(faithful.text, /^class Scale\(nn\.Module\):/m);
    assert.match(faithful.text, /^def make_act\(name\):/m);

    // slim, validated in the environment: basepkg's layers are imported, apppkg's own code copied
    const [rec] = await extractAndValidate(ws, [ID], { pool: { env, workers: 1 } });
    assert.equal(rec.emission.profile, 'slim', JSON.stringify(rec.emission));
    const text = readFileSync(rec.file!, 'utf8');
    assert.match(text, /^from basepkg\.layers import (Scale, make_act|make_act, Scale)$/m, text);
    assert.doesNotMatch(text, /class Scale|def make_act|^ACTS = /m);
    assert.match(text, /^def double\(x\):/m, "the block's own repository is copied");
    assert.match(text, /^# Slim profile: imported from installed distributions/m);
    assert.match(text, /^# {3}nnragfix-basepkg==0\.3 \(acme\/basepkg\): basepkg\.layers$/m);
    assert.deepEqual(rec.emission.packages, [
      { distribution: 'nnragfix-basepkg', version: '0.3', repo: 'acme/basepkg', modules: ['basepkg.layers'] },
    ]);
    const v = rec.validation!;
    for (const s of ['import', 'namespace', 'instantiate', 'forward', 'equivalence'] as const)
      assert.equal(
        v.stages[s],
        'pass',
        `${s}: ${v.error} ${JSON.stringify(v.namespace)} ${JSON.stringify(v.equivalence)}`,
      );
    assert.ok((v.namespace?.checked ?? 0) >= 3, JSON.stringify(v.namespace));
    assert.ok(v.environment?.distributions?.includes('nnragfix-basepkg==0.3'), JSON.stringify(v.environment));

    // export pins the distribution to the version whose files the block imports
    const proj = path.join(dir, 'proj');
    mkdirSync(proj);
    const rep = await api.exportBlock(ws, ID, { into: proj });
    const reqs = readFileSync(rep.requirementsFile!, 'utf8');
    assert.match(reqs, /^nnragfix-basepkg==0\.3$/m, reqs);

    // the checkout changes after the installation: the installed files are another
    // release's, so slim copies the module again and says why
    appendFileSync(path.join(roots.basepkg, 'basepkg', 'layers.py'), '\n\n# changed after the installation\n');
    await api.index(ws, config);
    const sysPath = JSON.parse(
      execFileSync(envPython(env), ['-I', '-c', 'import sys, json; print(json.dumps(sys.path))'], {
        cwd: '/',
      }).toString(),
    ) as string[];
    const copied = extractText(ws, ID, { profile: 'slim', installed: new InstalledFiles(sysPath) });
    assert.match(copied.text, /^class Scale\(nn\.Module\):/m);
    assert.doesNotMatch(copied.text, /^from basepkg/m);
    assert.equal(copied.record.emission.packages, undefined);
    assert.match(
      copied.text,
      /^# Slim profile: copied from other repositories \(not imported\):\n# {3}basepkg\.layers \(acme\/basepkg: the installed nnragfix-basepkg 0\.3 has other bytes in these files than the indexed checkout\)$/m,
    );
  } finally {
    ws.close();
  }
});
