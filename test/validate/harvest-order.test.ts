// The harvest's greedy order (witness/harvest.ts GreedyOrder), without a sandbox: every
// family's first member runs before any family's second, a family is exhausted only after
// IDLE_RUNS runs without a new class (not after one), entry points whose classes are all
// called are skipped, smaller numbered sizes go first within a family; the repository's
// memory budget, once spent, ends the order; a phase's budget counts steps, whatever CPU
// time they take, its backstop counts CPU time (and says the harvest is not reproducible),
// and a phase stops when coverage stops growing (harvestRepo); with two lanes, what runs and
// what it witnesses do not depend on which step finished first, nor on steps read from
// the store (reused at once) beside steps run again with another CPU time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ValidatorPool } from '../../src/validate/pool.js';
import {
  GreedyOrder,
  harvestRepo,
  IDLE_RUNS,
  nameStem,
  numberOf,
  HARVEST_LAG,
  PHASE_STEPS,
  reusable,
  STALL_RUNS,
  type HarvestEntry,
  type HarvestResult,
  type RunReuse,
} from '../../src/validate/witness/harvest.js';

const entry = (key: string, reach: string[], rank = 13): HarvestEntry => ({
  kind: 'registry',
  module: `pkg.${key.replace(/\d+$/, '')}`,
  qualname: key,
  via: `pkg.MODELS['${key}']`,
  plan: {},
  reach,
  rank,
  family: null,
});

const names = (b: HarvestEntry[]) => b.map((e) => e.qualname);

test('every family runs its first member before any family runs a second', () => {
  const big = ['a.Net', 'a.Block', 'a.Extra', 'a.More'];
  const order = new GreedyOrder([
    entry('net101', big),
    entry('net18', big),
    entry('net50', big),
    entry('small1', ['b.Small']),
  ]);
  // the family reaching more classes goes first, its smallest number first
  const first = order.next(1, false);
  assert.deepEqual(names(first), ['net18']);
  order.report(first[0], true, { 'a.Net': { called: true }, 'a.Block': { called: true } });
  // net50 still reaches two uncalled classes, but the other family has not run yet
  const second = order.next(1, false);
  assert.deepEqual(names(second), ['small1']);
  order.report(second[0], true, { 'b.Small': { called: true } });
  assert.deepEqual(names(order.next(1, false)), ['net50']);
});

test(`a family is exhausted after ${IDLE_RUNS} runs without a new class, not one`, () => {
  const reach = ['m.Model', 'm.Hidden'];
  const order = new GreedyOrder(['m1', 'm2', 'm3', 'm4', 'm5'].map((k) => entry(k, reach)));
  const ran: string[] = [];
  for (;;) {
    const b = order.next(1, false);
    if (!b.length) break;
    ran.push(...names(b));
    // every member builds Model; none reaches Hidden
    order.report(b[0], true, { 'm.Model': { called: true } });
  }
  // m1 gains, then IDLE_RUNS runs without gain exhaust the family
  assert.deepEqual(ran, ['m1', 'm2', 'm3'].slice(0, 1 + IDLE_RUNS));
  assert.equal(order.skipped, 5 - 1 - IDLE_RUNS);
});

test('entry points whose classes are all called are skipped; failed builds twice exhaust a family', () => {
  const order = new GreedyOrder([
    entry('a1', ['x.A']),
    entry('a2', ['x.A']),
    entry('f1', ['y.F']),
    entry('f2', ['y.F']),
    entry('f3', ['y.F']),
  ]);
  const ran: string[] = [];
  for (;;) {
    const b = order.next(2, false);
    if (!b.length) break;
    ran.push(...names(b));
    for (const e of b)
      order.report(e, e.qualname.startsWith('a'), e.qualname.startsWith('a') ? { 'x.A': { called: true } } : {});
  }
  assert.deepEqual(ran.sort(), ['a1', 'f1', 'f2']);
  assert.equal(order.skipped, 2);
});

