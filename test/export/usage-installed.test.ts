// Usage lines that import from an installed distribution (issue 26, item 4: every validated
// block gets a line that runs as written). The usagepkg fixture's blocks are built with a
// class of `tinylayers`, a distribution installed in the environment (a fresh virtual
// environment over /usr/bin/python3's torch, the fixture's package and .dist-info copied
// into its site-packages) that no indexed repository holds. A block whose module imports
// tinylayers gets `from tinylayers import Scale` in its line, the export pins
// `tinylayers>=0.3`, and the line runs as written in a fresh folder; a block whose module
// does not import it gets no line, and its record, the export and the CLI say why
// (`usageSkipped`). A block also built with a class of its own repository that its code
// never names gets that class copied as a usage root beside the import.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { before, describe, test } from 'node:test';
import { distributionNames, importableFrom, plainUsage, usageImports } from '../../src/export/export.js';
import { PY, debianTorch, skipWithout } from './debian-python.js';
import { fixture, repoRoot, tempDir } from '../helpers.js';

const bin = path.join(repoRoot, 'dist', 'src', 'cli', 'bin.js');
const haveTorch = debianTorch(['venv']);
const skip = skipWithout(haveTorch);

interface Rec {
  id: string;
  ok: boolean;
  validation: {
    usage?: string | null;
    usageCheck?: string;
    usageSkipped?: string;
    stages: Record<string, string>;
    environment?: { distributions?: string[] };
  };
}

describe('plainUsage with imports from installed distributions', () => {
  const pinned = importableFrom(distributionNames(['tinylayers>=0.3', 'torch>=2.1.0', 'Pillow>=10.0']));
  test('a `from P import N` line stands only when the requirements pin P', () => {
    const line = 'from tinylayers import Scale\nfrom tinylayers.blocks import Shift\nHead(Scale(8), layer=Shift)(x)';
    assert.equal(plainUsage(line, pinned), line);
    assert.equal(
      plainUsage('import functools\nfrom PIL import Image\nB(functools.partial(Image))(x)', pinned) !== null,
      true,
    );
    // without the requirement (and by default) the line is not shown as code
    assert.equal(plainUsage(line), null);
    assert.equal(plainUsage(line, importableFrom(distributionNames(['torch>=2.1.0']))), null);
    for (const bad of [
      'from torch import nn\nB(nn.ReLU())(x)',
      'from tinylayers import _Scale\nB(_Scale(8))(x)',
      'from tinylayers._impl import Scale\nB(Scale(8))(x)',
      'from tinylayers import Scale as S\nB(S(8))(x)',
      'from tinylayers import *\nB(Scale(8))(x)',
      'from .tinylayers import Scale\nB(Scale(8))(x)',
      'from tinylayers import Scale; import os\nB(Scale(8))(x)',
      'value1 = H()\nfrom tinylayers import Scale\nB(value1)(x)',
      'from tinylayers import (Scale)\nB(Scale(8))(x)',
    ])
      assert.equal(plainUsage(bad, pinned), null, bad);
  });

  test('the names a line imports itself are not imported from the exported module', () => {
    const text = '__all__ = ["Head"]\nclass Head:\n    pass\nclass Scale:\n    pass\n';
    assert.deepEqual(usageImports('m', 'Head', text, 'from tinylayers import Scale\nHead(Scale(8))(x)'), [
      'import torch',
      'from m import *',
      'from m import Head',
    ]);
  });
});

