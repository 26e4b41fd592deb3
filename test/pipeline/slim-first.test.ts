// Slim first (issue 27): with the slim profile the faithful module is first validated for
// its arguments only (the stages up to forward), the slim module emitted from those
// arguments is validated whole, and the faithful module is validated whole only where the
// choice needs it. The modules kept, their verdicts, usage lines and equivalence must be
// those of the faithful-first order (`slimFirst: false`), with fewer whole validations of
// the faithful module. Real tree-sitter, real SQLite, real torch in the real sandbox
// (fixture test/fixtures/slim: slim kept, slim fallen back, a decorator probe, usage
// roots). Each thing once: an arguments-only request whose arguments name definitions the
// module lacks goes on as the whole validation, not run again by another request.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import { extractAndValidate } from '../../src/pipeline/pipeline.js';
import type { BlockRecord } from '../../src/records/block.js';
import { Costs } from '../../src/util/costs.js';
import { ValidatorPool } from '../../src/validate/pool.js';
import type { ValidationRequest, ValidationResult } from '../../src/validate/types.js';
import { cannotValidate } from '../validate/common.js';
import { slimWorkspace } from '../emit/slim-fixture.js';

const skip = await cannotValidate(true);

/** One request the pool ran and what it answered. */
interface Seen {
  req: ValidationRequest;
  r: ValidationResult;
}

async function run(slimFirst: boolean): Promise<{ records: BlockRecord[]; costs: Costs; seen: Seen[] }> {
  const { ws, dir } = await slimWorkspace();
  try {
    const ids = api.discover(ws).map((b) => b.id);
    const costs = new Costs();
    // every request the pipeline's pool runs, as it runs it (the real pool, real sandbox)
    const seen: Seen[] = [];
    const validate = ValidatorPool.prototype.validate;
    ValidatorPool.prototype.validate = async function (this: ValidatorPool, req: ValidationRequest) {
      const r = await validate.call(this, req);
      seen.push({ req, r });
      return r;
    };
    try {
      const records = await extractAndValidate(ws, ids, {
        pool: { workers: 1 },
        out: path.join(dir, 'library'),
        costs,
        slimFirst,
      });
      return { records, costs, seen };
    } finally {
      ValidatorPool.prototype.validate = validate;
    }
  } finally {
    ws.close();
  }
}

// both orders, run once for the tests below
type Run = Awaited<ReturnType<typeof run>>;
let runs: Promise<[Run, Run]> | undefined;
const bothOrders = () => (runs ??= (async (): Promise<[Run, Run]> => [await run(false), await run(true)])());

/** What a block's outcome is: the module kept (its text), its emission and its verdicts. */
function outcome(r: BlockRecord) {
  const v = r.validation;
  return {
    ok: r.ok,
    text: r.file ? readFileSync(r.file, 'utf8') : null,
    emission: r.emission,
    stages: v?.stages,
    category: v?.category,
    args: v?.args,
    argumentsSource: v?.argumentsSource,
    input_shapes: v?.input_shapes,
    output_shapes: v?.output_shapes,
    usage: v?.usage,
    usageCheck: v?.usageCheck,
    equivalence: v?.equivalence ? { status: v.equivalence.status, maxAbsDiff: v.equivalence.maxAbsDiff } : null,
    namespace: v?.namespace?.status,
  };
}

/** How many whole validations of the faithful module ran (the label's import stage). */
const wholeFaithful = (c: Costs) =>
  c
    .table('t')
    .rows.filter((r) => r.phase === 'validate faithful import')
    .reduce((n, r) => n + r.count, 0);

test('slim first keeps the modules and verdicts of faithful first, with fewer whole faithful validations', {
  skip: skip ?? false,
}, async () => {
  const [before, after] = await bothOrders();
  assert.equal(after.records.length, before.records.length);
  const by = new Map(before.records.map((r) => [r.id, r]));
  for (const r of after.records) assert.deepEqual(outcome(r), outcome(by.get(r.id)!), r.id);
  // the fixture has each kind of outcome: slim kept, a fallback, a probed decorator
  const kept = after.records.filter((r) => r.emission.profile === 'slim' && r.lines < (r.emission.faithfulLines ?? 0));
  assert.ok(kept.length >= 3, kept.map((r) => r.id).join(', '));
  assert.ok(after.records.some((r) => r.emission.fallbackReason?.startsWith('slim module failed')));
  assert.ok(after.records.some((r) => r.emission.proven?.length));
  // faithful first validates every faithful module whole; slim first does not for a block
  // whose shorter slim module was kept
  const validated = before.records.filter((r) => r.validation).length;
  assert.equal(wholeFaithful(before.costs), validated);
  assert.ok(
    wholeFaithful(after.costs) + kept.length <= validated,
    `${wholeFaithful(after.costs)} + ${kept.length} <= ${validated}`,
  );
});

test('an arguments-only validation whose arguments name definitions the module lacks is the whole one: built and run once', {
  skip: skip ?? false,
}, async () => {
  const [before, after] = await bothOrders();
  const id = 'slimpkg.normed.NormedStem';
  // the block is validated with its usage root in both orders, with the same outcome
  const rec = after.records.find((r) => r.id === id)!;
  assert.deepEqual(outcome(rec), outcome(before.records.find((r) => r.id === id)!));
  assert.equal(rec.ok, true, JSON.stringify(rec.validation));
  assert.deepEqual(rec.emission.usageRoots, ['slimpkg.normed.FrozenNorm']);
  assert.match(rec.validation?.usage ?? '', /norm_layer=FrozenNorm/);
  // slim first asked for its faithful module's arguments only; the arguments named
  // FrozenNorm, so that request went on as the whole validation (usage line tried,
  // equivalence built) ...
  const args = after.seen.filter((s) => s.req.id === id && s.req.argumentsOnly);
  assert.equal(args.length, 1, JSON.stringify(after.seen.map((s) => [s.req.id, !!s.req.argumentsOnly])));
  const [a] = args;
  assert.equal(a.r.whole, true);
  assert.deepEqual(a.r.usageNeeds, [['slimpkg.normed', 'FrozenNorm']]);
  assert.equal(a.r.stages.equivalence, 'pass');
  // ... and is that validation: the faithful-first order's whole request of the same
  // module answered the same
  const w = before.seen.find((s) => s.req.id === id && s.req.source === a.req.source)!;
  assert.ok(w && !w.req.argumentsOnly);
  const facts = (r: ValidationResult) => ({
    stages: r.stages,
    category: r.category,
    args: r.args,
    input_shapes: r.input_shapes,
    output_shapes: r.output_shapes,
    usage: r.usage,
    usageSkipped: r.usageSkipped,
    usageNeeds: r.usageNeeds,
    argumentsSource: r.argumentsSource,
    equivalence: r.equivalence?.status,
    namespace: r.namespace,
  });
  assert.deepEqual(facts(a.r), facts(w.r));
  // no request of any block ran a module again that an arguments-only request which went
  // on whole had run
  for (const s of after.seen.filter((x) => x.r.whole))
    assert.ok(
      !after.seen.some((x) => x !== s && x.req.id === s.req.id && x.req.source === s.req.source),
      `${s.req.id} validated twice`,
    );
});