test('numberOf reads the model name, not the registry path', () => {
  assert.equal(numberOf("tv.models._api.BUILTIN_MODELS['resnet18']"), 18);
  assert.equal(numberOf('tv.models.v2.resnet.ResNet'), 0);
  assert.equal(numberOf('pkg.net101'), 101);
});

test("the repository's memory budget, once the entry points' peaks sum past it, stops the harvest", () => {
  const order = new GreedyOrder(
    ['a', 'b', 'c', 'd'].map((k) => entry(`${k}1`, [`${k}.X`])),
    { memoryMb: 1000 },
  );
  const ran: string[] = [];
  for (;;) {
    const b = order.next(1, false);
    if (!b.length) break;
    ran.push(...names(b));
    order.report(b[0], true, { [b[0].reach[0]]: { called: true } }, 600);
  }
  assert.deepEqual(ran, ['a1', 'b1']);
  assert.equal(order.stopped, 'memory');
  assert.equal(order.memorySpent, 1200);
  assert.equal(order.pending.length, 2, 'the entry points left are not run');
});

test('two architectures of one module (one reach) are two families, each run first', () => {
  const reach = ['mx.Model', 'mx.Conv', 'mx.Partition'];
  const es = ['coat_nano', 'coat_tiny', 'coat_small', 'maxv_nano'].map((k) => ({
    ...entry(k, reach),
    via: `pkg.MODELS['${k}']`,
  }));
  const order = new GreedyOrder(es);
  const ran: string[] = [];
  for (let i = 0; i < 2; i++) {
    const b = order.next(1, false);
    ran.push(...names(b));
    order.report(
      b[0],
      true,
      b[0].qualname.startsWith('coat')
        ? { 'mx.Model': { called: true }, 'mx.Conv': { called: true } }
        : { 'mx.Partition': { called: true } },
    );
  }
  assert.deepEqual(ran, ['coat_nano', 'maxv_nano'], "the second architecture before the first one's second size");
  assert.equal(nameStem(es[0]), 'coat');
});

test('tests and documents start from what the builders covered: a test file reaching only called classes is skipped, one reaching an uncalled class runs first', () => {
  const builders = new GreedyOrder([entry('net1', ['a.Net', 'a.Block'])]);
  const b = builders.next(1, false);
  builders.report(b[0], true, { 'a.Net': { called: true }, 'a.Block': { called: true } }, 100);
  const doc = (file: string, reach: string[], kind: HarvestEntry['kind'] = 'test'): HarvestEntry => ({
    kind,
    module: '',
    qualname: file,
    via: `${kind}:${file}`,
    plan: {},
    reach,
    rank: 0,
    family: `${kind}:${file}`,
    file,
  });
  const docs = new GreedyOrder(
    [
      doc('tests/test_net.py', ['a.Net', 'a.Block']),
      doc('tests/test_layer.py', ['a.Net', 'a.Layer', 'a.Norm']),
      doc('README.md:3', ['a.Layer'], 'readme'),
    ],
    { memoryMb: 1000 },
  );
  docs.seed(builders);
  assert.equal(docs.memorySpent, 100, 'the memory spent carries over');
  assert.deepEqual(names(docs.next(3, false)), ['tests/test_layer.py', 'README.md:3']);
  assert.equal(docs.skipped, 1, 'the test file reaching only classes the builders called is skipped');
});

test('test files share a session: take gives the best-scoring others that still reach an uncalled class; giveBack returns the unrun', () => {
  const doc = (file: string, reach: string[], kind: HarvestEntry['kind'] = 'test'): HarvestEntry => ({
    kind,
    module: '',
    qualname: file,
    via: `${kind}:${file}`,
    plan: {},
    reach,
    rank: 0,
    family: `${kind}:${file}`,
    file,
  });
  const docs = new GreedyOrder([
    doc('t/test_a.py', ['a.A', 'a.B', 'a.C']),
    doc('t/test_b.py', ['a.B']),
    doc('t/test_c.py', ['a.C', 'a.D']),
    doc('t/test_d.py', ['a.X']),
    doc('README.md:3', ['a.E'], 'readme'),
  ]);
  docs.report(doc('seed', []), true, { 'a.X': { called: true } });
  const head = docs.next(1, false);
  assert.deepEqual(names(head), ['t/test_a.py']);
  const more = docs.take((e) => e.kind === 'test', 3);
  assert.deepEqual(names(more), ['t/test_c.py', 't/test_b.py'], 'by score; test_d reaches only a called class');
  assert.deepEqual(names(docs.pending), ['README.md:3', 't/test_d.py'], 'documents are not taken');
  docs.giveBack([more[1]]);
  docs.report(head[0], true, { 'a.A': { called: true }, 'a.C': { called: true } });
  assert.deepEqual(
    names(docs.next(2, false)),
    ['t/test_b.py', 'README.md:3'],
    'the file given back runs; test_d is skipped',
  );
});