describe('usage lines importing from an installed distribution, exported and run as written', { skip }, () => {
  const work = tempDir('nnrag-usage-installed-');
  const venv = path.join(work, 'venv');
  const python = path.join(venv, 'bin', 'python');
  const store = path.join(work, 'store');
  const cli = (...args: string[]) =>
    spawnSync(process.execPath, [bin, ...args, '--store', store], { encoding: 'utf8', timeout: 600000 });
  const recs = new Map<string, Rec>();

  before(() => {
    // a virtual environment over the system's torch (PEP 405), with the fixture
    // distribution installed as pip would leave it: its package and its .dist-info
    chmodSync(work, 0o755); // the sandbox runs as an unprivileged user when the tests run as root
    execFileSync(PY, ['-m', 'venv', '--system-site-packages', '--without-pip', venv]);
    const site = execFileSync(python, ['-c', "import sysconfig; print(sysconfig.get_paths()['purelib'])"], {
      encoding: 'utf8',
    }).trim();
    for (const f of readdirSync(fixture('usagepkg', 'site')))
      cpSync(fixture('usagepkg', 'site', f), path.join(site, f), { recursive: true });
    const ex = cli(
      'extract',
      '--repo',
      fixture('usagepkg', 'repo'),
      '--blocks',
      'Head',
      'Shifted',
      'Both',
      'Plain',
      '--python',
      python,
      '--workers',
      '1',
      '--json',
    );
    assert.equal(ex.status, 0, ex.stderr);
    for (const r of JSON.parse(ex.stdout) as Rec[]) recs.set(r.id.split('.').pop()!, r);
  });

  function exportInto(name: string, json = true) {
    const dir = tempDir('nnrag-usage-installed-out-');
    const exp = cli('export', recs.get(name)!.id, '--into', dir, ...(json ? ['--json'] : []));
    assert.equal(exp.status, 0, exp.stderr);
    return { dir, exp };
  }

  /** Export, then run the header's imports and the line as written in the fresh folder
   *  with the environment's interpreter. */
  function runUsage(name: string, check: string) {
    const { dir, exp } = exportInto(name);
    const report = JSON.parse(exp.stdout) as { module: string; usage: string | null; file: string };
    assert.ok(report.usage, `${name}: a usage line was exported`);
    const header = readFileSync(report.file, 'utf8').split('\n');
    const at = header.findIndex((l) => l.startsWith('# Usage, as validated'));
    assert.ok(at >= 0, 'the header shows the usage');
    const imports = [...header[at].matchAll(/`([^`]+)`/g)].map((m) => m[1]);
    const lines = report.usage!.split('\n');
    const code = [...imports, ...lines.slice(0, -1), `y = ${lines[lines.length - 1]}`, check].join('\n');
    const r = spawnSync(python, ['-c', code], {
      cwd: dir,
      encoding: 'utf8',
      env: { PATH: '/usr/bin:/bin', PYTHONDONTWRITEBYTECODE: '1' },
    });
    assert.equal(r.status, 0, `${report.usage}\n${r.stderr}`);
    return {
      usage: report.usage!,
      out: r.stdout.trim(),
      requirements: readFileSync(path.join(dir, 'requirements.txt'), 'utf8'),
    };
  }

  test('an instance of an installed class: the line imports it by its package, the export pins the distribution', () => {
    const rec = recs.get('Head')!;
    assert.equal(rec.ok, true, JSON.stringify(rec.validation));
    assert.equal(rec.validation.stages.equivalence, 'pass');
    assert.equal(rec.validation.usageCheck, 'ran');
    assert.ok(rec.validation.environment?.distributions?.includes('tinylayers==0.3'));
    const { usage, out, requirements } = runUsage('Head', 'print(tuple(y.shape), type(y).__name__, Scale.__module__)');
    // Scale(8, 2.0) as recorded: the witness's float stays a float through the store
    assert.match(usage, /^from tinylayers import Scale\nHead\(Scale\(8, 2\.0\), 8\)\(torch\.randn\(2, 8\)\)$/);
    assert.equal(out, '(2, 2) Tensor tinylayers.blocks');
    assert.match(requirements, /^tinylayers>=0\.3$/m);
  });

  test('a class exported by its own module only: imported from that module', () => {
    const rec = recs.get('Shifted')!;
    assert.equal(rec.ok, true, JSON.stringify(rec.validation));
    const { usage, out, requirements } = runUsage('Shifted', 'print(tuple(y.shape))');
    assert.equal(usage, 'from tinylayers.blocks import Shift\nShifted(8, layer=Shift)(torch.randn(2, 8))');
    assert.equal(out, '(2, 8)');
    assert.match(requirements, /^tinylayers>=0\.3$/m);
  });

  test('an installed class and a class of the repository: the line imports the one, the module copies the other', () => {
    const rec = recs.get('Both')!;
    assert.equal(rec.ok, true, JSON.stringify(rec.validation));
    assert.deepEqual((rec as Rec & { emission: { usageRoots?: string[] } }).emission.usageRoots, ['wrapnet.acts.Gate']);
    const { usage, out } = runUsage('Both', 'print(tuple(y.shape), Gate.__module__ == Both.__module__)');
    assert.match(usage, /^from tinylayers import Scale\nBoth\(Scale\(8, 2\.0\), act=Gate\)\(torch\.randn\(2, 8\)\)$/);
    assert.equal(out, '(2, 8) True');
  });

  test('a block whose module does not import the distribution: no line, and the record, export and CLI say why', () => {
    const rec = recs.get('Plain')!;
    assert.equal(rec.ok, true, JSON.stringify(rec.validation));
    assert.equal(rec.validation.usage ?? null, null);
    assert.match(
      rec.validation.usageSkipped ?? '',
      /tinylayers\.blocks\.Shift: not a definition of the indexed repositories/,
    );
    assert.ok(!rec.validation.environment?.distributions?.some((d) => d.startsWith('tinylayers')));
    const { exp } = exportInto('Plain');
    const report = JSON.parse(exp.stdout) as { usage: string | null; usageSkipped: string | null; file: string };
    assert.equal(report.usage, null);
    assert.equal(report.usageSkipped, rec.validation.usageSkipped);
    assert.match(readFileSync(report.file, 'utf8'), /^# No usage line: tinylayers\.blocks\.Shift: not a definition/m);
    const { exp: text } = exportInto('Plain', false);
    assert.match(text.stdout, /^no usage line: tinylayers\.blocks\.Shift/m);
  });
});
