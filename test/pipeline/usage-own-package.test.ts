// A usage line may import from the block's own repository when the environment installs it
// (issue 26: x-transformers' AutoregressiveWrapper, whose TransformerWrapper and Decoder
// would add about 5,000 lines as usage roots). `env create --store` installs each indexed
// repository's checkout; importing a module imports its top-level package first, so the
// repository's distribution is one the block's module imports, even when the module never
// names it (tinygpt.roots imports only torch). The usage fixture's `tinygpt` is installed in
// a fresh virtual environment over /usr/bin/python3's torch (its package and a .dist-info,
// as pip leaves them); Stem's norm layer, FrozenNorm, is over a one-line roots bound, so
// the line imports it from the installed package, the record pins that distribution, and
// the line runs as written in a fresh folder. Real validation in the sandbox.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import { exportBlock } from '../../src/export/export.js';
import { extractAndValidate } from '../../src/pipeline/pipeline.js';
import { PY, debianTorch, skipWithout } from '../export/debian-python.js';
import { fixture, tempDir } from '../helpers.js';

const skip = skipWithout(debianTorch(['venv']));

test("over the roots bound, a usage line imports the definition from the block's own installed repository", {
  skip,
}, async () => {
  const dir = tempDir('nnrag-own-package-');
  chmodSync(dir, 0o755); // the sandbox runs as an unprivileged user when we are root
  const repo = path.join(dir, 'usage');
  cpSync(fixture('usage'), repo, { recursive: true });
  // the repository installed in the environment (PEP 405 environment over the system's
  // torch; PEP 376 .dist-info)
  const venv = path.join(dir, 'venv');
  execFileSync(PY, ['-m', 'venv', '--system-site-packages', '--without-pip', venv]);
  const python = path.join(venv, 'bin', 'python');
  const site = execFileSync(python, ['-c', "import sysconfig; print(sysconfig.get_paths()['purelib'])"], {
    encoding: 'utf8',
  }).trim();
  cpSync(path.join(repo, 'tinygpt'), path.join(site, 'tinygpt'), { recursive: true });
  const info = path.join(site, 'tinygpt-0.1.dist-info');
  mkdirSync(info);
  writeFileSync(path.join(info, 'METADATA'), 'Metadata-Version: 2.1\nName: tinygpt\nVersion: 0.1\n');
  writeFileSync(path.join(info, 'top_level.txt'), 'tinygpt\n');
  writeFileSync(path.join(info, 'RECORD'), '');

  const ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
  try {
    const spec = {
      name: 'usage',
      url: null,
      path: repo,
      priority: 1,
      paths: [],
      description: null,
      packageRoots: null,
    };
    await api.index(ws, { repos: [spec], workers: 1 });
    api.discover(ws);
    const [rec] = await extractAndValidate(ws, ['tinygpt.roots.Stem'], {
      pool: { workers: 1, python },
      usageRootsMaxLines: 1,
    });
    const v = rec.validation!;
    assert.equal(rec.ok, true, JSON.stringify(v));
    assert.equal(rec.emission.usageRoots, undefined, 'FrozenNorm is not copied');
    assert.match(
      v.usage ?? '',
      /^from tinygpt\.norms import FrozenNorm\nStem\(3, 16, norm_layer=FrozenNorm\)\(torch\.randn\(\d+(, \d+)*\)\)$/,
      JSON.stringify(v),
    );
    assert.equal(v.usageCheck, 'ran');
    assert.ok(v.environment?.distributions?.includes('tinygpt==0.1'), JSON.stringify(v.environment));
    assert.equal(v.stages.equivalence, 'pass', JSON.stringify(v.equivalence));

    // exported into a fresh folder and run as written with the environment's interpreter
    const out = tempDir('nnrag-own-package-out-');
    const rep = await exportBlock(ws.store, rec.id, { into: out });
    assert.match(readFileSync(path.join(out, 'requirements.txt'), 'utf8'), /^tinygpt>=0\.1$/m);
    const header = readFileSync(rep.file, 'utf8').split('\n');
    const at = header.findIndex((l) => l.startsWith('# Usage, as validated'));
    const imports = [...header[at].matchAll(/`([^`]+)`/g)].map((m) => m[1]);
    const lines = rep.usage!.split('\n');
    const code = [
      ...imports,
      ...lines.slice(0, -1),
      `y = ${lines[lines.length - 1]}`,
      'print(tuple(y.shape), FrozenNorm.__module__)',
    ].join('\n');
    const r = spawnSync(python, ['-c', code], {
      cwd: out,
      encoding: 'utf8',
      env: { PATH: '/usr/bin:/bin', PYTHONDONTWRITEBYTECODE: '1' },
    });
    assert.equal(r.status, 0, `${rep.usage}\n${r.stderr}`);
    assert.match(r.stdout.trim(), /^\(\d+, 16(, \d+)*\) tinygpt\.norms$/);
  } finally {
    ws.close();
  }
});
