// The emitter: turns a closure into one standalone Python module that keeps the
// original code (docs/ARCHITECTURE.md "Emission").
//
// - Each copied statement keeps its original text (comments, decorators, docstrings);
//   only identifier spans are rewritten, never by regex: references resolved to a
//   renamed binding, `alias.attr` chains into interned modules (replaced by the name
//   of the copied definition), and the binding sites of renamed definitions.
// - Order: a topological order of eager dependencies (every eager read follows its
//   definition; redefinitions and `del` of a name keep their order), ties broken by the
//   order the modules were reached (deepest dependencies first) and the original
//   position; lazy dependencies never force order, and a module's original order is only
//   a tie-break, so a definition another module reads eagerly moves up to where it is
//   needed. A cycle of eager reads is reported (`eager-cycle`), not emitted silently.
// - Extern imports are printed in their original form (`import a.b as c`,
//   `from x import y as z`), deduplicated and grouped per PEP 8: `__future__`, then
//   the standard library, then third party. A submodule the copied code reads through
//   an extern module (`packaging.version.parse` after `import packaging`) that the
//   original had loaded by another import gets `import packaging.version` (submodules.ts,
//   Language Reference §5.4.2).
// - Names are bindings identified by what they denote (closure.ts): `import torch` and
//   `import torch.distributed.nn` (in a `try` or not) are one binding of `torch`, and a
//   global bound only by imports of one thing is that thing; only two *different*
//   things wanting the same global name conflict. Then the one reached first from the
//   target keeps it (the target class always does; builtins are never shadowed), the
//   others are renamed `<name>_<module>` and every reference is rewritten, keeping the
//   meaning of each import form (Language Reference §7.11): `import a` → `import a as
//   a_1`; `import a.b.c` (binds `a`, loads a.b.c) → `import a as a_1` plus `import a.b.c`
//   for its side effect, or `import a.b.c as a_1` + `import a as a_1` where `a` must
//   not be touched (another import holds it, or inside a compound statement);
//   `import a.b as x` → `import a.b as x_1`; `from m import y` → `from m import y as
//   y_1`; a name from `from m import *` → also `from m import y as y_1`; relative and
//   interned imports disappear (the definition is copied and renamed). An interned
//   module bound by an import and used as a value (`vars(m)`) becomes
//   `m = types.ModuleType('a.b')` filled with the copies of its members (closure.ts).
// - A provenance header records, per copied statement, repository, revision, path,
//   line range and the SWHID of the source file; `namespace` (for the validator's
//   namespace stage) lists each emitted name with the original module-level names it
//   must denote the same thing as, and where each copied statement sits.
// - The module graph (graph.ts): which module's copied code reads which module's
//   definitions and which extern packages, from the closure's resolved uses.
// - Usage roots (definitions only the validated arguments name, closure.ts) get a header
//   line each: they are in the module for the usage line.
// - Slim emission (src/emit/slim) hands in more edits (removed decorators, pruned
//   options) and header lines through `EmitOptions`.
import type { ImportEdge } from '../parse/types.js';
import { slotKey, type Binding, type Closure, type StmtNode } from '../resolve/closure.js';
import type { Corpus, CorpusModule } from '../resolve/corpus.js';
import { STDLIB_MODULES } from '../resolve/builtins.js';
import { moduleGraph } from './graph.js';
import { submoduleImports, type Submodules } from './submodules.js';
import type { Diagnostic, ModuleGraph, ProvenanceEntry } from '../records/block.js';

export interface EmittedModule {
  text: string;
  lines: number;
  /** interned module names whose statements were copied */
  interned: string[];
  /** top-level extern module names (requirements) */
  externs: string[];
  provenance: ProvenanceEntry[];
  /** original name → emitted name, for renamed bindings */
  renames: { from: string; to: string; module: string }[];
  /** problems found while emitting (a cycle of eager reads) */
  diagnostics: Diagnostic[];
  /** what the validator's namespace stage checks (see NamespaceMap) */
  namespace: NamespaceMap;
  /** module-level edges of the copied code: which module reads which module's
   *  definitions, which extern packages it imports (graph.ts) */
  moduleGraph: ModuleGraph;
}

