// A missing-extern failure as a requirement: the module of the error, its distribution,
// the Debian package, and whether the environment could have it — asked of the host's
// real dpkg and apt (skipped where there is no apt). And the report's split of what the
// environment lacks from failures of the blocks, with equivalence skips by reason.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { missingLookup, missingModuleOf } from '../../src/validate/missing.js';
import { installedDebianPackages } from '../../src/environment/debian.js';
import { environmentLacks, equivalenceSkips, skipReason } from '../../src/library/report-environment.js';
import { which } from '../../src/validate/environment.js';

test('the missing module of an error', () => {
  assert.deepEqual(missingModuleOf("ModuleNotFoundError: No module named 'mmcv.ops'"), {
    module: 'mmcv',
    version: false,
  });
  assert.deepEqual(missingModuleOf("AttributeError: module 'torch.nn' has no attribute 'RMSNorm'"), {
    module: 'torch',
    version: true,
  });
  assert.equal(missingModuleOf('NameError: name x is not defined'), null);
});

const apt = which('apt-cache') && which('dpkg-query');

test('verdicts from the real apt: Debian has it and it is not installed; no package at all; installed (another version)', {
  skip: !apt && 'no apt here',
}, async () => {
  const installed = new Set(installedDebianPackages('/').map((p) => p.split('=')[0]));
  const lookup = missingLookup({ rootfs: null });
  const none = await lookup("ModuleNotFoundError: No module named 'nnrag_no_such_module_q'");
  assert.equal(none?.verdict, 'no-package');
  assert.equal(none?.debian, 'python3-nnrag-no-such-module-q');
  // a Debian Python package this host has in its lists but not installed, if any
  const candidates = ['python3-munkres', 'python3-xxhash', 'python3-yapf', 'python3-tabulate'].filter(
    (p) => !installed.has(p),
  );
  const policy = candidates.length ? execFileSync('apt-cache', ['policy', ...candidates]).toString() : '';
  const avail = candidates.find((p) =>
    new RegExp(`^${p}:\\n\\s+Installed: \\(none\\)\\n\\s+Candidate: (?!\\(none\\))`, 'm').test(policy),
  );
  if (avail) {
    const mod = avail.slice('python3-'.length);
    const m = await lookup(`ModuleNotFoundError: No module named '${mod}'`);
    assert.equal(m?.verdict, 'lacks');
    assert.equal(m?.debian, avail);
    assert.ok(m?.candidate);
  }
  // torch is installed (python3-torch): a missing submodule is another version
  const t = await lookup("ModuleNotFoundError: No module named 'torch.nn.attention'");
  if (installed.has('python3-torch')) assert.equal(t?.verdict, 'version');
});

test('the report keeps what the environment lacks apart, and counts equivalence skips by reason', () => {
  const rec = (status: string, validation: Record<string, unknown>) => ({ status, record: { validation } }) as never;
  const lacks = {
    module: 'cv2',
    distribution: 'opencv-python',
    debian: 'python3-opencv',
    candidate: '4.10',
    installed: false,
    verdict: 'lacks',
  };
  const records = [
    rec('failed', { category: 'missing-extern', missing: lacks }),
    rec('failed', { category: 'missing-extern', missing: lacks }),
    rec('failed', { category: 'missing-extern', missing: { ...lacks, verdict: 'version' } }),
    rec('failed', { category: 'runtime-error' }),
    rec('validated', {
      stages: { forward: 'pass', equivalence: 'skip' },
      equivalence: { status: 'skip', reason: "original does not import: ModuleNotFoundError: No module named 'cv2'" },
    }),
    rec('validated', {
      stages: { forward: 'pass', equivalence: 'skip' },
      equivalence: { status: 'skip', reason: "original does not import: ModuleNotFoundError: No module named 'cv2.x'" },
    }),
    rec('validated', { stages: { forward: 'pass', equivalence: 'pass' } }),
  ];
  assert.deepEqual(
    environmentLacks(records).map((e) => [e.module, e.blocks, e.verdict]),
    [['cv2', 2, 'lacks']],
  );
  assert.deepEqual(equivalenceSkips(records), { 'original does not import: missing cv2': 2 });
  assert.equal(
    skipReason('original forward failed: RuntimeError: size 3 vs 4'),
    'original forward failed: RuntimeError',
  );
});
