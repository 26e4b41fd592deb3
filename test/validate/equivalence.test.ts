// Equivalence stage: the original block is imported from its (read-only bound)
// repository, both are built with the same arguments, the original's state_dict is
// loaded strictly into the extracted copy, and outputs on the same input are compared.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, cpSync } from 'node:fs';
import path from 'node:path';
import { fixture, tempDir } from '../helpers.js';
import { ValidatorPool, type ValidationRequest } from '../../src/validate/index.js';
import { cannotValidate, validateFixture } from './common.js';

const skip = await cannotValidate(true);

function eq(file: string, extra: Partial<ValidationRequest> = {}): ValidationRequest {
  return {
    id: `equiv/${file}`,
    source: validateFixture('equiv', file),
    className: 'ScaledGate',
    original: { module: 'eqpkg.blocks', className: 'ScaledGate', sysPath: [fixture('validate', 'equiv', 'repo')] },
    requiredStages: ['import', 'instantiate', 'forward', 'equivalence'],
    ...extra,
  };
}

describe('equivalence with the original module', { skip: skip ?? false }, () => {
  let pool: ValidatorPool;
  before(async () => {
    pool = await ValidatorPool.start({ workers: 1 });
  });
  after(async () => pool?.close());

  it('passes a faithful copy with identical outputs', async () => {
    const r = await pool.validate(eq('gate_same.py'));
    assert.equal(r.stages.equivalence, 'pass', `${r.equivalence?.reason} ${r.error}`);
    assert.equal(r.ok, true);
    assert.equal(r.equivalence?.status, 'pass');
    assert.equal(r.equivalence?.maxAbsDiff, 0);
    assert.equal(r.category, null);
  });

  it("builds the original with the original's classes where the arguments name the copy's", async () => {
    // the call site passes partial(ScaledGate, hidden=16): evaluated in the copy it names
    // the copy's ScaledGate; the original is given its own ScaledGate in its place.
    // `widths` comes from a helper only the original module has: plain data, so it is
    // computed in the original's namespace (dim = widths[1] = 16)
    const text =
      'class Net(nn.Module):\n    def __init__(self):\n        gate = partial(ScaledGate, hidden=16)\n' +
      '        widths = gate_widths(3)\n        self.body = GatedStack(widths[1], gate_layer=gate)\n';
    const source = 'from functools import partial\n' + validateFixture('equiv', 'stack_same.py');
    const r = await pool.validate(
      eq('stack_same.py', {
        source,
        className: 'GatedStack',
        original: { module: 'eqpkg.blocks', className: 'GatedStack', sysPath: [fixture('validate', 'equiv', 'repo')] },
        callSites: [{ module: 'net', text, offset: text.indexOf('GatedStack(') + 'GatedStack'.length }],
        dataSites: [],
      }),
    );
    const a = r.args as { args: unknown[]; kwargs: Record<string, unknown> };
    assert.deepEqual(a.args, [16]);
    assert.match(String(a.kwargs.gate_layer), /partial\(<class 'nnrag candidate\.ScaledGate'>, hidden=16\)/);
    assert.equal(r.stages.equivalence, 'pass', `${r.equivalence?.reason} ${r.error}`);
    assert.equal(r.equivalence?.maxAbsDiff, 0);
  });

  it('an arguments-only request runs the stages up to forward as the whole one does, then stops', async () => {
    // the arguments come from a call site and data only the original module has (as above):
    // the arguments-only run chooses the same ones, and reports the same stages up to
    // forward, but runs no usage line and builds no original
    const text =
      'class Net(nn.Module):\n    def __init__(self):\n        gate = partial(ScaledGate, hidden=16)\n' +
      '        widths = gate_widths(3)\n        self.body = GatedStack(widths[1], gate_layer=gate)\n';
    const req = eq('stack_same.py', {
      source: 'from functools import partial\n' + validateFixture('equiv', 'stack_same.py'),
      className: 'GatedStack',
      original: { module: 'eqpkg.blocks', className: 'GatedStack', sysPath: [fixture('validate', 'equiv', 'repo')] },
      callSites: [{ module: 'net', text, offset: text.indexOf('GatedStack(') + 'GatedStack'.length }],
      dataSites: [],
      requiredStages: ['import', 'instantiate', 'forward'],
    });
    const whole = await pool.validate(req);
    const only = await pool.validate({ ...req, argumentsOnly: true });
    assert.equal(whole.stages.equivalence, 'pass', `${whole.equivalence?.reason} ${whole.error}`);
    assert.ok(whole.usage, whole.usageSkipped);
    for (const s of ['parse', 'compile', 'import', 'instantiate', 'forward'] as const)
      assert.equal(only.stages[s], whole.stages[s], s);
    assert.deepEqual(only.args, whole.args);
    assert.deepEqual(only.input_shapes, whole.input_shapes);
    assert.equal(only.argumentsSource, whole.argumentsSource);
    // (a stage that did not run is reported as skipped, as after a failed forward)
    assert.equal(only.stages.equivalence, 'skip');
    assert.equal(only.equivalence, undefined);
    assert.equal(only.usage, undefined);
    assert.equal(only.usageCheck, undefined);
    // (its arguments name nothing the module lacks: it did not go on as the whole request)
    assert.equal(only.whole, undefined);
  });

  it("finds the original's class in another module of its package when the block's module does not name it", async () => {
    const text =
      'class Net(nn.Module):\n    def __init__(self):\n        self.body = GatedStack2(12, gate_layer=partial(ScaledGate, hidden=16))\n';
    const r = await pool.validate(
      eq('stack2_same.py', {
        source: 'from functools import partial\n' + validateFixture('equiv', 'stack2_same.py'),
        className: 'GatedStack2',
        original: { module: 'eqpkg.stack2', className: 'GatedStack2', sysPath: [fixture('validate', 'equiv', 'repo')] },
        callSites: [{ module: 'net', text, offset: text.indexOf('GatedStack2(') + 'GatedStack2'.length }],
      }),
    );
    assert.equal(r.stages.equivalence, 'pass', `${r.equivalence?.reason} ${r.error}`);
  });

  it('survives a repository whose import leaves a non-module in sys.modules', async () => {
    // a pool of its own, so this repository's zygote is made by importing oddmod
    const own = await ValidatorPool.start({ workers: 1 });
    try {
      const r = await own.validate(
        eq('gate_same.py', {
          original: {
            module: 'eqpkg.oddmod',
            className: 'ScaledGate',
            sysPath: [fixture('validate', 'equiv', 'repo')],
          },
        }),
      );
      assert.equal(r.category, null, `${r.stage} ${r.error}`);
      assert.equal(r.stages.equivalence, 'pass', `${r.equivalence?.reason}`);
    } finally {
      await own.close();
    }
  });

  it('gives the equivalence stage a wall-clock budget of its own', async () => {
    // forward sleeps 1 s: validation takes ~1 s, equivalence two more forwards (~2 s);
    // together over the 2.5 s limit, each part within it
    const r = await pool.validate(
      eq('slow_same.py', {
        className: 'SlowGate',
        original: { module: 'eqpkg.blocks', className: 'SlowGate', sysPath: [fixture('validate', 'equiv', 'repo')] },
        timeoutMs: 2500,
      }),
    );
    assert.equal(r.category, null, `${r.stage} ${r.error}`);
    assert.equal(r.stages.equivalence, 'pass');
    assert.ok(r.ms > 2500, `took ${r.ms} ms`);
  });

  it('skips (does not fail) equivalence that runs out of time, with the reason', async () => {
    // forward sleeps 1 s: the copy passes forward within 1.6 s, but equivalence (the
    // original's forward and the copy's again) cannot finish inside its own 1.6 s
    const r = await pool.validate(
      eq('slow_same.py', {
        className: 'SlowGate',
        original: { module: 'eqpkg.blocks', className: 'SlowGate', sysPath: [fixture('validate', 'equiv', 'repo')] },
        timeoutMs: 1600,
        requiredStages: ['import', 'instantiate', 'forward'],
      }),
    );
    assert.equal(r.stages.forward, 'pass', `${r.stage} ${r.error}`);
    assert.equal(r.stages.equivalence, 'skip');
    assert.equal(r.equivalence?.status, 'skip');
    assert.match(r.equivalence?.reason ?? '', /not decided: .*timeout/);
    assert.equal(r.category, null);
    assert.equal(r.stage, null);
    assert.equal(r.ok, true);
  });

  it('fails a copy that computes something else', async () => {
    const r = await pool.validate(eq('gate_diff.py'));
    assert.equal(r.stages.forward, 'pass');
    assert.equal(r.stages.equivalence, 'fail');
    assert.equal(r.ok, false);
    assert.equal(r.stage, 'equivalence');
    assert.equal(r.category, 'not-equivalent');
    assert.ok(r.equivalence!.maxAbsDiff! > 1e-4, String(r.equivalence!.maxAbsDiff));
  });

  it('fails a copy whose parameters do not load strictly', async () => {
    const r = await pool.validate(eq('gate_struct.py'));
    assert.equal(r.stages.equivalence, 'fail');
    assert.match(r.equivalence!.reason!, /state_dict/);
    assert.match(r.equivalence!.reason!, /scale|gain/);
  });

  it('skips, with the reason, when the original does not import', async () => {
    const r = await pool.validate(
      eq('gate_same.py', {
        original: { module: 'eqpkg.nowhere', className: 'ScaledGate', sysPath: [fixture('validate', 'equiv', 'repo')] },
        requiredStages: undefined,
      }),
    );
    assert.equal(r.stages.equivalence, 'skip');
    assert.match(r.equivalence!.reason!, /does not import/);
    assert.equal(r.ok, true); // equivalence is not required by default
  });

  it('leaves out a repository root the sandbox user cannot read, and keeps working', {
    skip: process.getuid?.() !== 0 ? 'only meaningful when nnrag runs as root' : false,
  }, async () => {
    const hidden = tempDir('nnrag-private-root-');
    cpSync(fixture('validate', 'equiv', 'repo'), path.join(hidden, 'repo'), { recursive: true });
    chmodSync(hidden, 0o700);
    const r = await pool.validate(
      eq('gate_same.py', {
        original: { module: 'eqpkg.blocks', className: 'ScaledGate', sysPath: [path.join(hidden, 'repo')] },
        requiredStages: undefined,
      }),
    );
    assert.equal(r.ok, true, `${r.error}`);
    assert.equal(r.stages.equivalence, 'skip');
    assert.match(r.equivalence!.reason!, /does not import/);
    const again = await pool.validate(eq('gate_same.py'));
    assert.equal(again.stages.equivalence, 'pass');
  });

  it('does not let a candidate import the original package it was extracted from', async () => {
    // the original repository is imported once for equivalence, but hidden while the
    // candidate imports: an extracted module that still needs it is missing-extern
    const source = 'import eqpkg\n' + validateFixture('equiv', 'gate_same.py');
    const r = await pool.validate(eq('gate_same.py', { source }));
    assert.equal(r.stage, 'import');
    assert.equal(r.category, 'missing-extern', `${r.error}`);
  });

  it('survives a candidate that kills the process it was forked from', async () => {
    const source =
      validateFixture('equiv', 'gate_same.py') + '\nimport os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n';
    const r = await pool.validate(eq('gate_same.py', { source }));
    assert.equal(r.ok, false);
    assert.equal(r.category, 'crash');
    const again = await pool.validate(eq('gate_same.py'));
    assert.equal(again.stages.equivalence, 'pass', `${again.error} ${again.equivalence?.reason}`);
  });

  it('does not let the original repository be written', async () => {
    const root = fixture('validate', 'equiv', 'repo');
    const source =
      validateFixture('equiv', 'gate_same.py') +
      `\nopen(${JSON.stringify(root + '/eqpkg/injected.py')}, 'w').write('x = 1')\n`;
    const r = await pool.validate(eq('gate_same.py', { source }));
    assert.equal(r.stage, 'import');
    assert.equal(r.category, 'sandbox-denied', `${r.error}`);
  });
});