/** The top-level names of the emitted module that come from the original corpus, each
 *  with the module-level names of the original modules it must denote the same thing
 *  as, and where each copied statement sits: `[first, last]` lines in the emitted text,
 *  the original module and its `[first, last]` lines. */
export interface NamespaceMap {
  names: { name: string; origins: [module: string, name: string][] }[];
  statements: [first: number, last: number, module: string, origFirst: number, origLast: number][];
}

/** A replacement of `[start, end)` of a statement's original text (offsets into the
 *  module's source). */
export interface Edit {
  start: number;
  end: number;
  text: string;
}

export interface EmitOptions {
  generator?: string;
  /** more edits of a copied statement (slim emission: removed decorators, pruned
   *  options; src/emit/slim); an edit covering a name rewrite wins over it */
  edits?: (n: StmtNode) => readonly Edit[] | undefined;
  /** lines added to the header after the renames (each starts with `# `) */
  header?: readonly string[];
  /** the submodule analysis of the block's packages: the submodules the copied code
   *  reads through an extern module get their own import (submodules.ts) */
  submodules?: Submodules;
}

export function emitModule(corpus: Corpus, closure: Closure, opts: EmitOptions = {}): EmittedModule {
  const names = assignNames(closure);
  const { order, diagnostics } = orderNodes(closure);
  const edits = collectEdits(closure, names);
  if (opts.edits) {
    for (const n of closure.nodes) {
      const more = opts.edits(n);
      if (more?.length) edits.set(n, [...(edits.get(n) ?? []), ...more]);
    }
  }

  const body: string[] = [];
  const statements: NamespaceMap['statements'] = [];
  for (const n of order) {
    const src = corpus.source(n.mod);
    body.push(applyEdits(src, n.facts.start, n.facts.end, edits.get(n) ?? []));
  }

  const future = order.some((n) => n.mod.facts.futureAnnotations);
  const imports = printImports(
    closure,
    names,
    future,
    opts.submodules ? submoduleImports(closure, opts.submodules) : new Map(),
  );
  const provenance = buildProvenance(corpus, order);
  const interned = [...new Set(order.map((n) => n.mod.name))];
  const externs = [
    ...new Set(
      [...closure.bindings.values()]
        .filter((b) => b.kind === 'extern')
        .flatMap((b) => b.edges!.map((e) => e.absModule.split('.')[0])),
    ),
  ].filter((m) => m !== '__future__');

  const target = `${closure.target.mod.name}.${closure.target.className}`;
  const header = [
    // no `coding:`/`coding=` on the first lines: PEP 263 would read `# PositionalEncoding: …` as an encoding declaration
    `# Standalone module of ${closure.target.className}, generated by ${opts.generator ?? 'nnrag'} from ${target}.`,
    '# Definitions are copied verbatim from the sources below; only names were rewritten',
    '# where two definitions collided or an interned module attribute was inlined.',
    '# Provenance (repository @ revision | path:lines | SWHID of the source file):',
  ];
  for (const p of provenance) {
    const rev = p.revision ? p.revision.slice(0, 12) : 'working-tree';
    const ranges = p.ranges.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(',');
    header.push(`#   ${p.repo} @ ${rev} | ${p.path}:${ranges} | ${p.swhid}`);
  }
  const renames = [...names.entries()]
    .filter(([b, name]) => name !== b.name)
    .map(([b, name]) => ({ from: b.name, to: name, module: b.mod?.name ?? b.origins?.[0]?.mod.name ?? b.key }));
  for (const r of renames) header.push(`# renamed: ${r.module}.${r.from} -> ${r.to}`);
  // usage roots (closure.ts BuildOptions.roots): copied for the usage line only
  for (const r of closure.usageRoots)
    header.push(
      `# for the usage line: ${names.get(r.binding) ?? r.name} (${r.mod.name}.${r.name}), which the validated arguments name; the block's code does not`,
    );
  if (opts.header) header.push(...opts.header);

  const parts = [header.join('\n')];
  if (imports) parts.push(imports);
  // each part is followed by two blank lines: the first line of the body is known
  let line = 1;
  for (const p of parts) line += countLines(p) + 2;
  order.forEach((n, i) => {
    const last = line + countLines(body[i]) - 1;
    statements.push([line, last, n.mod.name, n.facts.startLine, n.facts.endLine]);
    line = last + 3;
  });
  parts.push(...body);
  const text = parts.join('\n\n\n') + '\n';
  const namespace: NamespaceMap = {
    // the names the copied code uses (and the target class): a statement copied for one
    // name may bind others nothing reads, e.g. a flag set only when a `try` succeeds,
    // which the original had from an earlier statement the copy did not need
    names: [...names]
      .filter(([b]) => b.kind !== 'builtin' && b.origins?.length && closure.bindings.get(b.key) === b)
      .map(([b, name]) => ({ name, origins: b.origins!.map((o): [string, string] => [o.mod.name, o.name]) })),
    statements,
  };
  return {
    text,
    lines: text.split('\n').length - 1,
    interned,
    externs,
    provenance,
    renames,
    diagnostics,
    namespace,
    moduleGraph: moduleGraph(closure, externs),
  };
}

