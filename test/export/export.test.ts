// `nnrag export`: a validated block copied into a fresh project imports and runs forward
// there (real PyTorch, /usr/bin/python3); requirements are merged by PEP 503 names keeping
// the project's pins; nothing is written outside the target folder, symbolic links that
// lead outside are refused, and existing files are replaced only with --force.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { before, describe, test } from 'node:test';
import { IndexStore } from '../../src/store/store.js';
import { getExtraction, putExtraction } from '../../src/store/records.js';
import { addValidation, validationsOf } from '../../src/records/block.js';
import { compareRelease } from '../../src/environment/requirements.js';
import { exportBlock, mergeRequirements, requirementName, snakeCase } from '../../src/export/export.js';
import { NnragError, UsageError } from '../../src/util/errors.js';
import { repoRoot, tempDir } from '../helpers.js';
import { needsSandbox } from '../support/tier.js';
import { buildExampleLibrary } from '../search/library-fixture.js';

const bin = path.join(repoRoot, 'dist', 'src', 'cli', 'bin.js');
const PY = '/usr/bin/python3';
const WA = 'tinyvision.layers.attention.WindowAttention';

describe('requirements merge', () => {
  test('names compare by PEP 503 normalisation; the project pin wins', () => {
    const existing =
      '# deps\n-r base.txt\nTorch>=2.0  # pinned by us\ntyping_extensions==4.0\n--index-url https://example.org/simple\nnumpy';
    const r = mergeRequirements(existing, [
      'torch==1.13.1',
      'typing-extensions==4.4.0',
      'einops==0.6.0',
      'NumPy==1.24.2',
    ]);
    assert.deepEqual(r.added, ['einops==0.6.0']);
    assert.deepEqual(r.kept, ['torch==1.13.1', 'typing-extensions==4.4.0', 'NumPy==1.24.2']);
    assert.equal(r.text, existing + '\neinops==0.6.0\n', 'existing lines kept as written, in order');
    assert.equal(mergeRequirements('', ['torch==1.13.1']).text, 'torch==1.13.1\n');
    assert.equal(mergeRequirements('torch\n', ['torch==1.13.1']).text, 'torch\n');
  });

  test('requirement names of requirements-file lines', () => {
    assert.equal(requirementName('zope.interface>=5 ; python_version > "3.8"'), 'zope.interface');
    assert.equal(requirementName('pkg[extra]==1'), 'pkg');
    assert.equal(requirementName('name @ https://x/y.whl'), 'name');
    assert.equal(requirementName('  # comment'), null);
    assert.equal(requirementName('-e .'), null);
  });

  test('default module names', () => {
    assert.equal(snakeCase('WindowAttention'), 'window_attention');
    assert.equal(snakeCase('MHSABlock'), 'mhsa_block');
    assert.equal(snakeCase('ConvBnAct'), 'conv_bn_act');
  });
});