test('lanes: next leaves out a family that is running and, with steps still running, keeps what cannot start yet', () => {
  const order = new GreedyOrder([entry('net1', ['a.Net']), entry('net5', ['a.Net']), entry('zed9', ['b.Other'])]);
  const first = order.next(1, false);
  assert.deepEqual(names(first), ['net1']);
  const busy = new Set([order.family(first[0])]);
  assert.deepEqual(names(order.next(2, false, true, busy)), ['zed9'], 'the running family waits');
  assert.deepEqual(names(order.next(1, false, true, busy)), [], 'nothing else can start');
  assert.deepEqual(names(order.pending), ['net5'], 'kept while a step runs');
  assert.deepEqual(names(order.next(1, false, false)), ['net5'], 'its family is free again');
});

// harvestRepo's stopping rules, with a stand-in for the pool's harvest steps (this tests
// the order and the budgets, not validation): each run step answers at once with the
// CPU time it says it spent and the classes it witnessed
const stepper = (answers: (e: HarvestEntry) => { cpuMs: number; classes: string[] }, entries: HarvestEntry[]) => {
  const runs: string[] = [];
  const pool = {
    workerCount: 1,
    harvestStep: async (req: { harvest: Record<string, unknown> }) => {
      if (req.harvest.mode === 'list') return { harvest: { classes: entries.flatMap((e) => e.reach), entries }, ms: 1 };
      const e = req.harvest.entry as HarvestEntry;
      runs.push(e.qualname);
      const a = answers(e);
      const classes = Object.fromEntries(
        a.classes.map((c) => [
          c,
          { witnesses: [{ args: [], kwargs: {}, params: 1, inputs: { args: [], kwargs: {} } }] },
        ]),
      );
      return { harvest: { built: true, forward: true, error: null, ms: 1, cpuMs: a.cpuMs, classes }, ms: 1 };
    },
  } as unknown as ValidatorPool;
  return { pool, runs };
};
const opts = { repo: 'r', sysPath: ['/nowhere'], modules: ['pkg'], zygoteModule: 'pkg' };

test("a phase's budget counts steps, whatever CPU time they took: a machine ten times slower runs the same steps", async () => {
  // each entry point reaches a class of its own (all would run)
  const many = Array.from({ length: 60 }, (_, i) => entry(`m${i}x`, [`c.C${i}`]));
  const classes = (e: HarvestEntry) => [`c.C${e.qualname.slice(1, -1)}`];
  const fast = stepper((e) => ({ cpuMs: 100 + 37 * (Number(e.qualname.slice(1, -1)) % 5), classes: classes(e) }), many);
  const slow = stepper(
    (e) => ({ cpuMs: 1000 + 370 * (Number(e.qualname.slice(1, -1)) % 3), classes: classes(e) }),
    many,
  );
  const a = await harvestRepo(fast.pool, { ...opts, repoSteps: 17, docsMs: 0 });
  const b = await harvestRepo(slow.pool, { ...opts, repoSteps: 17, docsMs: 0 });
  assert.equal(fast.runs.length, 17, fast.runs.join());
  assert.deepEqual(slow.runs, fast.runs);
  assert.deepEqual(b.witnesses, a.witnesses);
  for (const h of [a, b]) {
    assert.equal(h.stopped, 'steps');
    assert.equal(h.reproducible, true);
    assert.equal(h.backstops, undefined);
  }
  // the default: PHASE_STEPS
  const many2 = Array.from({ length: PHASE_STEPS + 5 }, (_, i) => entry(`m${i}x`, [`c.C${i}`]));
  const c = stepper((e) => ({ cpuMs: 10, classes: classes(e) }), many2);
  assert.equal((await harvestRepo(c.pool, { ...opts, docsMs: 0 })).stopped, 'steps');
  assert.equal(c.runs.length, PHASE_STEPS);
});