function countLines(s: string): number {
  let n = 1;
  for (let i = s.indexOf('\n'); i !== -1; i = s.indexOf('\n', i + 1)) n++;
  return n;
}

// ---------------------------------------------------------------- names

/** Decide the emitted name of every binding; the target class keeps its name, builtins
 *  are never shadowed, otherwise the binding reached first keeps a contested name. */
function assignNames(closure: Closure): Map<Binding, string> {
  // every name bound by a copied statement occupies the namespace, needed or not
  const claims = new Map<string, Binding[]>();
  const all = new Map(closure.bindings);
  for (const n of closure.nodes) {
    for (const name of n.facts.binds) {
      // a name bound only by imports of something the closure binds already is that binding
      if (closure.aliases.has(slotKey(n.mod, name))) continue;
      const key = `def:${slotKey(n.mod, name)}`;
      if (!all.has(key))
        all.set(key, {
          key,
          name,
          kind: 'def',
          mod: n.mod,
          seq: Number.MAX_SAFE_INTEGER,
          origins: [{ mod: n.mod, name }],
        });
    }
  }
  for (const b of all.values()) {
    const l = claims.get(b.name);
    if (l) l.push(b);
    else claims.set(b.name, [b]);
  }
  const targetKey = `def:${closure.target.mod.repo}:${closure.target.mod.name}:${closure.target.className}`;
  const rank = (b: Binding) => (b.kind === 'builtin' ? -2 : b.key === targetKey ? -1 : b.seq);
  const taken = new Set(claims.keys());
  // an attribute chain replaced by a binding's name must not land where a function binds
  // that name locally (`torch_geometric.backend.use_segment_matmul` read in a function
  // that assigns `use_segment_matmul`): such a binding gives the name up
  const forbidden = new Map<Binding, Set<string>>();
  for (const u of closure.uses) {
    if (!u.shadows) continue;
    let f = forbidden.get(u.binding);
    if (!f) forbidden.set(u.binding, (f = new Set()));
    for (const s of u.shadows) f.add(s);
  }
  const allowed = (b: Binding, name: string) => !forbidden.get(b)?.has(name);
  const out = new Map<Binding, string>();
  for (const [name, list] of claims) {
    list.sort((a, b) => rank(a) - rank(b));
    const keeper = list.find((b) => b.key === targetKey || allowed(b, name));
    if (keeper) out.set(keeper, name);
    for (const b of list) {
      if (b === keeper) continue;
      const base = `${name}_${suffixFor(b)}`;
      let cand = base;
      for (let i = 2; taken.has(cand) || !allowed(b, cand); i++) cand = `${base}${i}`;
      taken.add(cand);
      out.set(b, cand);
    }
  }
  // bindings only known to the closure keep their entries by identity
  for (const b of closure.bindings.values()) if (!out.has(b)) out.set(b, b.name);
  return out;
}

function suffixFor(b: Binding): string {
  const src = b.kind === 'def' ? b.mod!.name : (b.edges?.[0]?.absModule ?? b.origins?.[0]?.mod.name ?? 'ext');
  const last =
    src
      .split('.')
      .filter((p) => p && p !== '__init__')
      .pop() ?? 'mod';
  return last.replace(/[^A-Za-z0-9_]/g, '_');
}

// ---------------------------------------------------------------- edits

