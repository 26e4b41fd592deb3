// Stage results on hand-written fixtures, through the real sandboxed pool: correct
// blocks pass every required stage with sensible arguments and shapes, and each
// broken fixture fails the stage it should, with the right category.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ValidatorPool, toRecord, validationKey, type ValidationResult } from '../../src/validate/index.js';
import { readFileSync } from 'node:fs';
import { fixture } from '../helpers.js';
import { cannotValidate, listFixtures, request } from './common.js';

const skip = await cannotValidate(true);

describe('validation stages', { skip: skip ?? false }, () => {
  let pool: ValidatorPool;
  const results = new Map<string, ValidationResult>();

  before(async () => {
    pool = await ValidatorPool.start({ workers: 2 });
    const reqs = [
      ...listFixtures('good').map((f) => request('good', f)),
      ...listFixtures('fail').map((f) => request('fail', f)),
    ];
    reqs.find((r) => r.id === 'fail/timeout.py')!.timeoutMs = 2500;
    const cs = reqs.find((r) => r.id === 'good/callsite_only.py')!;
    cs.callSites = ['(mode, channels)', "('mean', 12)"];
    // a call in its context: the statement text and the offset of the call's `(`
    const text = readFileSync(fixture('validate', 'good', 'context_site.context.txt'), 'utf8');
    const offset = text.indexOf('Stem(self.width') + 'Stem'.length;
    reqs.find((r) => r.id === 'good/context_site.py')!.callSites = [{ module: 'net', text, offset }];
    // a configuration table of the module: the helper-built entry is skipped
    const table = readFileSync(fixture('validate', 'good', 'config_table.context.txt'), 'utf8');
    reqs.find((r) => r.id === 'good/config_table.py')!.dataSites = [{ module: 'net', name: 'cfgs', text: table }];
    // whole networks must fit a short limit: built small, not at their wide defaults
    reqs.find((r) => r.id === 'good/wide_network.py')!.timeoutMs = 8000;
    reqs.find((r) => r.id === 'good/forwarding_ctor.py')!.timeoutMs = 8000;
    for (const r of await pool.validateMany(reqs)) results.set(r.id, r);
  });
  after(async () => pool?.close());

  it('passes every correct fixture through import, instantiate and forward', () => {
    for (const f of listFixtures('good')) {
      const r = results.get(`good/${f}`)!;
      assert.equal(r.ok, true, `${f}: ${r.stage} ${r.category} ${r.error}`);
      for (const s of ['parse', 'compile', 'import', 'instantiate', 'forward'] as const)
        assert.equal(r.stages[s], 'pass', `${f} ${s}`);
      assert.equal(r.stages.equivalence, 'skip');
      assert.equal(r.equivalence?.status, 'skip');
      assert.ok(r.output_shapes && r.output_shapes.length > 0, f);
      assert.equal(r.envId, pool.envId);
      assert.ok(r.timings.forward! >= 0);
    }
  });

  it('records arguments, shapes, parameter counts and layers', () => {
    const mlp = results.get('good/mlp_defaults.py')!;
    assert.deepEqual(mlp.args, {});
    assert.deepEqual(mlp.input_shapes, [[2, 8, 24]]); // from the first Linear(24, 48)
    assert.deepEqual(mlp.output_shapes, [[2, 8, 24]]);
    assert.equal(mlp.params, 24 * 48 + 48 + 48 * 24 + 24);
    assert.deepEqual(mlp.layers, { Linear: 2, ReLU: 1 });

    const conv = results.get('good/conv_block.py')!;
    const a = conv.args as Record<string, number>;
    assert.equal(a.kernel_size, 3);
    assert.equal(a.in_chs, a.out_chs);
    assert.deepEqual(conv.input_shapes, [[2, a.in_chs, 32, 32]]);

    const attn = results.get('good/attention.py')!;
    const aa = attn.args as Record<string, number>;
    assert.equal(aa.dim % aa.num_heads, 0);
    assert.deepEqual(attn.input_shapes, [[2, 8, aa.dim]]);

    const emb = results.get('good/embed.py')!;
    assert.deepEqual(emb.input_shapes, [[2, 8]]);
    assert.equal(emb.output_shapes!.length, 2);

    const hw = results.get('good/tokens_hw.py')!;
    assert.deepEqual(hw.input_shapes, [[2, 64, (hw.args as { dim: number }).dim]]);

    const two = results.get('good/two_inputs.py')!;
    assert.equal(two.input_shapes!.length, 2);
  });

  it('uses literal call sites from the corpus when heuristics cannot guess', () => {
    const r = results.get('good/callsite_only.py')!;
    assert.deepEqual(r.args, { args: ['mean', 12], kwargs: {} });
    assert.deepEqual(r.output_shapes, [[2, 12]]);
  });

  it('rebuilds a call in its context: parameter defaults, local assignments, self attributes, **extra', () => {
    const r = results.get('good/context_site.py')!;
    const a = r.args as { args: unknown[]; kwargs: Record<string, unknown> };
    assert.match(String(a.kwargs.conv_block), /partial\(<class 'nnrag candidate\.ConvBn'>, padding=0, eps=0\.001\)/);
    assert.deepEqual(a.args, [8]); // self.width, from the replayed `self.width = 8`
    assert.deepEqual(Object.keys(a.kwargs), ['conv_block']); // **dd gave device=None, which Stem does not take
    assert.equal(r.input_shapes![0][1], 8);
    assert.equal(r.output_shapes![0][1], 16 + 8); // both branches, concatenated
  });

  it('runs forward without inputs, and with a list of tensors where the annotation asks for one', () => {
    const bias = results.get('good/forward_no_args.py')!;
    assert.deepEqual(bias.input_shapes, []);
    assert.deepEqual(bias.args, {});
    assert.deepEqual(bias.output_shapes, [[2, 16, 16]]);
    const root = results.get('good/list_input.py')!;
    assert.deepEqual(root.input_shapes, [
      [2, 16, 32, 32],
      [2, 16, 32, 32],
    ]); // two halves of in_chs=32
  });

  it('builds a record of tensors for a forward parameter used only through attributes a tensor lacks', () => {
    // batch.x and batch.edge_attr, each of the first layer's input shape (BatchNorm1d(8):
    // (N, 8, L)), handed back normalized
    const r = results.get('good/record_input.py')!;
    assert.equal(r.output_shapes?.length, 2, JSON.stringify(r.output_shapes));
    for (const s of r.output_shapes!) assert.deepEqual(s.slice(0, 2), [2, 8]);
  });

  it('builds a record for a parameter passed on whole to the sub-modules, with the attributes they read', () => {
    // SkipStage reads batch.x and hands batch to each child; their layers read
    // batch.edge_index as (2, E) pairs: handed back with x updated
    const r = results.get('good/record_passed_on.py')!;
    const [x, edges] = r.output_shapes!;
    assert.equal(r.output_shapes!.length, 2, JSON.stringify(r.output_shapes));
    assert.deepEqual(edges, [2, x[0]]);
  });

  it('gives a None default the forward refuses a value: (2, E) indices for an eval-mode edge list', () => {
    const r = results.get('good/refused_none.py')!;
    const [x, edges] = r.input_shapes!;
    assert.equal(r.input_shapes!.length, 2, JSON.stringify(r.input_shapes));
    assert.deepEqual(edges, [2, x[0]]);
  });

  it('gives labels and a mask that select rows one value per row of the features', () => {
    const r = results.get('good/row_labels.py')!;
    const [x, y, mask] = r.input_shapes!;
    assert.deepEqual(y, x.slice(0, -1), JSON.stringify(r.input_shapes));
    assert.deepEqual(mask, x.slice(0, -1));
    assert.deepEqual(r.output_shapes, [x]);
  });

  it('gives a first input looked up in an embedding one id per row of the next input', () => {
    const r = results.get('good/embedding_rows.py')!;
    const [z, feats] = r.input_shapes!;
    assert.deepEqual(z, feats.slice(0, -1), JSON.stringify(r.input_shapes));
  });

  it('takes a table member for a parameter the constructor tests for membership', () => {
    const r = results.get('good/member_table.py')!;
    assert.deepEqual(r.args, { depth: 18, mode: 'max' }, JSON.stringify(r.args));
  });

  it('takes block classes, stage lists and counts from annotations', () => {
    const r = results.get('good/typed_block_arg.py')!;
    const a = r.args as Record<string, unknown>;
    assert.equal(a.block, 'nnrag candidate.Basic');
    assert.deepEqual(a.layers, [2, 2, 2, 2]);
    assert.equal(a.convs_per_block, 2);
  });

  it('gives a parameter annotated with a class an instance of a concrete subclass that has what it reads (PEP 484)', () => {
    const r = results.get('good/instance_param.py')!;
    const a = r.args as Record<string, unknown>;
    assert.match(String(a.conv), /^Linear\(/, JSON.stringify(r.args)); // Mean lacks in_channels
    assert.equal(r.input_shapes!.length, 2);
  });

  it('gives a required mask a tensor shaped like the input, never None', () => {
    const r = results.get('good/required_mask.py')!;
    assert.equal(r.input_shapes!.length, 2, JSON.stringify(r.input_shapes));
    assert.deepEqual(r.input_shapes![0], r.input_shapes![1]);
  });

  it('gives a forward parameter asserted or annotated with a class of the module an instance of it', () => {
    const r = results.get('good/object_input.py')!;
    assert.equal(r.ok, true, `${r.stage} ${r.error}`);
  });

  it('gives an edge list the code checks for an integer dtype and two rows (2, E) int64 indices', () => {
    const r = results.get('good/checked_edges.py')!;
    assert.equal(r.ok, true, `${r.stage} ${r.error}`);
    const [x, edges] = r.input_shapes!;
    assert.equal(edges.length, 2, JSON.stringify(r.input_shapes));
    assert.equal(edges[0], 2);
    assert.equal(edges[1], x[0]);
  });

  it('repairs an input from the shape error of a first try (token count 8 → 49)', () => {
    const r = results.get('good/fixed_tokens.py')!;
    assert.deepEqual(r.input_shapes, [[2, 49, 24]]);
    assert.deepEqual(r.output_shapes, [[2, 49, 24]]);
  });

  it('builds dataclass configurations and per-stage lists from annotations', () => {
    const r = results.get('good/dataclass_cfg.py')!;
    const a = r.args as Record<string, unknown>;
    assert.match(String(a.cfg), /^NetCfg\(stem=StemCfg\(out_chs=8, kernel_size=3\), widths=\(8, 16\)/);
    assert.deepEqual(a.depths, [2, 2, 2]); // as long as channels=(8, 16, 32)
  });

  it("takes a configuration from the module's configuration table, entry by entry", () => {
    const r = results.get('good/config_table.py')!;
    assert.deepEqual(r.args, { cfg: [8, 'M', 16, 'M', 32] });
    assert.deepEqual(r.output_shapes, [[r.input_shapes![0][0], 10]]);
  });

  it("reads a forwarding constructor's parameters from its base", () => {
    const r = results.get('good/forwarding_ctor.py')!;
    const a = r.args as Record<string, number>;
    assert.ok(a.embed_dim < 1536, JSON.stringify(a));
    assert.ok(r.params! < 1_000_000, `${r.params} parameters`);
  });

  it('builds a network with wide defaults at small widths first', () => {
    const r = results.get('good/wide_network.py')!;
    const a = r.args as Record<string, number>;
    assert.ok(a.embed_dim < 2048 && a.embed_dim % a.num_heads === 0, JSON.stringify(a));
    assert.ok(r.params! < 1_000_000, `${r.params} parameters`);
  });

  const expected: Record<string, [string, string]> = {
    'syntax_error.py': ['parse', 'syntax'],
    'compile_error.py': ['compile', 'syntax'],
    'missing_extern.py': ['import', 'missing-extern'],
    'torch_version.py': ['import', 'torch-version'],
    'unresolved_name.py': ['import', 'unresolved-name'],
    'native_ext.py': ['import', 'native-extension'],
    'needs_args.py': ['instantiate', 'needs-args'],
    'needs_gpu.py': ['instantiate', 'needs-gpu'],
    'lazy_unresolved.py': ['instantiate', 'unresolved-name'],
    'forward_shape.py': ['forward', 'forward-shape'],
    'runtime_error.py': ['forward', 'runtime-error'],
    'half_made.py': ['forward', 'runtime-error'],
    'timeout.py': ['forward', 'timeout'],
  };
  for (const [file, [stage, category]] of Object.entries(expected)) {
    it(`fails ${file} at ${stage} with ${category}`, () => {
      const r = results.get(`fail/${file}`)!;
      assert.equal(r.ok, false);
      assert.equal(r.stage, stage, `${r.stage} ${r.category} ${r.error}`);
      assert.equal(r.category, category, `${r.error}`);
      assert.equal(r.stages[stage as keyof typeof r.stages], 'fail');
      assert.ok(r.error && r.error.length > 0);
      // stages before the failing one passed, later ones did not run
      const order = ['parse', 'compile', 'import', 'instantiate', 'forward', 'equivalence'] as const;
      const i = order.indexOf(stage as (typeof order)[number]);
      for (const s of order.slice(0, i)) assert.equal(r.stages[s], 'pass', `${file} ${s}`);
      for (const s of order.slice(i + 1)) assert.equal(r.stages[s], 'skip', `${file} ${s}`);
    });
  }

  it("names the candidate's file in a traceback by its scratch folder's stable name, not its random one", () => {
    const r = results.get('fail/runtime_error.py')!;
    assert.match(r.traceback ?? '', /File "<scratch>\/candidate\.py", line \d+, in forward/, r.traceback);
    assert.doesNotMatch(r.traceback ?? '', /nnrag-[a-z0-9_]{8}/);
  });

  it('bounds the time by the CPU time the block used, within the wall-clock backstop', () => {
    const r = results.get('fail/timeout.py')!;
    assert.match(r.error ?? '', /used its 2\.5 s of CPU time/);
    // one thread computes no faster than the wall clock; the backstop is 6 x 2.5 + 10 s
    assert.ok(r.ms >= 2400 && r.ms < 25000 + 3000, `took ${r.ms} ms`);
  });

  it('decides ok from the required stages only', async () => {
    const req = request('fail', 'forward_shape.py', { requiredStages: ['import', 'instantiate'] });
    const r = await pool.validate(req);
    assert.equal(r.ok, true);
    assert.equal(r.stages.forward, 'fail');
    assert.equal(r.category, 'forward-shape');
  });

  it('gives a storable record and a cache key that follows content and environment', () => {
    const r = results.get('good/conv_block.py')!;
    const rec = toRecord(r);
    assert.deepEqual(
      Object.keys(rec).sort(),
      [
        'args',
        'argumentsSource',
        'category',
        'envId',
        'environment',
        'equivalence',
        'error',
        'input_shapes',
        'output_shapes',
        'params',
        // the host interpreter's path, except for a PyPI environment nnrag made: its lock
        // names it wherever it lies (issue 28)
        ...(rec.environment?.lock ? [] : ['python']),
        'stages',
        'usage',
        'usageCheck',
      ].sort(),
    );
    // the facts of the environment that ran: its id, Python's and torch's versions
    assert.equal(rec.environment!.id, pool.envId);
    assert.equal(rec.environment!.torch, pool.torch);
    assert.equal(rec.environment!.python, pool.pythonVersion);
    assert.ok(rec.environment!.label.includes(`torch ${pool.torch}`), rec.environment!.label);
    // no witnesses here: the arguments came from the block's defaults or a guess
    assert.equal(rec.argumentsSource, 'guess');
    assert.equal(rec.usage, r.usage);
    assert.match(rec.usage!, /^ConvNormAct\(.*\)\(torch\.randn\(\d+(, \d+)*\)\)$/);
    assert.equal(rec.usageCheck, 'ran', 'the snippet was run as written before it was recorded');
    if (rec.environment?.lock) assert.equal(rec.python, undefined, 'named by its lock, not its folder');
    else assert.equal(rec.python, pool.env.python, 'the host interpreter that validated, for pinning requirements');
    const req = request('good', 'conv_block.py');
    const k = validationKey(req, pool.envId);
    assert.equal(k, validationKey({ ...req }, pool.envId));
    assert.notEqual(k, validationKey({ ...req, source: req.source + '\n# changed\n' }, pool.envId));
    assert.notEqual(k, validationKey(req, 'another-env'));
  });
});