test('the CPU backstop ends a phase of pathologically slow steps, and the harvest says it is not reproducible; a phase stops when STALL_RUNS entry points in a row add nothing', async () => {
  // each entry point reaches a class of its own (all would run), and says it spent 10 s of CPU
  const many = Array.from({ length: 60 }, (_, i) => entry(`m${i}x`, [`c.C${i}`]));
  const a = stepper((e) => ({ cpuMs: 10000, classes: [`c.C${e.qualname.slice(1, -1)}`] }), many);
  const h = await harvestRepo(a.pool, { ...opts, repoMs: 55000, docsMs: 0 });
  // 55 s of CPU: six steps of 10 s, though no wall time passed; step k is chosen knowing
  // the answers up to k-HARVEST_LAG, so HARVEST_LAG-1 steps were chosen before the
  // sixth's answer said the backstop was reached
  assert.equal(a.runs.length, 6 + HARVEST_LAG - 1, a.runs.join());
  assert.equal(h.stopped, 'time');
  assert.deepEqual(h.backstops, { builders: 'cpu' });
  assert.equal(h.reproducible, false);
  assert.equal(h.cpuMs, (6 + HARVEST_LAG - 1) * 10000);
  // no new class from the third step on: the phase stops STALL_RUNS steps later
  const b = stepper(
    (e) => ({ cpuMs: 10, classes: ['m0x', 'm1x'].includes(e.qualname) ? [`c.C${e.qualname.slice(1, -1)}`] : [] }),
    many,
  );
  const g = await harvestRepo(b.pool, { ...opts, docsMs: 0 });
  assert.equal(b.runs.length, 2 + STALL_RUNS + HARVEST_LAG - 1, b.runs.join());
  assert.equal(g.stopped, 'coverage');
  assert.equal(g.reproducible, true);
});

test('each source of witnesses stalls on its own: examples that witness nothing do not stop the tests', async () => {
  // examples/ scripts reach many classes each (so the order prefers them) and all fail, as
  // scripts that download a dataset do without network; each test file reaches one class and
  // witnesses it (test files share a step, TEST_FILES_PER_STEP at a time)
  const doc = (kind: HarvestEntry['kind'], key: string, reach: string[]): HarvestEntry => ({
    ...entry(key, reach),
    kind,
    family: `${kind}:${key}`,
    file: `${key}.py`,
  });
  const run = async (entries: HarvestEntry[], witnessed: (e: HarvestEntry) => boolean) => {
    const byFile = new Map(entries.map((e) => [e.file, e]));
    const ran: string[] = [];
    const pool = {
      workerCount: 1,
      harvestStep: async (req: { harvest: Record<string, unknown> }) => {
        if (req.harvest.mode === 'list')
          return { harvest: { classes: entries.flatMap((e) => e.reach), entries }, ms: 1 };
        const e = req.harvest.entry as HarvestEntry;
        const step = ((req.harvest.files as string[] | undefined) ?? [e.file!]).map((f) => byFile.get(f)!);
        ran.push(...step.map((x) => x.qualname));
        const classes = Object.fromEntries(
          step
            .filter(witnessed)
            .flatMap((x) => x.reach)
            .map((c) => [c, { witnesses: [{ args: [], kwargs: {}, params: 1, inputs: { args: [], kwargs: {} } }] }]),
        );
        return { harvest: { built: true, forward: true, error: null, ms: 1, cpuMs: 10, classes }, ms: 1 };
      },
    } as unknown as ValidatorPool;
    const h = await harvestRepo(pool, { ...opts, docsMs: 600000 });
    return { h, ran };
  };
  const examples = Array.from({ length: STALL_RUNS + 10 }, (_, i) =>
    doc('example', `ex${i}x`, [`e.A${i}`, `e.B${i}`, `e.C${i}`]),
  );
  const tests = Array.from({ length: 10 }, (_, i) => doc('test', `t${i}x`, [`t.T${i}`]));
  const a = await run([...examples, ...tests], (e) => e.kind === 'test');
  // the examples stop after STALL_RUNS in a row without a class (and the HARVEST_LAG-1
  // chosen before the last of those answered); every test file still runs
  assert.equal(a.ran.filter((r) => r.startsWith('ex')).length, STALL_RUNS + HARVEST_LAG - 1, a.ran.join());
  assert.deepEqual(a.ran.filter((r) => r.startsWith('t')).sort(), names(tests).sort(), a.ran.join());
  assert.equal(a.h.stopped, 'coverage');
  // a source that gains now and then keeps running: one example in three witnesses its classes
  const b = await run(examples, (e) => Number(e.qualname.slice(2, -1)) % 3 === 0);
  assert.equal(b.ran.length, examples.length, b.ran.join());
});