function collectEdits(closure: Closure, names: Map<Binding, string>): Map<StmtNode, Edit[]> {
  const edits = new Map<StmtNode, Edit[]>();
  const add = (n: StmtNode, e: Edit) => {
    const l = edits.get(n);
    if (l) l.push(e);
    else edits.set(n, [e]);
  };
  const nameOf = (b: Binding) => names.get(b) ?? b.name;
  for (const u of closure.uses) {
    const name = nameOf(u.binding);
    if (name !== u.original) add(u.node, { start: u.start, end: u.end, text: name });
  }
  // binding sites of renamed definitions
  const renamedDefs = new Map<string, string>();
  for (const [b, name] of names)
    if (b.kind === 'def' && name !== b.name) renamedDefs.set(`${b.mod!.repo}:${b.mod!.name}:${b.name}`, name);
  if (renamedDefs.size) {
    for (const n of closure.nodes) {
      for (const s of n.facts.bindSpans) {
        const to = renamedDefs.get(`${n.mod.repo}:${n.mod.name}:${s.name}`);
        if (to) add(n, { start: s.start, end: s.end, text: to });
      }
    }
  }
  for (const r of closure.importRewrites) {
    // At module level the import binds a global of the copied statement, which may
    // itself have been renamed; in a function body it binds a local that keeps its name.
    // A global bound only by imports is the binding it denotes (closure.aliases).
    const bound = (local: string) => {
      if (r.nested) return local;
      const alias = closure.aliases.get(slotKey(r.node.mod, local));
      return alias ? nameOf(alias) : (renamedDefs.get(slotKey(r.node.mod, local)) ?? local);
    };
    const lines: string[] = [];
    let renamed = false;
    for (const { edge: e, absModule } of r.keep) {
      const local = e.kind === 'import' ? (e.asname ?? e.module.split('.')[0]) : (e.asname ?? e.name);
      const as = bound(local);
      if (as !== local) renamed = true;
      if (as !== local && e.kind === 'import' && !e.asname && e.module.includes('.')) {
        // `import a.b.c` binds `a` and loads a.b.c (§7.11); renamed, it keeps both effects
        // without touching `a`, which something else holds: `import a.b.c as x` loads the
        // submodule, `import a as x` then binds x to the top-level package
        const mod = absModule ?? e.module;
        lines.push(`import ${mod} as ${as}`, `import ${mod.split('.')[0]} as ${as}`);
        continue;
      }
      lines.push(importLine(e, as !== local ? as : null, absModule ?? undefined));
    }
    if (!r.interned && !renamed) continue; // the original import text stays as it is
    for (const { local, binding } of r.locals) {
      const name = nameOf(binding);
      const as = bound(local);
      if (name !== as) lines.push(`${as} = ${name}`);
    }
    // a module object used as a value: a module of the same name holding the copies
    // (closure.ts moduleNamespace)
    for (const m of r.modules ?? []) {
      const as = bound(m.local);
      const entries = m.members.map(({ name, binding }) => `${JSON.stringify(name)}: ${nameOf(binding)}`);
      lines.push(
        `${as} = ${nameOf(m.types)}.ModuleType(${JSON.stringify(m.module)})`,
        `${as}.__dict__.update({${entries.join(', ')}})`,
      );
    }
    add(r.node, { start: r.start, end: r.end, text: lines.length ? lines.join('; ') : 'pass' });
  }
  return edits;
}

function applyEdits(src: string, start: number, end: number, edits: Edit[]): string {
  const sorted = [...edits].sort((a, b) => a.start - b.start || b.end - a.end);
  let out = '';
  let pos = start;
  for (const e of sorted) {
    if (e.start < pos) continue; // nested inside an earlier edit (an import rewrite)
    out += src.slice(pos, e.start) + e.text;
    pos = e.end;
  }
  return out + src.slice(pos, end);
}

// ---------------------------------------------------------------- order