describe('export into a project', { skip: needsSandbox() }, () => {
  let dir: string;
  let store: IndexStore;
  before(async () => {
    dir = await buildExampleLibrary();
    store = IndexStore.open(dir);
  });

  test('round trip: the exported block imports and runs forward in a fresh project', async () => {
    const proj = tempDir('nnrag-proj-');
    writeFileSync(path.join(proj, 'requirements.txt'), 'numpy>=1.20\nTORCH>=1.10\n');
    const rep = await exportBlock(store, WA, { into: proj });
    assert.equal(rep.action, 'written');
    assert.equal(rep.file, path.join(proj, 'window_attention.py'));
    assert.deepEqual(rep.added, [], 'torch is already required by the project');
    assert.equal(rep.kept.length, 1);
    // (a pre-release such as Debian's 1.13.0a0 keeps its label: the bound admits it)
    assert.match(
      rep.kept[0],
      /^torch>=\d+(\.\d+)*((a|b|rc)\d+)?$/,
      'a lower bound at the tested version, no upper bound',
    );
    assert.equal(readFileSync(path.join(proj, 'requirements.txt'), 'utf8'), 'numpy>=1.20\nTORCH>=1.10\n');
    const text = readFileSync(rep.file, 'utf8');
    assert.match(text, /^# Exported by nnrag from tinyvision\.layers\.attention\.WindowAttention \(validated/);
    assert.match(text, /# Provenance \(repository @ revision \| path:lines \| SWHID of the source file\):/);
    assert.match(text, /tinyvision\/layers\/attention\.py:[\d,-]+ \| swh:1:cnt:[0-9a-f]{40}/);
    const out = execFileSync(
      PY,
      [
        '-c',
        'import torch\nfrom window_attention import WindowAttention\nm = WindowAttention()\ny = m(torch.randn(2, 10, 32))\nprint(tuple(y.shape))',
      ],
      { cwd: proj, encoding: 'utf8', env: { PATH: '/usr/bin:/bin', PYTHONDONTWRITEBYTECODE: '1' } },
    );
    assert.equal(out.trim(), '(2, 10, 32)');
  });

  test('dotted module names create packages; requirements.txt is created with the pins', async () => {
    const proj = tempDir('nnrag-proj-');
    const rep = await exportBlock(store, 'tinyvision.layers.conv.ConvBnAct', {
      into: proj,
      module: 'mynet.blocks.conv',
    });
    assert.equal(rep.file, path.join(proj, 'mynet', 'blocks', 'conv.py'));
    assert.deepEqual(rep.packages, [
      path.join(proj, 'mynet', '__init__.py'),
      path.join(proj, 'mynet', 'blocks', '__init__.py'),
    ]);
    assert.equal(rep.added.length, 1);
    assert.match(rep.added[0], /^torch>=\d+(\.\d+)*((a|b|rc)\d+)?$/);
    assert.equal(readFileSync(path.join(proj, 'requirements.txt'), 'utf8'), rep.added[0] + '\n');
    const out = execFileSync(
      PY,
      [
        '-c',
        'import torch\nfrom mynet.blocks.conv import ConvBnAct\nprint(tuple(ConvBnAct()(torch.randn(1, 3, 16, 16)).shape))',
      ],
      {
        cwd: proj,
        encoding: 'utf8',
        env: { PATH: '/usr/bin:/bin', PYTHONDONTWRITEBYTECODE: '1' },
      },
    );
    assert.equal(out.trim(), '(1, 16, 16, 16)');
  });

  test('an existing module is replaced only with force', async () => {
    const proj = tempDir('nnrag-proj-');
    const file = path.join(proj, 'blk.py');
    writeFileSync(file, 'MINE = 1\n');
    await assert.rejects(
      exportBlock(store, WA, { into: proj, module: 'blk' }),
      (e: unknown) => e instanceof NnragError && /--force/.test(e.message),
    );
    assert.equal(readFileSync(file, 'utf8'), 'MINE = 1\n');
    const rep = await exportBlock(store, WA, { into: proj, module: 'blk', force: true });
    assert.equal(rep.action, 'replaced');
    assert.match(readFileSync(file, 'utf8'), /class WindowAttention/);
    assert.equal(
      (await exportBlock(store, WA, { into: proj, module: 'blk' })).action,
      'unchanged',
      'same content is not an overwrite',
    );
    assert.deepEqual(
      readdirSync(proj).filter((f) => f.endsWith('.tmp')),
      [],
      'no temporary files left',
    );
  });

  test('nothing is written outside the project', async () => {
    const root = tempDir('nnrag-proj-');
    const proj = path.join(root, 'proj');
    const outside = path.join(root, 'outside');
    mkdirSync(proj);
    mkdirSync(outside);
    for (const bad of ['../evil', '/etc/passwd', 'a/b', 'a..b', 'class', '1abc', 'x.', '']) {
      await assert.rejects(
        exportBlock(store, WA, { into: proj, module: bad }),
        (e: unknown) => e instanceof UsageError,
        bad,
      );
    }
    // a package folder that is a symbolic link leading outside
    symlinkSync(outside, path.join(proj, 'pkg'));
    await assert.rejects(exportBlock(store, WA, { into: proj, module: 'pkg.wa' }), /symbolic link/);
    // a requirements file that is a symbolic link leading outside
    const proj2 = path.join(root, 'proj2');
    mkdirSync(proj2);
    writeFileSync(path.join(outside, 'reqs.txt'), 'numpy\n');
    symlinkSync(path.join(outside, 'reqs.txt'), path.join(proj2, 'requirements.txt'));
    await assert.rejects(exportBlock(store, WA, { into: proj2 }), /symbolic link/);
    // the target itself a link to outside, even with --force
    const proj3 = path.join(root, 'proj3');
    mkdirSync(proj3);
    symlinkSync(path.join(outside, 'target.py'), path.join(proj3, 'wa.py'));
    await assert.rejects(exportBlock(store, WA, { into: proj3, module: 'wa', force: true }), /symbolic link/);
    assert.deepEqual(readdirSync(outside).sort(), ['reqs.txt']);
    assert.equal(readFileSync(path.join(outside, 'reqs.txt'), 'utf8'), 'numpy\n');
    // a link inside the project that stays inside is fine
    const proj4 = path.join(root, 'proj4');
    mkdirSync(path.join(proj4, 'real'), { recursive: true });
    symlinkSync(path.join(proj4, 'real'), path.join(proj4, 'alias'));
    const rep = await exportBlock(store, WA, { into: proj4, module: 'alias.wa' });
    assert.ok(existsSync(path.join(proj4, 'real', 'wa.py')));
    assert.deepEqual(rep.packages, []);
  });

  test('pins and the tested versions come from the environments the block passed in, not the host', async () => {
    // the block also passed in a second environment (a root filesystem with torch 2.6 and
    // einops): its facts are what export pins (the lowest tested version of each
    // distribution) and lists, whatever interpreter runs export
    const e = getExtraction(store, WA)!;
    const host = e.record.validation!;
    assert.ok(host.environment, 'validation records the environment facts');
    const rootfs = {
      ...host,
      envId: 'f00dfeedf00dfeed',
      environment: {
        id: 'f00dfeedf00dfeed',
        label: '/srv/envs/t26 (python 3.13.5, torch 2.6.0+cpu)',
        python: '3.13.5',
        torch: '2.6.0+cpu',
        rootfs: '/srv/envs/t26',
        distributions: ['einops==0.8.1', 'torch==2.6.0+cpu'],
      },
    };
    const merged = addValidation(validationsOf(e.record), rootfs, true);
    const saved = e.record;
    putExtraction(store, {
      ...e,
      record: { ...e.record, validation: merged.validation, validations: merged.validations, ok: merged.ok },
    });
    try {
      const proj = tempDir('nnrag-proj-');
      const rep = await exportBlock(store, WA, { into: proj });
      // the host's torch without its local label (a pre-release keeps its label)
      const hostTorch = host.environment!.torch.replace(/\+.*$/, '');
      // the lower of the two tested torch versions; einops from the environment that had it
      const lowest = compareRelease(hostTorch, '2.6.0') < 0 ? hostTorch : '2.6.0';
      assert.deepEqual(rep.added, ['einops>=0.8.1', `torch>=${lowest}`]);
      const text = readFileSync(rep.file, 'utf8');
      assert.match(text, /^# Tested with: python 3\.13\.5, torch 2\.6\.0\+cpu, einops 0\.8\.1 \(\/srv\/envs\/t26\)$/m);
      assert.ok(
        text.includes(`# Tested with: python ${host.environment!.python}, torch ${host.environment!.torch}`),
        text.slice(0, 400),
      );
    } finally {
      putExtraction(store, { ...e, record: saved });
    }
  });

  test('nnrag export: exit codes and --json', () => {
    const proj = tempDir('nnrag-proj-');
    const ok = spawnSync('node', [bin, 'export', 'WindowAttention', '--into', proj, '--store', dir, '--json'], {
      encoding: 'utf8',
    });
    assert.equal(ok.status, 0, ok.stderr);
    const rep = JSON.parse(ok.stdout);
    assert.equal(rep.id, WA);
    assert.equal(rep.importLine, 'from window_attention import WindowAttention');
    const again = spawnSync(
      'node',
      [bin, 'export', WA, '--into', proj, '--module', 'window_attention', '--store', dir],
      { encoding: 'utf8' },
    );
    assert.equal(again.status, 0, 'identical content');
    writeFileSync(path.join(proj, 'window_attention.py'), '# edited\n');
    const refused = spawnSync('node', [bin, 'export', WA, '--into', proj, '--store', dir], { encoding: 'utf8' });
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, /--force/);
    assert.equal(spawnSync('node', [bin, 'export', WA, '--store', dir], { encoding: 'utf8' }).status, 2, 'no --into');
    assert.equal(
      spawnSync('node', [bin, 'export', WA, '--into', proj, '--module', '../x', '--store', dir], { encoding: 'utf8' })
        .status,
      2,
    );
    assert.equal(
      spawnSync('node', [bin, 'export', WA, '--into', proj, '--force', '--store', dir], { encoding: 'utf8' }).status,
      0,
    );
  });
});
