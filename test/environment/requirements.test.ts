// Requirements are read from the real validation environment (/usr/bin/python3 with the
// Debian PyTorch build): torch's version must be what importlib.metadata reports.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { needsTorch } from '../support/tier.js';
import { existsSync } from 'node:fs';
import {
  resolveRequirements,
  requirementLines,
  publicVersion,
  topLevelName,
} from '../../src/environment/requirements.js';

const PY = '/usr/bin/python3';
const haveTorch =
  !needsTorch() &&
  existsSync(PY) &&
  (() => {
    try {
      execFileSync(PY, ['-c', 'import torch'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  })();

test('torch, numpy, PIL, stdlib and unknown imports in the validation environment', {
  skip: !haveTorch && 'no /usr/bin/python3 with torch',
}, async () => {
  const expected = execFileSync(
    PY,
    ['-c', 'import importlib.metadata as m; print(m.version("torch")); import torch; print(torch.__version__)'],
    { encoding: 'utf8' },
  )
    .trim()
    .split('\n');
  const reqs = await resolveRequirements([
    'torch.nn.functional',
    'torch',
    'numpy',
    'os.path',
    '__future__',
    'math',
    'PIL.Image',
    'einops_not_installed_xyz',
    'cv2_absent',
    '.relative',
  ]);
  const by = Object.fromEntries(reqs.map((r) => [r.importName, r]));
  assert.deepEqual(Object.keys(by), [
    'PIL',
    '__future__',
    'cv2_absent',
    'einops_not_installed_xyz',
    'math',
    'numpy',
    'os',
    'torch',
  ]);
  // torch==<installed version without the local label>, consistent with torch.__version__
  assert.equal(by.torch.pep508, `torch==${publicVersion(expected[0])}`);
  assert.ok(
    publicVersion(expected[1]).startsWith(by.torch.version!) ||
      by.torch.version!.startsWith(publicVersion(expected[1])),
  );
  assert.match(by.torch.pep508!, /^torch==1\.13\./);
  assert.match(by.numpy.pep508!, /^numpy==\d+\.\d+/);
  assert.match(by.PIL.pep508!, /^Pillow==\d/); // import name → distribution name
  for (const s of ['os', 'math', '__future__']) {
    assert.equal(by[s].stdlib, true);
    assert.equal(by[s].pep508, null);
  }
  assert.equal(by.einops_not_installed_xyz.pep508, 'einops_not_installed_xyz');
  assert.match(by.einops_not_installed_xyz.note ?? '', /not installed/);
  const lines = requirementLines(reqs);
  assert.ok(lines.includes(by.torch.pep508!));
  assert.ok(!lines.some((l) => l.startsWith('os')));
});

test('local labels kept on request; helpers', { skip: !haveTorch && 'no /usr/bin/python3 with torch' }, async () => {
  const full = execFileSync(PY, ['-c', 'import importlib.metadata as m; print(m.version("torch"))'], {
    encoding: 'utf8',
  }).trim();
  const [r] = await resolveRequirements(['torch'], { keepLocalVersion: true });
  assert.equal(r.pep508, `torch==${full}`);
  assert.equal(publicVersion('1.13.0a0+gitunknown'), '1.13.0a0');
  assert.equal(topLevelName('a.b.c'), 'a');
  assert.equal(topLevelName('..x'), null);
  assert.deepEqual(await resolveRequirements([]), []);
});

test('a missing interpreter is a clear error', async () => {
  await assert.rejects(
    resolveRequirements(['torch'], { python: '/nonexistent/python3' }),
    /cannot read installed distributions/,
  );
});
