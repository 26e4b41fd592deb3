// A worker's zygote serves every top-level package of its repository roots: a request
// whose module belongs to another package of the same roots (utils.loss beside models.net)
// imports it into the zygote as a sibling module (worker.py zygote_of_roots) instead of a
// second zygote importing the repository's common modules again. And the usage line's
// time is reported apart (`usageMs`): it runs between forward and equivalence, in no
// stage's timing, with its parts (its build, its call, its calls on other draws); so is
// the rest of a request's time outside its stages, in its parts (`outside`: fork, the
// child's start and exit, clean-up, ...), and the CPU time of the zygote's import. Real
// sandbox, real torch; the fixture's common module costs a second of CPU at import, its
// loss block half a second to build, and its dropout block draws a mask in training mode.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fixture } from '../helpers.js';
import { ValidatorPool, type ValidationRequest } from '../../src/validate/index.js';
import { cannotValidate } from './common.js';
import { originalRequests, passesWithOriginal } from './zygote-fixture.js';

const skip = await cannotValidate(true);
const dir = fixture('validate', 'twotops');

describe('zygote: one per repository roots', { skip: skip ?? false }, () => {
  let pool: ValidatorPool;
  let reqs: Map<string, ValidationRequest>;
  before(async () => {
    reqs = await originalRequests(dir, 'twotops', ['models.net.Net', 'utils.loss.Smooth', 'utils.loss.Jitter']);
    // one worker: both requests meet the same worker
    pool = await ValidatorPool.start({ workers: 1, roots: [dir] });
  });
  after(async () => pool?.close());

  it("imports another package's module into the zygote of the same roots", async () => {
    const first = await pool.validate(reqs.get('models.net.Net')!);
    passesWithOriginal(first);
    // the zygote's import (models.net, utils.general's second of CPU) is the first's
    assert.ok(first.zygoteMs !== undefined && first.zygoteMs >= 900, `first import ${first.zygoteMs} ms`);
    // and its CPU time, the zygote's own from its fork (the cost table's CPU column)
    assert.ok(
      first.zygoteCpuMs !== undefined && first.zygoteCpuMs >= 800,
      `first import ${first.zygoteCpuMs} ms of CPU`,
    );
    const second = await pool.validate(reqs.get('utils.loss.Smooth')!);
    passesWithOriginal(second);
    // utils.loss imported into that zygote: utils.general is not imported a second time
    assert.equal(second.zygoteSibling, true, JSON.stringify({ ms: second.zygoteMs }));
    assert.ok(second.zygoteMs! < 900, `sibling import ${second.zygoteMs} ms`);
    // and again: nothing more to import
    const third = await pool.validate({ ...reqs.get('utils.loss.Smooth')!, id: 'utils.loss.Smooth#2' });
    passesWithOriginal(third);
    assert.equal(third.zygoteMs, undefined);
  });

  it('reports the usage line apart from the stages', async () => {
    const r = await pool.validate({ ...reqs.get('utils.loss.Smooth')!, id: 'utils.loss.Smooth#usage' });
    passesWithOriginal(r);
    assert.equal(r.usageCheck, 'ran', r.usageSkipped);
    // the line builds the block again: its half second of CPU, outside every stage
    assert.ok(r.usageMs !== undefined && r.usageMs >= 450, `usage line ${r.usageMs} ms`);
    const staged = Object.values(r.timings).reduce((a, b) => a + (b ?? 0), 0);
    assert.ok(staged + r.usageMs <= r.ms, `stages ${staged} + usage ${r.usageMs} > request ${r.ms} ms`);
    // and their CPU time, read by the worker: the half second of CPU in the usage line and
    // in instantiate, none of it counted twice (one thread: the CPU of the stages and the
    // line within the request's wall time, but for the worker's lag in reading it)
    assert.ok(r.usageCpuMs !== undefined && r.usageCpuMs >= 400, `usage line ${r.usageCpuMs} ms of CPU`);
    assert.ok((r.cpuTimings?.instantiate ?? 0) >= 400, JSON.stringify(r.cpuTimings));
    const cpu = Object.values(r.cpuTimings ?? {}).reduce((a, b) => a + (b ?? 0), 0) + r.usageCpuMs;
    assert.ok(cpu <= r.ms + 200, `${cpu} ms of CPU in a request of ${r.ms} ms`);
  });

  it('reports the time outside the stages in its parts, with their CPU', async () => {
    const r = await pool.validate({ ...reqs.get('utils.loss.Smooth')!, id: 'utils.loss.Smooth#outside' });
    passesWithOriginal(r);
    const parts = r.outside ?? {};
    // a candidate forked from the zygote, started, reported, exited and was cleaned up
    // after; then its scratch folder was removed, the sandbox swept, and the zygote's
    // worker cleaned up behind the zygote
    for (const part of ['fork', 'child start', 'child between stages', 'child exit', 'clean-up'])
      assert.ok(parts[part] !== undefined, `${part}: ${JSON.stringify(parts)}`);
    for (const part of ['scratch removal', 'sweep', "zygote's worker"])
      assert.ok(parts[part] !== undefined, `${part}: ${JSON.stringify(parts)}`);
    // the parts inside the request's time are the rest of it beside the stages and the
    // usage line (each clock read a moment apart)
    const staged = Object.values(r.timings).reduce((a, b) => a + (b ?? 0), 0) + (r.usageMs ?? 0);
    const inside = ['fork', 'child start', 'child between stages', 'child exit', 'clean-up'].reduce(
      (a, p) => a + parts[p][0],
      0,
    );
    assert.ok(Math.abs(staged + inside - r.ms) <= 20, `stages ${staged} + outside ${inside} against ${r.ms} ms`);
    // CPU where it can be read: the child's start (it forked from the zygote and ran)
    // and the worker's fork of it; none beyond what a request of this length can hold
    assert.ok(parts.fork[1] > 0 && parts['child start'][1] >= 0, JSON.stringify(parts));
    const cpu = Object.values(parts).reduce((a, [, c]) => a + c, 0);
    assert.ok(cpu <= r.ms + 200, `${cpu} ms of CPU outside the stages of a ${r.ms} ms request`);
  });

  it("reports the usage line's parts: its build, its call, its calls on other draws", async () => {
    const r = await pool.validate({ ...reqs.get('utils.loss.Smooth')!, id: 'utils.loss.Smooth#parts' });
    passesWithOriginal(r);
    assert.equal(r.usageCheck, 'ran', r.usageSkipped);
    const parts = r.usageParts ?? {};
    // the half second of CPU is the block's build, as the line writes it; one call, no
    // other draw (the call draws no random number)
    assert.ok((parts.build?.cpuMs ?? 0) >= 450, JSON.stringify(parts));
    assert.equal(parts.build?.n, 1);
    assert.equal(parts.call?.n, 1);
    assert.ok((parts.call?.cpuMs ?? 0) < 400, JSON.stringify(parts));
    assert.equal(parts.draws, undefined);
    // the parts lie within the line's time as the worker reads it (its CPU to a clock
    // tick, read as the child's reports arrive)
    const cpu = (parts.build?.cpuMs ?? 0) + (parts.call?.cpuMs ?? 0);
    assert.ok(cpu <= (r.usageCpuMs ?? 0) + 30, `parts ${cpu} ms, line ${r.usageCpuMs} ms of CPU`);
    assert.ok((parts.build?.ms ?? 0) + (parts.call?.ms ?? 0) <= (r.usageMs ?? 0) + 1, JSON.stringify(r));

    // dropout in training mode: the line's call drew a mask, so it is called again under
    // each other seed (snippet.py RESEEDS, six)
    const j = await pool.validate(reqs.get('utils.loss.Jitter')!);
    passesWithOriginal(j);
    assert.equal(j.usageCheck, 'ran', j.usageSkipped);
    assert.equal(j.usageParts?.call?.n, 1, JSON.stringify(j.usageParts));
    assert.equal(j.usageParts?.draws?.n, 6, JSON.stringify(j.usageParts));
  });
});