/** A topological order of the statements (Kahn's algorithm with a priority queue):
 *  - hard edges: eager reads (closure.eager), and statements of one module that bind or
 *    `del` the same name keep their original relative order (the last binding is the
 *    value the module ends with, §4.2.2);
 *  - soft edges (closure.soft): eager readers of one definition keep their order unless
 *    that closes a cycle, then the soft edges among the statements left are dropped;
 *  - ties: deepest module first (reached last by the worklist), then original position.
 *  Nothing else forces the original order of a module: a definition another module reads
 *  eagerly moves up to where it is needed. A cycle of hard edges is reported as an
 *  `eager-cycle` diagnostic and broken at the first statement in tie order. */
function orderNodes(closure: Closure): { order: StmtNode[]; diagnostics: Diagnostic[] } {
  const modRank = new Map<CorpusModule, number>();
  for (const n of [...closure.nodes].sort((a, b) => a.seq - b.seq))
    if (!modRank.has(n.mod)) modRank.set(n.mod, modRank.size);
  // deeper modules (reached later) first; the target's module last
  const cmp = (a: StmtNode, b: StmtNode) => (modRank.get(b.mod) ?? 0) - (modRank.get(a.mod) ?? 0) || a.stmt - b.stmt;
  const hard = new Map<StmtNode, Set<StmtNode>>(); // node → deps
  const addEdge = (m: Map<StmtNode, Set<StmtNode>>, n: StmtNode, d: StmtNode) => {
    if (n === d) return;
    let s = m.get(n);
    if (!s) m.set(n, (s = new Set()));
    s.add(d);
  };
  const inClosure = new Set(closure.nodes);
  for (const [n, deps] of closure.eager)
    for (const d of deps) if (inClosure.has(d) && inClosure.has(n)) addEdge(hard, n, d);
  // redefinitions and `del` of one name in one module stay in order
  const binders = new Map<string, StmtNode[]>();
  for (const n of closure.nodes) {
    const names = new Set([
      ...n.facts.binds.filter((x) => !n.facts.globalBinds?.includes(x)),
      ...(n.facts.deletes ?? []),
    ]);
    for (const name of names) {
      const k = slotKey(n.mod, name);
      const l = binders.get(k);
      if (l) l.push(n);
      else binders.set(k, [n]);
    }
  }
  for (const l of binders.values()) {
    if (l.length < 2) continue;
    l.sort((a, b) => a.stmt - b.stmt);
    for (let i = 1; i < l.length; i++) addEdge(hard, l[i], l[i - 1]);
  }
  const soft = new Map<StmtNode, Set<StmtNode>>();
  for (const [n, deps] of closure.soft)
    for (const d of deps) if (inClosure.has(d) && inClosure.has(n) && !hard.get(d)?.has(n)) addEdge(soft, n, d);

  const users = new Map<StmtNode, StmtNode[]>();
  const indeg = new Map<StmtNode, number>();
  for (const n of closure.nodes) indeg.set(n, 0);
  for (const m of [hard, soft]) {
    for (const [n, deps] of m) {
      for (const d of deps) {
        indeg.set(n, indeg.get(n)! + 1);
        const l = users.get(d);
        if (l) l.push(n);
        else users.set(d, [n]);
      }
    }
  }
  const heap = new Heap<StmtNode>(cmp);
  for (const n of closure.nodes) if (indeg.get(n) === 0) heap.push(n);
  const out: StmtNode[] = [];
  const done = new Set<StmtNode>();
  const diagnostics: Diagnostic[] = [];
  const release = (n: StmtNode) => {
    for (const u of users.get(n) ?? []) {
      const d = indeg.get(u)! - 1;
      indeg.set(u, d);
      if (d === 0 && !done.has(u)) heap.push(u);
    }
  };
  let softDropped = false;
  while (out.length < closure.nodes.length) {
    let n = heap.pop();
    if (n === undefined) {
      const remaining = closure.nodes.filter((x) => !done.has(x));
      if (!softDropped) {
        // a cycle through soft edges: only hard edges count from here on
        softDropped = true;
        for (const x of remaining) {
          let d = 0;
          for (const dep of hard.get(x) ?? []) if (!done.has(dep)) d++;
          indeg.set(x, d);
          if (d === 0) heap.push(x);
        }
        users.clear();
        for (const [x, deps] of hard) {
          for (const dep of deps) {
            const l = users.get(dep);
            if (l) l.push(x);
            else users.set(dep, [x]);
          }
        }
        continue;
      }
      // a real cycle of eager reads: report it, then break it
      const cycle = findCycle(remaining, hard, done);
      n = [...remaining].sort(cmp)[0];
      const where = (x: StmtNode) => `${x.mod.path}:${x.facts.startLine}`;
      diagnostics.push({
        severity: 'error',
        name: cycle.map((x) => x.facts.binds[0] ?? '?').join(' -> '),
        reason: 'eager-cycle',
        message: `statements read each other when they run, so no order works: ${cycle.map(where).join(' -> ')}`,
        module: n.mod.name,
        path: n.mod.path,
        repo: n.mod.repo,
        line: n.facts.startLine,
      });
    }
    if (done.has(n)) continue;
    done.add(n);
    out.push(n);
    release(n);
  }
  return { order: out, diagnostics };
}

