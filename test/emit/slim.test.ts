// Slim emission (src/emit/slim): registration decorators that return their argument are
// removed (one that wraps stays), and so are registration calls of module-level code;
// option registries keep the options the block reaches and a pruned option fails with an
// error naming it, branches no value of the defaults
// reaches (`isinstance`/`issubclass`/`is None` tests, conditional expressions, values
// that flow through a local name that is only called) are pruned with an error naming
// the test, the code that stays is the original's, and a block whose slim module does
// not validate keeps its faithful one; what is memoised across blocks does not change a
// block's slim module.
// Real tree-sitter, real SQLite, real torch in the real sandbox (fixture test/fixtures/slim).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import { extractAndValidate, type Extraction, type SlimInputs } from '../../src/pipeline/pipeline.js';
import { entryCallFromArgs, entryCallFromText } from '../../src/emit/slim/entry.js';
import { ValidatorPool } from '../../src/validate/index.js';
import { tempDir } from '../helpers.js';
import { BLOCK_RECORD_SCHEMA } from '../../src/library/record-schema.js';
import { violations } from '../support/json-schema.js';
import { cannotValidate, torchPython } from '../validate/common.js';
import { slimWorkspace } from './slim-fixture.js';

const workspace = slimWorkspace;

/** A runner of Python code against a slim module written as `name`.py, with torch, in
 *  the real Python (null when there is none): its stdout, or its stderr when it fails. */