// two lanes: each step answers after a delay drawn from a seeded generator (which step
// finishes first changes with the seed), with the reads a stored run needs; entry point i
// reaches classes C<i> and C<i+1>, so what one step covers changes what the next is chosen for
const lanes = (entries: HarvestEntry[], seed: number, cpuOf: (e: HarvestEntry) => number, workerCount = 2) => {
  let x = seed;
  const rand = () => (x = (x * 1103515245 + 12345) % 2147483648) / 2147483648;
  const runs: string[] = [];
  const pool = {
    workerCount,
    harvestStep: async (req: { harvest: Record<string, unknown> }) => {
      if (req.harvest.mode === 'list') return { harvest: { classes: entries.flatMap((e) => e.reach), entries }, ms: 1 };
      const e = req.harvest.entry as HarvestEntry;
      runs.push(e.qualname);
      await new Promise((r) => setTimeout(r, Math.floor(rand() * 8)));
      const classes = Object.fromEntries(
        e.reach.map((c) => [
          c,
          { witnesses: [{ args: [e.qualname], kwargs: {}, params: 1, inputs: { args: [], kwargs: {} } }] },
        ]),
      );
      // the harness's CPU timer ends a step at its budget
      const budgetMs = (req.harvest.budgetSeconds as number) * 1000;
      const cpuMs = Math.min(cpuOf(e), budgetMs);
      const stopped = cpuOf(e) > budgetMs ? { stopped: 'time' } : {};
      return {
        harvest: { built: true, forward: true, error: null, ms: 1, cpuMs, ...stopped, classes, reads: [e.qualname] },
        ms: 1,
      };
    },
  } as unknown as ValidatorPool;
  return { pool, runs };
};
const order = (h: HarvestResult) => h.entries.map((e) => e.entry);

