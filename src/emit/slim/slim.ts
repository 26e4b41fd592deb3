// Slim emission (docs/ARCHITECTURE.md "Slim emission"): the closure of a block without
// the registration decorators that return their argument (and the registration calls of
// module-level code, decorators.ts) and without the options of
// option registries the block cannot reach, as skip ranges for the closure and edits for
// the emitter. The code that stays is the original's, byte for byte; what is removed is
// listed in the header, and a pruned `if` branch is replaced by one marked line that
// raises a ValueError naming the option.
//
// Reached options, a least fixpoint: every option starts pruned; the string literals of
// the code that stays (defaults, literals passed on), of the block's call sites and data
// sites (what the validator builds it with) are reached; an option whose key is reached
// is kept, which brings its code (and its strings) in; repeat until nothing new is
// reached. The names of the definitions the code that stays reads are reached too (code
// may select an option by a class's `__name__`). Keys compare case-insensitively and
// without `_`/`-` (factories normalise their argument).
import type { BuildOptions, Closure, StmtNode } from '../../resolve/closure.js';
import { ClosureBuilder, slotKey } from '../../resolve/closure.js';
import { type InstalledLookup, packagesHeader } from './packages.js';
import type { CorpusModule } from '../../resolve/corpus.js';
import type { SlimAnalysis } from './analysis.js';
import type { Resolver } from '../../resolve/names.js';
import type { Edit } from '../emitter.js';
import { decoratorVerdict, registrationCall } from './decorators.js';
import {
  type CallStatementSite,
  type DecoratorSite,
  type ModuleSyntax,
  type OptionEntry,
  type OptionSite,
} from './syntax.js';
import { valuePrunes, type EntryCall, type ValuePrune } from './values.js';
import type { SlimRemoval } from '../../records/block.js';

export interface SlimOptions {
  /** texts whose string literals can reach options: call sites, data sites, witnesses */
  seeds?: readonly string[];
  /** decorators proven in the sandbox to return their argument (`decoratorKey`) */
  proven?: ReadonlySet<string>;
  /** calls of the block from outside (call sites, validated arguments): the values its
   *  parameters take besides their defaults (values.ts) */
  entry?: readonly EntryCall[];
  /** the package boundary (packages.ts): modules of other repositories installed in the
   *  validation environment with the indexed bytes are imported, not copied */
  installed?: InstalledLookup;
  /** usage roots (closure.ts BuildOptions.roots): definitions only the validated
   *  arguments name, in the module for the usage line */
  roots?: BuildOptions['roots'];
}

export interface SlimResult {
  closure: Closure;
  edits: (n: StmtNode) => readonly Edit[] | undefined;
  header: string[];
  removed: SlimRemoval[];
  /** decorators of the closure that were not proven to return their argument statically
   *  (and are not in `proven`): candidates for the sandbox probe */
  unknownDecorators: { key: string; text: string; target: 'class' | 'function'; mod: CorpusModule; line: number }[];
}

export function decoratorKey(mod: CorpusModule, site: DecoratorSite): string {
  return `${mod.repo}:${mod.name}:${site.line}`;
}