/** A cycle of hard edges among the statements not yet emitted. */
function findCycle(remaining: StmtNode[], hard: Map<StmtNode, Set<StmtNode>>, done: Set<StmtNode>): StmtNode[] {
  const state = new Map<StmtNode, 1 | 2>();
  const stack: StmtNode[] = [];
  const visit = (n: StmtNode): StmtNode[] | null => {
    state.set(n, 1);
    stack.push(n);
    for (const d of hard.get(n) ?? []) {
      if (done.has(d)) continue;
      if (state.get(d) === 1) return stack.slice(stack.indexOf(d)).reverse();
      if (!state.has(d)) {
        const c = visit(d);
        if (c) return c;
      }
    }
    stack.pop();
    state.set(n, 2);
    return null;
  };
  for (const n of remaining) {
    if (state.has(n)) continue;
    const c = visit(n);
    if (c) return c;
  }
  return remaining.slice(0, 1);
}

/** Minimal binary heap. */
class Heap<T> {
  private readonly a: T[] = [];
  constructor(private readonly cmp: (x: T, y: T) => number) {}
  push(x: T): void {
    const a = this.a;
    a.push(x);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (this.cmp(a[i], a[p]) >= 0) break;
      [a[i], a[p]] = [a[p], a[i]];
      i = p;
    }
  }
  pop(): T | undefined {
    const a = this.a;
    if (!a.length) return undefined;
    const top = a[0];
    const last = a.pop()!;
    if (a.length) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && this.cmp(a[l], a[m]) < 0) m = l;
        if (r < a.length && this.cmp(a[r], a[m]) < 0) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m], a[i]];
        i = m;
      }
    }
    return top;
  }
}

// ---------------------------------------------------------------- imports

function importLine(e: ImportEdge, as: string | null, absModule?: string): string {
  const mod = absModule ?? (e.kind === 'from' ? '.'.repeat(e.level) + e.module : e.module);
  if (e.kind === 'import') {
    const alias = as ?? e.asname;
    return alias && alias !== mod ? `import ${mod} as ${alias}` : `import ${mod}`;
  }
  const alias = as ?? e.asname;
  return `from ${mod} import ${alias && alias !== e.name ? `${e.name} as ${alias}` : e.name}`;
}