test('two lanes: the steps chosen, their order and the witnesses do not depend on which step finishes first, nor on reused steps beside re-run ones', async () => {
  const many = Array.from({ length: 40 }, (_, i) => entry(`n${i}x`, [`c.C${i}`, `c.C${(i + 7) % 40}`], i % 5));
  const cpu = (e: HarvestEntry) => 1000 + 700 * (Number(e.qualname.slice(1, -1)) % 4);
  // the CPU backstop ends the phase midway (about 20 of 40 steps): the steps a re-run
  // reuses keep their charge, so even a backstop stops a re-run at the same step
  const budget = { ...opts, repoMs: 40000, docsMs: 0 };
  const blobs = new Map(many.map((e) => [e.qualname, 'v1']));
  const reuse = (runs: HarvestResult['runs']): RunReuse => ({
    envId: 'env',
    runs: runs ?? {},
    depends: (read) => read.map((f) => [f, blobs.get(f) ?? ''] as [string, string]),
    blob: (f) => blobs.get(f) ?? null,
  });
  const a = lanes(many, 1, cpu);
  const cold = await harvestRepo(a.pool, { ...budget, reuse: reuse({}) });
  assert.equal(cold.stopped, 'time');
  assert.ok(cold.entries.length > 10 && cold.entries.length < 30, order(cold).join());
  // another seed: other steps finish first, the same harvest
  const b = lanes(many, 977, cpu);
  const again = await harvestRepo(b.pool, { ...budget, reuse: reuse({}) });
  assert.notDeepEqual(a.runs, [], 'steps ran');
  assert.deepEqual(order(again), order(cold));
  assert.deepEqual(again.witnesses, cold.witnesses);
  assert.equal(again.cpuMs, cold.cpuMs);
  // one file read by one step changed: that step runs again (spending 3x the CPU), the
  // others answer at once from the store; the same steps, order, budget and witnesses
  const touched = order(cold)[3].replace(/^pkg\.MODELS\['(.*)'\]$/, '$1');
  blobs.set(touched, 'v2');
  const c = lanes(many, 5, (e) => 3 * cpu(e));
  const edited = await harvestRepo(c.pool, { ...budget, reuse: reuse(cold.runs) });
  assert.deepEqual(c.runs, [touched], 'only the step that read the changed file runs');
  assert.equal(edited.ranRuns, 1);
  assert.deepEqual(order(edited), order(cold));
  assert.deepEqual(edited.witnesses, cold.witnesses);
  assert.equal(edited.cpuMs, cold.cpuMs, 'the re-run step is charged what its first run spent');
});

test('a phase the wall clock stopped (a loaded machine): a harvest reusing its steps stops at the same step, not later', async () => {
  const many = Array.from({ length: 40 }, (_, i) => entry(`w${i}x`, [`c.C${i}`, `c.C${(i + 3) % 40}`]));
  const blobs = new Map(many.map((e) => [e.qualname, 'v1']));
  const reuse = (h: HarvestResult | null): RunReuse => ({
    envId: 'env',
    runs: h?.runs ?? {},
    ...(h?.wallStops ? { wallStops: h.wallStops } : {}),
    depends: (read) => read.map((f) => [f, blobs.get(f) ?? ''] as [string, string]),
    blob: (f) => blobs.get(f) ?? null,
  });
  // a CPU budget never reached; the steps take 0-7 ms of wall time, the phase's backstop 25 ms
  const budget = { ...opts, repoMs: 1e7, docsMs: 0, repoWallMs: 25 };
  const a = lanes(many, 3, () => 1000);
  const cold = await harvestRepo(a.pool, { ...budget, reuse: reuse(null) });
  assert.equal(cold.stopped, 'time');
  assert.deepEqual(cold.backstops, { builders: 'wall' });
  assert.equal(cold.reproducible, false);
  const n = cold.wallStops?.builders;
  assert.ok(n !== undefined && n >= 1 && n < 40, JSON.stringify(cold.wallStops));
  assert.equal(cold.entries.length, n);
  // every step answered from the store at once: without the stored stop it would run on
  const b = lanes(many, 4, () => 1000);
  const warm = await harvestRepo(b.pool, { ...budget, reuse: reuse(cold) });
  assert.deepEqual(b.runs, []);
  assert.deepEqual(order(warm), order(cold));
  assert.deepEqual(warm.witnesses, cold.witnesses);
  assert.deepEqual(warm.wallStops, cold.wallStops, 'kept for the next harvest');
  // the stop is the previous harvest's: without it the phase runs further
  const c = lanes(many, 4, () => 1000);
  const fresh = await harvestRepo(c.pool, { ...budget, repoWallMs: 1e7, reuse: reuse(null) });
  assert.ok(fresh.entries.length > n!, `${fresh.entries.length} > ${n}`);
  assert.equal(fresh.wallStops, undefined);
});