const MAX_ROUNDS = 12;
const MAX_OUTER = 6;
const STRING_LIT = /(['"])((?:\\.|(?!\1)[^\\\n])*)\1/g;

const DEF_KINDS = new Set(['class_definition', 'function_definition', 'decorated_definition']);

/** The slim closure of a block (`an`: the analysis of its resolver, analysis.ts). */
export function slimClosure(
  an: SlimAnalysis,
  mod: CorpusModule,
  className: string,
  opts: SlimOptions = {},
): SlimResult {
  const { corpus, resolver } = an;
  const builder = new ClosureBuilder(corpus, resolver);
  const seedKeys = new Set<string>();
  for (const t of opts.seeds ?? []) for (const m of t.matchAll(STRING_LIT)) seedKeys.add(optionKey(m[2]));
  let reached = new Set<string>();
  const syntax = (m: CorpusModule): ModuleSyntax => an.syntax(m);
  /** decorators kept because their registry is still read by the code that stays */
  const keepDecorators = new Set<DecoratorSite | CallStatementSite>();
  const isRegistration = (m: CorpusModule, c: CallStatementSite): boolean =>
    an.verdict(m, c, () => registrationCall(resolver, m, c, an.shapes));

  const removable = (m: CorpusModule, d: DecoratorSite): boolean => {
    if (keepDecorators.has(d)) return false;
    return (
      an.verdict(m, d, () => decoratorVerdict(resolver, m, d, an.shapes) === 'identity') ||
      !!opts.proven?.has(decoratorKey(m, d))
    );
  };
  const isRegistry = (m: CorpusModule, site: OptionSite): boolean =>
    an.verdict(m, site, () => registry(resolver, m, site));
  // branches no value reaches (values.ts): recomputed on each closure until they repeat
  let prunes: ValuePrune[] = [];
  const prunesOf = (m: CorpusModule, stmt: number) => prunes.filter((p) => p.mod === m && p.stmt === stmt);
  const inPrune = (m: CorpusModule, stmt: number, a: number, b: number) =>
    prunesOf(m, stmt).some((p) => a >= p.start && b <= p.end);
  // option dicts a lookup with a computed key reads (lookups.ts): kept whole
  const wholeDicts = new Set<string>();
  const prunable = (m: CorpusModule, site: OptionSite, i: number): boolean => {
    if (site.kind === 'dict' && wholeDicts.has(`${m.repo}:${m.name}:${site.stmt}`)) return false;
    const e = site.entries[i];
    if (e.keys.some((k) => reached.has(optionKey(k)))) return false;
    const refs = m.facts.statements[site.stmt].refs;
    return refs.some((r) => r.start >= e.codeStart && r.start < e.codeEnd);
  };
  // the sites of a statement do not change while the block is slimmed (their verdicts are
  // memoised): computed once per statement, not on every closure rebuild and round
  type Sites = { options: OptionSite[]; decorators: DecoratorSite[]; registrations: CallStatementSite[] };
  const sitesMemo = new Map<CorpusModule, Map<number, Sites>>();
  const sitesOf = (m: CorpusModule, stmt: number): Sites => {
    let byStmt = sitesMemo.get(m);
    if (!byStmt) sitesMemo.set(m, (byStmt = new Map()));
    let r = byStmt.get(stmt);
    if (!r) {
      const s = syntax(m);
      r = {
        options: s.options.filter((o) => o.stmt === stmt && isRegistry(m, o)),
        decorators: s.decorators.filter((d) => d.stmt === stmt),
        registrations: s.calls.filter((c) => c.stmt === stmt && isRegistration(m, c)),
      };
      byStmt.set(stmt, r);
    }
    return r;
  };
  /** what slim leaves out of a statement at the current state: removable decorators,
   *  registration calls, unreached options, value prunes */
  const skipRanges = (m: CorpusModule, stmt: number): [number, number][] => {
    const r: [number, number][] = [];
    const { options, decorators, registrations } = sitesOf(m, stmt);
    for (const d of decorators) if (removable(m, d)) r.push([d.start, d.end]);
    for (const c of registrations) if (!keepDecorators.has(c)) r.push([c.start, c.end]);
    for (const o of options)
      o.entries.forEach((e, i) => {
        if (prunable(m, o, i)) r.push([e.codeStart, e.codeEnd]);
      });
    for (const p of prunesOf(m, stmt)) r.push([p.start, p.end]);
    return r;
  };

  /** option dicts with pruned entries that a lookup with a computed key reads (lookups.ts)
   *  become whole; whether one did */
  const computedLookups = (cl: Closure, computed: ReadonlySet<string>): boolean => {
    let grew = false;
    for (const n of cl.nodes) {
      const k = `${n.mod.repo}:${n.mod.name}:${n.stmt}`;
      if (!computed.has(k) || wholeDicts.has(k)) continue;
      const dicts = sitesOf(n.mod, n.stmt).options.filter((o) => o.kind === 'dict');
      if (!dicts.some((o) => o.entries.some((_, i) => prunable(n.mod, o, i)))) continue;
      wholeDicts.add(k);
      grew = true;
    }
    return grew;
  };

  let closure!: Closure;
  let pruneKey = '';
  for (let outer = 0; ; outer++) {
    reached = new Set(seedKeys);
    for (let round = 0; ; round++) {
      // fixed within a round (reached options and kept decorators change between rounds)
      const skipMemo = new Map<string, [number, number][]>();
      const skip = (m: CorpusModule, stmt: number): [number, number][] => {
        const k = `${m.repo}\0${m.name}\0${stmt}`;
        let r = skipMemo.get(k);
        if (!r) skipMemo.set(k, (r = skipRanges(m, stmt)));
        return r;
      };
      closure = builder.build(mod, className, { skip, installed: opts.installed, roots: opts.roots });
      const grew = growReached(closure, syntax, skip, (m, stmt) => sitesOf(m, stmt).options, reached);
      if (!grew || round >= MAX_ROUNDS) {
        // a removed decorator whose receiver (`MODELS` of `@MODELS.register_module()`) the
        // code that stays still reads is kept: that code may look the class up by name
        let kept = false;
        for (const n of closure.nodes) {
          const sites = sitesOf(n.mod, n.stmt);
          for (const d of sites.decorators) {
            if (!removable(n.mod, d) || !receiverKept(resolver, closure, n.mod, d)) continue;
            keepDecorators.add(d);
            kept = true;
          }
          for (const c of sites.registrations) {
            if (keepDecorators.has(c) || !receiverKept(resolver, closure, n.mod, c)) continue;
            keepDecorators.add(c);
            kept = true;
          }
        }
        if (!kept) break;
      }
    }
    // a clause of an option registry is the registry's to prune (it names the options)
    const vp = valuePrunes(an, closure, skipRanges, { calls: opts.entry ?? [] });
    const next = vp.prunes.filter(
      (p) => !sitesOf(p.mod, p.stmt).options.some((o) => o.entries.some((e) => inEntry(e, p.start, p.end))),
    );
    const key = next.map((p) => `${p.mod.repo}:${p.mod.name}:${p.start}:${p.end}`).join(',');
    const whole = computedLookups(closure, vp.computed);
    if ((key === pruneKey && !whole) || outer >= MAX_OUTER) break;
    prunes = next;
    pruneKey = key;
  }

  // edits and the header, for the statements of the final closure
  const editsByNode = new Map<StmtNode, Edit[]>();
  const src = (m: CorpusModule) => corpus.source(m);
  const removed: SlimRemoval[] = [];
  const unknownDecorators: SlimResult['unknownDecorators'] = [];
  for (const n of closure.nodes) {
    const edits: Edit[] = [];
    const { decorators, registrations } = sitesOf(n.mod, n.stmt);
    // option sites inside a branch no value reaches go with it
    const options = sitesOf(n.mod, n.stmt).options.filter(
      (o) => !o.entries.some((e) => inPrune(n.mod, n.stmt, e.start, e.end)),
    );
    for (const p of prunesOf(n.mod, n.stmt)) {
      edits.push({ start: p.start, end: p.end, text: p.text });
      removed.push({
        kind: 'unreached',
        repo: n.mod.repo,
        path: n.mod.path,
        module: n.mod.name,
        lines: p.lines,
        what: p.what,
      });
    }
    const where = { repo: n.mod.repo, path: n.mod.path, module: n.mod.name };
    for (const d of decorators) {
      if (removable(n.mod, d)) {
        edits.push({ start: d.start, end: d.end, text: '' });
        removed.push({ kind: 'decorator', ...where, lines: [d.line, d.endLine], what: d.text });
      } else if (!keepDecorators.has(d) && decoratorVerdict(resolver, n.mod, d, an.shapes) === 'unknown') {
        unknownDecorators.push({
          key: decoratorKey(n.mod, d),
          text: d.text,
          target: d.target,
          mod: n.mod,
          line: d.line,
        });
      }
    }
    // a registration call: its lines go (a `pass` keeps a block it was alone in)
    for (const c of registrations) {
      if (keepDecorators.has(c) || inPrune(n.mod, n.stmt, c.start, c.end)) continue;
      // inside a pruned option, it goes with the option's edit
      if (options.some((o) => o.entries.some((e, i) => prunable(n.mod, o, i) && inEntry(e, c.start, c.end)))) continue;
      edits.push({
        start: c.start,
        end: c.end,
        text: c.alone
          ? `${c.indent}pass  # nnrag slim: registration call removed (line${c.line === c.endLine ? ` ${c.line}` : `s ${c.line}-${c.endLine}`})\n`
          : '',
      });
      removed.push({ kind: 'registration', ...where, lines: [c.line, c.endLine], what: c.text });
    }
    for (const o of options) optionEdits(src(n.mod), where, o, (i) => prunable(n.mod, o, i), edits, removed);
    if (edits.length) editsByNode.set(n, edits);
  }
  removed.sort((a, b) => a.path.localeCompare(b.path) || a.lines[0] - b.lines[0]);
  const header = [
    ...headerOf(removed),
    ...packagesHeader(closure.packages, new Set(closure.nodes.map((n) => `${n.mod.repo}\0${n.mod.name}`))),
  ];
  return { closure, edits: (n) => editsByNode.get(n), header, removed, unknownDecorators };
}

/** Adds to `reached` the option keys the code that stays in `closure` names: its string
 *  literals outside skipped ranges and option keys, and the names of the definitions it
 *  uses; whether `reached` grew. */
function growReached(
  closure: Closure,
  syntax: (m: CorpusModule) => ModuleSyntax,
  skip: (m: CorpusModule, stmt: number) => [number, number][],
  optionsOf: (m: CorpusModule, stmt: number) => OptionSite[],
  reached: Set<string>,
): boolean {
  let grew = false;
  for (const n of closure.nodes) {
    const s = syntax(n.mod);
    const skipped = skip(n.mod, n.stmt);
    const keys: [number, number][] = [];
    for (const o of optionsOf(n.mod, n.stmt)) for (const e of o.entries) keys.push(...e.keyRanges);
    for (
      let i = firstAtOrAfter(s.strings, n.facts.start);
      i < s.strings.length && s.strings[i].start < n.facts.end;
      i++
    ) {
      const lit = s.strings[i];
      const v = optionKey(lit.value);
      if (reached.has(v) || within(skipped, lit.start) || within(keys, lit.start)) continue;
      reached.add(v);
      grew = true;
    }
    // the names of the definitions the code that stays uses: code may select an option
    // by a class's or function's `__name__` (`norm_layer.__name__.lower()`)
    for (const r of n.facts.refs) {
      if (within(skipped, r.start) || within(keys, r.start)) continue;
      for (const name of [r.name, ...(r.attrs ?? [])]) {
        const v = optionKey(name);
        if (reached.has(v)) continue;
        reached.add(v);
        grew = true;
      }
    }
  }
  return grew;
}

/** The edits and removals of the pruned entries of option site `o` (`pruned(i)`: entry i
 *  is pruned; `src`: the module's source). */
function optionEdits(
  src: string,
  where: { repo: string; path: string; module: string },
  o: OptionSite,
  isPruned: (i: number) => boolean,
  edits: Edit[],
  removed: SlimRemoval[],
): void {
  if (o.kind === 'if' || o.kind === 'if-seq') {
    const pruned = o.entries.filter((_, i) => isPruned(i));
    if (!pruned.length) return;
    const msg = (keys: string) =>
      `nnrag slim: option ${keys} of ${o.subject} was pruned from this module (restore it from ${where.path}, see the header); the faithful module has it`;
    const removedClauses = pruned.filter((e) => e.clause && !e.clause.lead);
    // a leading `if` (or a clause sharing its lines) keeps its test: its body raises
    for (const e of pruned) {
      if (removedClauses.includes(e)) continue;
      const keys = e.keys.map((k) => `'${k}'`).join(', ');
      edits.push({
        start: e.start,
        end: e.end,
        text: `raise ValueError(${JSON.stringify(msg(keys))})  # nnrag slim: pruned lines ${e.startLine}-${e.endLine}`,
      });
    }
    // removed clauses: one marked clause in place of the first names them all
    removedClauses.forEach((e, i) => {
      let text = '';
      if (i === 0) {
        const keys = removedClauses.flatMap((x) => x.keys.map((k) => `'${k}'`)).join(', ');
        const kw = o.kind === 'if' ? 'elif' : 'if';
        const lines = compactRanges(removedClauses.map((x) => [x.startLine, x.endLine]));
        text = `${e.clause!.indent}${kw} ${o.subject} in (${keys}${removedClauses.flatMap((x) => x.keys).length === 1 ? ',' : ''}):  # nnrag slim: pruned lines ${lines}\n${e.clause!.indent}    raise ValueError(${JSON.stringify(msg(keys))})\n`;
      }
      edits.push({ start: e.clause!.start, end: e.clause!.end, text });
    });
    for (const e of pruned)
      removed.push({
        kind: 'branch',
        ...where,
        lines: [e.startLine, e.endLine],
        what: `${o.subject} == ${e.keys.map((k) => `'${k}'`).join(', ')}`,
      });
    return;
  }
  // runs of consecutive pruned dict entries: one edit, a marked comment when whole lines go
  for (let i = 0; i < o.entries.length; ) {
    if (!isPruned(i)) {
      i++;
      continue;
    }
    let j = i;
    while (j + 1 < o.entries.length && isPruned(j + 1)) j++;
    const run = o.entries.slice(i, j + 1);
    const first = run[0];
    const last = run[run.length - 1];
    const keys = run
      .flatMap((e) => (o.kind === 'set' ? [src.slice(e.codeStart, e.codeEnd)] : e.keys.map((k) => `'${k}'`)))
      .join(', ');
    const lines: [number, number] = [first.startLine, last.endLine];
    const whole = run.every((e) => e.indent !== null);
    edits.push({
      start: first.start,
      end: last.end,
      text: whole ? `${first.indent}# nnrag slim: pruned ${keys} (lines ${lines[0]}-${lines[1]})\n` : '',
    });
    removed.push({ kind: 'options', ...where, lines, what: `${o.subject}: ${keys}` });
    i = j + 1;
  }
}

/** The header lines of the removals (sorted by path and line): one line per file and kind
 *  of removal (and option subject). */
function headerOf(removed: readonly SlimRemoval[]): string[] {
  const header: string[] = [];
  if (removed.length) {
    header.push('# Slim profile: removed from the copied statements (the original lines are in the files above):');
    // one line per file and kind of removal (and option subject)
    const groups = new Map<string, { path: string; label: string; lines: [number, number][]; whats: string[] }>();
    for (const r of removed) {
      const plain = r.kind === 'decorator' || r.kind === 'registration' || r.kind === 'unreached';
      const subject = plain ? '' : r.what.split(/ == |: /)[0];
      const k = `${r.path}\0${r.kind}\0${subject}`;
      let g = groups.get(k);
      if (!g)
        groups.set(
          k,
          (g = {
            path: r.path,
            label:
              r.kind === 'decorator'
                ? 'decorators'
                : r.kind === 'registration'
                  ? 'registration calls'
                  : r.kind === 'unreached'
                    ? 'branches no value of the defaults and validated arguments reaches'
                    : r.kind === 'branch'
                      ? `branches of ${subject}`
                      : `options of ${subject}`,
            lines: [],
            whats: [],
          }),
        );
      g.lines.push(r.lines);
      g.whats.push(plain ? r.what.replace(/\s+/g, ' ') : r.what.slice(subject.length).replace(/^( == |: )/, ''));
    }
    for (const g of groups.values()) {
      const what = g.whats.join(', ');
      header.push(
        `#   ${g.path}:${compactRanges(g.lines)} | ${g.label}: ${what.length > 160 ? what.slice(0, 157) + '...' : what}`,
      );
    }
  }
  return header;
}

/** Option values compare case-insensitively and without `_`, `-` and spaces: factories
 *  normalise the names they are given (`name.lower()`, `.replace('_', '')`). */
function optionKey(s: string): string {
  return s.toLowerCase().replace(/[-_\s]/g, '');
}

/** [a, b) lies within an option entry (its key and value, or its whole clause). */
function inEntry(e: OptionEntry, a: number, b: number): boolean {
  return Math.min(e.start, e.clause?.start ?? e.start) <= a && b <= Math.max(e.end, e.clause?.end ?? e.end);
}

/** `3-4,5-6,9` → `3-6,9`: adjacent line ranges merged. */
export function compactRanges(ranges: readonly (readonly [number, number])[]): string {
  const sorted = [...ranges].sort((a, b) => a[0] - b[0]);
  const out: [number, number][] = [];
  for (const [a, b] of sorted) {
    const last = out[out.length - 1];
    if (last && a <= last[1] + 1) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(',');
}

function firstAtOrAfter(strings: { start: number }[], offset: number): number {
  let lo = 0;
  let hi = strings.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (strings[mid].start < offset) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function within(ranges: readonly (readonly [number, number])[], offset: number): boolean {
  return ranges.some(([a, b]) => offset >= a && offset < b);
}

/** An option site selects definitions: an `if` chain with two or more clauses whose
 *  bodies read module-level names; a dict whose values are all names (or conditionals
 *  and `partial`s of names) with two or more of them denoting classes or functions
 *  (corpus definitions, or attributes of extern modules: `nn.ReLU`). */
function registry(resolver: Resolver, mod: CorpusModule, site: OptionSite): boolean {
  const st = mod.facts.statements[site.stmt];
  const refsIn = (a: number, b: number) => st.refs.filter((r) => r.start >= a && r.start < b);
  if (site.kind === 'if' || site.kind === 'if-seq')
    return site.entries.filter((e) => refsIn(e.codeStart, e.codeEnd).length > 0).length >= 2;
  if (!site.entries.every((e) => e.refLike)) return false;
  let defs = 0;
  for (const e of site.entries) {
    const refs = e.denoting.flatMap(([a, b]) => refsIn(a, b));
    if (!refs.length) continue;
    const denotesDef = refs.every((r) => {
      const { targets } = resolver.resolveRef(mod, r);
      return (
        targets.length > 0 &&
        targets.every(
          (t) =>
            t.kind === 'extern' ||
            (t.kind === 'def' && t.stmts.every((i) => DEF_KINDS.has(t.module.facts.statements[i].kind))),
        )
      );
    });
    if (denotesDef) defs++;
  }
  return defs >= 2;
}

/** `@R.f(...)` / `@R.f` whose receiver `R` (a module-level object) the closure copies. */
function receiverKept(
  resolver: Resolver,
  closure: Closure,
  mod: CorpusModule,
  d: { stmt: number; calleeStart: number },
): boolean {
  const ref = mod.facts.statements[d.stmt].refs.find((r) => r.start === d.calleeStart);
  if (!ref?.attrs?.length) return false;
  const { targets, consumed } = resolver.resolveRef(mod, ref);
  if (consumed === ref.attrs.length) return false; // a function reached through modules
  return targets.some((t) => t.kind === 'def' && closure.bindings.has(`def:${slotKey(t.module, t.name)}`));
}