/** Extern imports, deduplicated and grouped per PEP 8. */
function printImports(
  closure: Closure,
  names: Map<Binding, string>,
  futureAnnotations: boolean,
  submodules: Map<Binding, string[]>,
): string {
  const plain = new Map<string, Set<string>>(); // group → lines of `import x`
  const froms = new Map<string, Map<string, Set<string>>>(); // group → module → names
  const groupOf = (mod: string) =>
    mod === '__future__' ? 'future' : STDLIB_MODULES.has(mod.split('.')[0]) ? 'stdlib' : 'third';
  const addFrom = (mod: string, item: string) => {
    const g = groupOf(mod);
    let byMod = froms.get(g);
    if (!byMod) froms.set(g, (byMod = new Map()));
    let s = byMod.get(mod);
    if (!s) byMod.set(mod, (s = new Set()));
    s.add(item);
  };
  if (futureAnnotations) addFrom('__future__', 'annotations');
  // names held by extern bindings (a side-effect `import a.b.c` must not rebind them)
  const externNames = new Set(
    [...closure.bindings.values()].filter((b) => b.kind === 'extern').map((b) => names.get(b) ?? b.name),
  );
  for (const b of closure.bindings.values()) {
    if (b.kind !== 'extern') continue;
    const name = names.get(b) ?? b.name;
    // one binding, one import: the first form seen, except `import a.b` forms that all
    // bind `a` but each load a submodule
    const edges = b.edges!.some((e) => e.edge.kind === 'import' && !e.edge.asname) ? b.edges! : b.edges!.slice(0, 1);
    for (const { edge, absModule } of edges) {
      if (edge.kind === 'from') {
        addFrom(absModule, name !== edge.name && edge.name !== '*' ? `${edge.name} as ${name}` : edge.name);
        // a renamed name that came from `from x import *` is imported under its new name too
        if (edge.name === '*' && name !== b.name) addFrom(absModule, `${b.name} as ${name}`);
      } else {
        const g = groupOf(absModule);
        let s = plain.get(g);
        if (!s) plain.set(g, (s = new Set()));
        const top = absModule.split('.')[0];
        if (edge.asname) s.add(name !== absModule ? `import ${absModule} as ${name}` : `import ${absModule}`);
        else if (name === b.name) s.add(`import ${absModule}`);
        else if (absModule === top) s.add(`import ${top} as ${name}`);
        else if (!externNames.has(top)) {
          // renamed `import a.b.c` (binds `a`, loads a.b.c, §7.11): the new name is bound to
          // the package and the dotted import stays for its side effect; what holds `a` in
          // the module is a definition, bound after the imports
          s.add(`import ${top} as ${name}`);
          s.add(`import ${absModule}`);
        } else s.add(`import ${absModule} as ${name}\nimport ${top} as ${name}`); // `a` is another import's: leave it alone
      }
    }
    // submodules the copied code reads through it that nothing else loads (submodules.ts):
    // `import P.sub` binds `P`, so where another binding holds that name the submodule is
    // loaded under this binding's name, then the name is bound to its module again
    for (const sub of submodules.get(b) ?? []) {
      const top = sub.split('.')[0];
      const held = [...names].some(
        ([o, n]) =>
          n === top && !(o.kind === 'extern' && o.qualified === top && o.edges?.some((e) => e.edge.kind === 'import')),
      );
      const g = groupOf(sub);
      let s = plain.get(g);
      if (!s) plain.set(g, (s = new Set()));
      s.add(held ? `import ${sub} as ${name}\nimport ${b.qualified} as ${name}` : `import ${sub}`);
    }
  }
  const sections: string[] = [];
  for (const g of ['future', 'stdlib', 'third']) {
    const lines = [...(plain.get(g) ?? [])].sort((a, b) => a.localeCompare(b));
    const byMod = froms.get(g);
    if (byMod) {
      for (const mod of [...byMod.keys()].sort()) {
        const all = byMod.get(mod)!;
        // `from x import *` keeps its own line (it cannot be combined with names)
        if (all.delete('*')) lines.push(`from ${mod} import *`);
        if (!all.size) continue;
        const items = [...all].sort((a, b) => a.localeCompare(b));
        const one = `from ${mod} import ${items.join(', ')}`;
        lines.push(one.length <= 99 ? one : `from ${mod} import (\n${items.map((i) => `    ${i},`).join('\n')}\n)`);
      }
    }
    if (lines.length) sections.push(lines.join('\n'));
  }
  return sections.join('\n\n');
}

// ---------------------------------------------------------------- provenance

function buildProvenance(corpus: Corpus, order: StmtNode[]): ProvenanceEntry[] {
  const byFile = new Map<CorpusModule, ProvenanceEntry>();
  for (const n of order) {
    let p = byFile.get(n.mod);
    if (!p) {
      const repo = corpus.repos.get(n.mod.repo);
      p = {
        repo: n.mod.repo,
        revision: repo?.revision ?? null,
        url: repo?.url ?? null,
        path: n.mod.path,
        module: n.mod.name,
        swhid: `swh:1:cnt:${n.mod.blob}`,
        ranges: [],
      };
      byFile.set(n.mod, p);
    }
    p.ranges.push([n.facts.startLine, n.facts.endLine]);
  }
  for (const p of byFile.values()) p.ranges.sort((a, b) => a[0] - b[0]);
  return [...byFile.values()];
}