test("a pool of one worker, of two or of four harvests the same steps and witnesses (a queue's shard worker and extract --all agree)", async () => {
  const many = Array.from({ length: 40 }, (_, i) => entry(`n${i}x`, [`c.C${i}`, `c.C${(i + 7) % 40}`], i % 5));
  const cpu = (e: HarvestEntry) => 1000 + 700 * (Number(e.qualname.slice(1, -1)) % 4);
  const budget = { ...opts, repoSteps: 20, docsMs: 0 };
  const two = await harvestRepo(lanes(many, 5, cpu, 2).pool, budget);
  assert.equal(two.stopped, 'steps');
  for (const workers of [1, 4]) {
    const other = await harvestRepo(lanes(many, 5 + workers, cpu, workers).pool, budget);
    assert.deepEqual(order(other), order(two), `${workers} workers`);
    assert.deepEqual(other.witnesses, two.witnesses, `${workers} workers`);
    assert.equal(other.cpuMs, two.cpuMs);
  }
});

test("a wrapper's model is the smallest model by its parameters, not the step that took least CPU (CPU time moves from run to run)", async () => {
  // two models: `big` is quick in this run, `small` slow; a wrapper asks for a model instance
  const big = entry('big1', ['m.Big']);
  const small = entry('small1', ['m.Small']);
  const wrap: HarvestEntry = { ...entry('wrap1', ['m.Wrap']), plan: { model: { instance: 'model' } } };
  const run = async (cpu: Record<string, number>) => {
    let given: string | undefined;
    // other models first, so that both answers are applied before the wrapper is chosen
    const others = Array.from({ length: 4 }, (_, i) => entry(`other${i}x`, [`m.O${i}`]));
    const entries = [big, small, ...others, { ...wrap, rank: 99 }];
    const pool = {
      workerCount: 1,
      harvestStep: async (req: { harvest: Record<string, unknown> }) => {
        if (req.harvest.mode === 'list')
          return { harvest: { classes: entries.flatMap((e) => e.reach), entries }, ms: 1 };
        const e = req.harvest.entry as HarvestEntry;
        if (e.qualname === 'wrap1') given = (req.harvest.provider as HarvestEntry | undefined)?.qualname;
        const params = e.qualname === 'big1' ? 40_000_000 : e.qualname === 'small1' ? 3_000_000 : 90_000_000;
        const classes = Object.fromEntries(
          e.reach.map((c) => [c, { witnesses: [{ args: [], kwargs: {}, params, inputs: { args: [], kwargs: {} } }] }]),
        );
        return {
          harvest: { built: true, forward: true, error: null, ms: 1, cpuMs: cpu[e.qualname] ?? 10, classes },
          ms: 1,
        };
      },
    } as unknown as ValidatorPool;
    await harvestRepo(pool, { ...opts, docsMs: 0 });
    return given;
  };
  assert.equal(await run({ big1: 100, small1: 900 }), 'small1');
  assert.equal(await run({ big1: 900, small1: 100 }), 'small1');
});

test('a stored step stopped by its work budget serves only the same budget; one that completed, a smaller budget only above the work it counted', () => {
  const reuse: RunReuse = { envId: 'e', runs: {}, depends: () => [], blob: () => 'b1' };
  const run = (harvest: Record<string, unknown>) => ({
    files: [['/r/m.py', 'b1'] as [string, string]],
    budget: 30,
    harvest,
    ms: 1,
  });
  // the work budget is a pure function of the step's budget: the same budget, the same stop
  const stopped = run({ cpuMs: 9000, stopped: 'work', workSeconds: 30.01 });
  assert.equal(reusable(stopped, 30, reuse), true);
  assert.equal(reusable(stopped, 60, reuse), false); // a larger budget may let the forward complete
  assert.equal(reusable(stopped, 20, reuse), false);
  // completed with 4 s of CPU and work worth 12 s of budget: a budget of 10 s would stop it by work
  const done = run({ cpuMs: 4000, workSeconds: 12 });
  assert.equal(reusable(done, 60, reuse), true);
  assert.equal(reusable(done, 15, reuse), true);
  assert.equal(reusable(done, 10, reuse), false);
  // a file it read changed: never
  assert.equal(reusable(done, 30, { ...reuse, blob: () => 'b2' }), false);
});