async function pythonWith(name: string, text: string): Promise<((code: string) => string) | null> {
  const py = await torchPython();
  if (!py) return null;
  const dir = tempDir();
  writeFileSync(path.join(dir, `${name}.py`), text);
  return (code: string) => {
    try {
      return execFileSync(py.python, ['-c', `import ${name}, torch\n${code}`], {
        cwd: dir,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (e) {
      return String((e as { stderr?: string }).stderr);
    }
  };
}

/** A block's slim and faithful modules (both emitted). */
function bothProfiles(
  ws: api.Workspace,
  id: string,
  entry?: SlimInputs['entry'],
): { slim: Extraction; faithful: Extraction } {
  const slim = api.extractText(ws, id, { profile: 'slim' }, entry ? { entry } : {});
  const faithful = api.extractText(ws, id, { profile: 'faithful' });
  assert.ok(slim.text && faithful.text, slim.record.error ?? faithful.record.error);
  return { slim, faithful };
}

/** Lines of the body (after the header) that slim added: marked `nnrag slim`. */
function bodyLines(text: string): string[] {
  return text.split('\n').filter((l) => !l.startsWith('#'));
}

test('slim removes registration decorators and their registries, keeps a wrapping decorator, prunes options to the reached ones', async () => {
  const { ws } = await workspace();
  try {
    const { slim, faithful } = bothProfiles(ws, 'slimpkg.blocks.Block');
    // faithful: every option and the registry
    for (const s of ['@MODELS.register_module()', 'class Registry', 'class Swishy', 'class Gate', 'class FancyNorm'])
      assert.ok(faithful.text.includes(s), s);
    // slim: the decorator and the registry are gone, unreached options and their classes too
    for (const s of [
      '@MODELS.register_module()',
      'class Registry',
      'MODELS =',
      'class Swishy',
      'class Gate',
      'class FancyNorm',
      'swishy=Swishy',
    ]) {
      assert.ok(!bodyLines(slim.text).some((l) => l.includes(s)), `slim still has ${s}`);
    }
    assert.match(slim.text, /^ {4}relu=nn\.ReLU,$/m);
    assert.match(slim.text, /^ {4}# nnrag slim: pruned 'swishy', 'gate' \(lines 17-18\)$/m);
    assert.match(slim.text, /^ {4}elif kind in \('fancy', 'none', 'identity'\): {2}# nnrag slim: pruned lines 38-41$/m);
    // the header lists every removal with its original lines
    assert.match(slim.text, /^# {3}slimpkg\/blocks\.py:7 \| decorators: @MODELS\.register_module\(\)$/m);
    assert.match(slim.text, /^# {3}slimpkg\/layers\.py:17-18 \| options of _ACTS: 'swishy', 'gate'$/m);
    assert.match(slim.text, /^# {3}slimpkg\/layers\.py:38-41 \| branches of kind: 'fancy', 'none', 'identity'$/m);
    // the code that stays is the original's, byte for byte: every body line not marked
    // as slim's is a line of the faithful module
    const original = new Set(faithful.text.split('\n'));
    for (const l of bodyLines(slim.text))
      if (!l.includes('nnrag slim')) assert.ok(original.has(l), `not in the faithful module: ${l}`);
    assert.ok(slim.record.lines < faithful.record.lines);
    const removed = (slim.record.emission as { removed: { kind: string; lines: number[] }[] }).removed;
    assert.deepEqual(
      removed.filter((r) => r.kind === 'decorator').map((r) => r.lines),
      [[7, 7]],
    );

    // a plain registration decorator goes with its registry list
    const traced = api.extractText(ws, 'slimpkg.blocks.Traced', { profile: 'slim' }).text;
    assert.ok(!bodyLines(traced).some((l) => l.includes('@register_traced') || l.includes('_TRACED')), traced);
    assert.match(traced, /^# {3}slimpkg\/blocks\.py:19 \| decorators: @register_traced$/m);
    // a decorator that returns another object stays (with what it needs)
    const wrapped = api.extractText(ws, 'slimpkg.blocks.Wrapped', { profile: 'slim' }).text;
    assert.match(wrapped, /^@with_scale$/m);
    assert.match(wrapped, /^def with_scale\(cls\):$/m);

    // a pruned option fails with an error naming it; the kept ones work
    const py = await torchPython();
    if (py) {
      const dir = tempDir();
      writeFileSync(path.join(dir, 'block_slim.py'), slim.text);
      const run = (code: string) => {
        try {
          return execFileSync(py.python, ['-c', `import block_slim\n${code}`], {
            cwd: dir,
            encoding: 'utf8',
            stdio: ['ignore', 'pipe', 'pipe'],
          });
        } catch (e) {
          return String((e as { stderr?: string }).stderr);
        }
      };
      assert.match(run('import torch; print(block_slim.Block()(torch.randn(2, 8)).shape)'), /torch\.Size\(\[2, 8\]\)/);
      assert.match(
        run("block_slim.Block(norm='fancy')"),
        /ValueError: nnrag slim: option 'fancy', 'none', 'identity' of kind was pruned/,
      );
      assert.match(run("block_slim.Block(act='gate')"), /KeyError: 'gate'/);
    }
  } finally {
    ws.close();
  }
});

test('slim prunes branches the defaults never reach (isinstance, issubclass, is None) and keeps those they reach', async () => {
  const { ws } = await workspace();
  try {
    const id = 'slimpkg.typed.TypedBlock';
    const { slim, faithful } = bothProfiles(ws, id);
    for (const s of ['class BlurPool', 'class Attn', 'class RmsNorm', 'NORMS = ']) {
      assert.ok(faithful.text.includes(s), s);
      assert.ok(!bodyLines(slim.text).some((l) => l.includes(s)), `slim still has ${s}`);
    }
    // `scale=True` reaches `make_gate`'s branch: Scale stays
    assert.match(slim.text, /^class Scale\(nn\.Module\):$/m);
    assert.match(slim.text, /^ {8}return Scale\(dim\)$/m);
    // the pruned code is one marked raise naming the test; the test itself stays
    assert.match(
      slim.text,
      /^ {4}if isinstance\(norm, str\):\n {8}raise ValueError\("nnrag slim: branch 'if isinstance\(norm, str\)' is not reached.*# nnrag slim: pruned lines 63-64$/m,
    );
    assert.match(
      slim.text,
      /^ {4}raise ValueError\("nnrag slim: the code after if attn_layer is None is not reached.*# nnrag slim: pruned lines 57-59$/m,
    );
    // the header lists them with their original lines
    assert.match(
      slim.text,
      /^# {3}slimpkg\/typed\.py:49-51,57-59,63-64 \| branches no value of the defaults and validated arguments reaches: after if not pool_layer or not enable, after if attn_layer is None, if isinstance\(norm, str\)$/m,
    );
    const original = new Set(faithful.text.split('\n'));
    for (const l of bodyLines(slim.text))
      if (!l.includes('nnrag slim')) assert.ok(original.has(l), `not in the faithful module: ${l}`);
    const removed = (slim.record.emission as { removed: { kind: string; lines: number[] }[] }).removed;
    assert.deepEqual(
      removed.filter((r) => r.kind === 'unreached').map((r) => r.lines),
      [
        [49, 51],
        [57, 59],
        [63, 64],
      ],
    );

    // a value from outside (validated arguments, call sites) reaches its branch: kept
    const withAttn = api.extractText(
      ws,
      id,
      { profile: 'slim' },
      { entry: [entryCallFromArgs({ attn_layer: 'se' })!] },
    ).text;
    assert.match(withAttn, /^class Attn\(nn\.Module\):$/m);
    assert.ok(!bodyLines(withAttn).some((l) => l.includes('class BlurPool')));

    // the defaults work; a pruned value fails with an error naming the test
    const run = await pythonWith('typed_slim', slim.text);
    if (run) {
      assert.match(run('print(typed_slim.TypedBlock()(torch.randn(2, 8)).shape)'), /torch\.Size\(\[2, 8\]\)/);
      assert.match(
        run('print(typed_slim.TypedBlock(scale=False)(torch.randn(2, 8)).shape)'),
        /torch\.Size\(\[2, 8\]\)/,
      );
      assert.match(
        run("typed_slim.TypedBlock(norm='rms')"),
        /ValueError: nnrag slim: branch 'if isinstance\(norm, str\)' is not reached/,
      );
      assert.match(
        run("typed_slim.TypedBlock(attn_layer='se')"),
        /ValueError: nnrag slim: the code after if attn_layer is None is not reached/,
      );
      assert.match(
        run('typed_slim.TypedBlock(pool_layer=torch.nn.AvgPool1d)'),
        /ValueError: nnrag slim: the code after if not pool_layer or not enable is not reached/,
      );
    }
  } finally {
    ws.close();
  }
});

test('slim follows a class called through a local name, prunes a conditional expression, and takes required arguments by kind', async () => {
  const { ws } = await workspace();
  try {
    const id = 'slimpkg.flows.FlowBlock';
    // the block as its validated arguments build it: dim=8, width=3 (required: "some int")
    const { slim: built, faithful } = bothProfiles(ws, id, [entryCallFromArgs({ dim: 8, width: 3 })!]);
    for (const s of ['class Mixed', 'class Padded', 'class DropLayer', 'class Widen'])
      assert.ok(faithful.text.includes(s), s);
    // `unit = unit or Unit` is only called: Unit runs with the calls' arguments (kernel 1
    // or an int, padding '' or 1), not with unknown ones; `1.lower()` cannot go on, so
    // padding is '' where it is lowered and never 'same'; drop is 0.
    for (const s of ['class Mixed', 'class Padded', 'class DropLayer'])
      assert.ok(!bodyLines(built.text).some((l) => l.includes(s)), `slim still has ${s}`);
    assert.match(built.text, /^class Unit\(nn\.Module\):$/m);
    assert.match(
      built.text,
      /^ {8}self\.drop = \(_ for _ in \(\)\)\.throw\(ValueError\("nnrag slim: pruned, not reached with this block's defaults and validated arguments: the true side of if-expression drop > 0\. \(slimpkg\/flows\.py:75; the faithful module has it\)"\)\) if drop > 0\. else nn\.Identity\(\)$/m,
    );
    assert.match(
      built.text,
      /^# {3}slimpkg\/flows\.py:.*75.* \| branches no value of the defaults and validated arguments reaches: .*true side of if-expression drop > 0\./m,
    );
    const original = new Set(faithful.text.split('\n'));
    for (const l of bodyLines(built.text))
      if (!l.includes('nnrag slim')) assert.ok(original.has(l), `not in the faithful module: ${l}`);
    // JSON has no int/float distinction (Python's 3.0 reads as 3): a validated 3 may be
    // a float, so Widen stays; the literal 3 of a call site is an int, so it goes
    assert.match(built.text, /^class Widen\(nn\.Module\):$/m);
    const fromSite = api.extractText(ws, id, { profile: 'slim' }, { entry: [entryCallFromText('(8, 3)')!] }).text;
    assert.ok(!bodyLines(fromSite).some((l) => l.includes('class Widen') || l.includes('class Mixed')), fromSite);
    // with no call that gives width a value, width is anything: a list reaches Mixed
    const alone = api.extractText(ws, id, { profile: 'slim' }).text;
    assert.match(alone, /^class Mixed\(nn\.Module\):$/m);
    assert.ok(!bodyLines(alone).some((l) => l.includes('class Padded')));

    const run = await pythonWith('flows_slim', built.text);
    if (run) {
      // any int width works (a kind, not the value 3); a pruned value fails naming the test
      assert.match(run('print(flows_slim.FlowBlock(8, 5)(torch.randn(2, 8)).shape)'), /torch\.Size\(\[2, 8\]\)/);
      assert.match(
        run('flows_slim.FlowBlock(8, 3, drop=0.1)'),
        /ValueError: nnrag slim: pruned, not reached .*: the true side of if-expression drop > 0\./,
      );
      assert.match(
        run('flows_slim.FlowBlock(8, [3, 5])'),
        /ValueError: nnrag slim: branch 'if isinstance\(kernel, list\)' is not reached/,
      );
    }
  } finally {
    ws.close();
  }
});

const skip = await cannotValidate(true);

test('slim is kept where it validates as faithful does (with equivalence), else the faithful module is kept with the reason', {
  skip: skip ?? false,
}, async () => {
  const { ws, dir } = await workspace();
  const pool = await ValidatorPool.start({ workers: 1 });
  try {
    const ids = [
      'slimpkg.blocks.Block',
      'slimpkg.blocks.Traced',
      'slimpkg.blocks.Computed',
      'slimpkg.blocks.Hooked',
      'slimpkg.typed.TypedBlock',
      'slimpkg.typed.Switched',
    ];
    const recs = await extractAndValidate(ws, ids, { validator: pool, out: path.join(dir, 'library') });
    const by = new Map(recs.map((r) => [r.id, r]));
    // the records (slim, fallen back, probed) follow the block record's schema
    for (const r of recs) assert.deepEqual(violations(BLOCK_RECORD_SCHEMA, JSON.parse(JSON.stringify(r))), [], r.id);
    for (const id of ['slimpkg.blocks.Block', 'slimpkg.blocks.Traced', 'slimpkg.typed.TypedBlock']) {
      const r = by.get(id)!;
      const v = r.validation as { stages: Record<string, string> };
      const em = r.emission as { profile: string; faithfulLines: number };
      assert.equal(em.profile, 'slim', id);
      assert.ok(r.lines < em.faithfulLines, `${id}: ${r.lines} < ${em.faithfulLines}`);
      assert.equal(v.stages.forward, 'pass', id);
      assert.equal(v.stages.equivalence, 'pass', id);
      // the namespace stage runs: the package's zygote (made for another module of the
      // package, which does not import slimpkg.blocks) is not used for this one
      assert.equal(v.stages.namespace, 'pass', id);
    }
    // Computed's option name is computed (`''.join(parts)`): the lookup `_ACTS[name.lower()]`
    // may ask for any entry, so slim keeps the dict whole and validates (no KeyError)
    const c = by.get('slimpkg.blocks.Computed')!;
    const em = c.emission as { profile: string; removed: { kind: string }[] };
    assert.equal(em.profile, 'slim');
    assert.ok(!em.removed.some((r) => r.kind === 'options'), JSON.stringify(em.removed));
    assert.equal(c.ok, true);
    assert.match((c.validation as { stages: Record<string, string> }).stages.equivalence, /pass/);
    const cslim = api.extractText(ws, 'slimpkg.blocks.Computed', { profile: 'slim' }).text;
    for (const s of ['class Gate', 'gate=Gate', 'swishy=Swishy']) assert.ok(cslim.includes(s), s);
    // Switched sets the attribute its branch tests through __dict__: the value analysis
    // prunes the branch that builds Scale, the slim module fails to build, faithful is kept
    const sw = by.get('slimpkg.typed.Switched')!;
    const swem = sw.emission as { profile: string; fallbackReason: string };
    assert.match(
      api.extractText(ws, 'slimpkg.typed.Switched', { profile: 'slim' }).text,
      /nnrag slim: branch 'if use_scale' is not reached/,
    );
    assert.equal(swem.profile, 'faithful');
    assert.match(swem.fallbackReason, /slim module failed instantiate.*nnrag slim: branch 'if use_scale'/s);
    assert.equal(sw.ok, true);
    assert.equal((sw.validation as { stages: Record<string, string> }).stages.equivalence, 'pass');
    // a decorator the corpus does not show (an inherited method) stays in the static slim
    // module; the sandbox probe proves it returns its argument, so the library's lacks it
    assert.match(api.extractText(ws, 'slimpkg.blocks.Hooked', { profile: 'slim' }).text, /^@HOOKS\.register$/m);
    const h = by.get('slimpkg.blocks.Hooked')!;
    const hem = h.emission as { profile: string; proven: string[]; removed: { kind: string; what: string }[] };
    assert.equal(hem.profile, 'slim');
    assert.deepEqual(hem.proven, ['org/slim:slimpkg.blocks:51']);
    assert.deepEqual(
      hem.removed.map((r) => r.what),
      ['@HOOKS.register'],
    );
    assert.equal((h.validation as { stages: Record<string, string> }).stages.equivalence, 'pass');
    // --profile faithful keeps today's modules
    const f = await extractAndValidate(ws, ['slimpkg.blocks.Block'], {
      validator: pool,
      out: path.join(dir, 'library'),
      profile: 'faithful',
    });
    assert.equal((f[0].emission as { profile: string }).profile, 'faithful');
    assert.ok(f[0].lines > by.get('slimpkg.blocks.Block')!.lines);
  } finally {
    await pool.close();
    ws.close();
  }
});

test('slim removes registration calls of module-level code (a pass where one was alone) and the registry they alone read', async () => {
  const { ws } = await workspace();
  try {
    const { slim, faithful } = bothProfiles(ws, 'slimpkg.compat.Passthrough');
    assert.match(faithful.text, /^class Registry:$/m);
    for (const s of ['class Registry', 'MODELS', 'register_module'])
      assert.ok(!bodyLines(slim.text).some((l) => l.includes(s)), `slim still has ${s}`);
    assert.match(slim.text, /^ {4}pass {2}# nnrag slim: registration call removed \(line 10\)$/m);
    assert.match(slim.text, /^ {4}print\('not a registration: it stays'\)$/m);
    assert.match(
      slim.text,
      /^# {3}slimpkg\/compat\.py:10,19 \| registration calls: MODELS\.register_module\(module=nn\.Identity, name='Passthrough'\), MODELS\.register_module\(module=Passthrough, name='Passthrough'\)$/m,
    );
    const removed = (slim.record.emission as { removed: { kind: string; lines: number[] }[] }).removed;
    assert.deepEqual(
      removed.filter((r) => r.kind === 'registration').map((r) => r.lines),
      [
        [10, 10],
        [19, 19],
      ],
    );
    assert.deepEqual(violations(BLOCK_RECORD_SCHEMA, slim.record), []);
    const original = new Set(faithful.text.split('\n'));
    for (const l of bodyLines(slim.text))
      if (!l.includes('nnrag slim')) assert.ok(original.has(l), `not in the faithful module: ${l}`);
    // the module still defines and runs the block
    const py = await torchPython();
    if (py) {
      const dir = tempDir();
      writeFileSync(path.join(dir, 'block_slim.py'), slim.text);
      const out = execFileSync(
        py.python,
        ['-c', 'import torch, block_slim\nprint(block_slim.Passthrough()(torch.ones(3)).sum().item())'],
        { cwd: dir, encoding: 'utf8' },
      );
      assert.match(out, /3\.0/);
    }
  } finally {
    ws.close();
  }
});

test('what slim memoises across blocks does not depend on the block: each slim module is the same extracted after all the others as alone', async () => {
  const ids = [
    'slimpkg.typed.TypedBlock',
    'slimpkg.blocks.Block',
    'slimpkg.compat.Passthrough',
    'slimpkg.typed.Switched',
    'slimpkg.blocks.Traced',
  ];
  const { ws: shared } = await workspace();
  try {
    const after = new Map<string, string>();
    for (const id of ids) after.set(id, api.extractText(shared, id, { profile: 'slim' }).text);
    // the last blocks again, in reverse order, in the same workspace
    for (const id of [...ids].reverse())
      assert.equal(api.extractText(shared, id, { profile: 'slim' }).text, after.get(id), id);
    for (const id of ids) {
      const { ws } = await workspace();
      try {
        assert.equal(api.extractText(ws, id, { profile: 'slim' }).text, after.get(id), id);
      } finally {
        ws.close();
      }
    }
  } finally {
    shared.close();
  }
});
