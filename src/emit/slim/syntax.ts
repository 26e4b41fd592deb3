// What slim emission (docs/ARCHITECTURE.md "Slim emission") reads from one module's
// syntax tree (analysis.ts reads it once per module, off the parse tree the value facts
// share): the string literals (option values a block can reach),
// option registries (dicts of string keys to definitions, `if`/`elif` chains comparing
// one subject with strings) with the byte ranges each option occupies, and the
// decorators of top-level definitions, and the call statements inside top-level compound
// statements (`if …: R.register_module(module=C)`: registration calls). Pure syntax: which registries select definitions
// and which decorators return their argument is decided in registry.ts / decorators.ts
// with the resolver.
import type { Node } from 'web-tree-sitter';
import type { CorpusModule } from '../../resolve/corpus.js';
import { lineIndex, lineStarts } from '../../util/lines.js';

export interface StringLit {
  start: number;
  end: number;
  /** the literal's characters (escapes left as written), lower-cased */
  value: string;
}

/** One option of a registry: a dict entry or an `if`/`elif` clause. */
export interface OptionEntry {
  /** option values (lower-cased) that select it */
  keys: string[];
  /** where the keys are written (their strings are not "reached" by being there) */
  keyRanges: [number, number][];
  /** what slim removes (dict entry, with its line when it stands alone) or replaces (a
   *  clause's body) */
  start: number;
  end: number;
  /** the code the option selects (entry value / clause body): references in it */
  codeStart: number;
  codeEnd: number;
  startLine: number;
  endLine: number;
  /** indentation of the entry's line when it stands alone on its lines, else null */
  indent: string | null;
  /** ref-like value (dict entries: a name, attribute, conditional or `partial` of them) */
  refLike: boolean;
  /** parts of the value that denote what the entry selects (a conditional's branches,
   *  not its test) */
  denoting: [number, number][];
  /** `if` options: the compared expression */
  subject?: string;
  /** `if` options: the whole lines of the clause (`elif …:` and its body, or a plain
   *  `if`), when nothing else shares them; `lead` for the leading `if` of an elif chain,
   *  which cannot be removed (its body is replaced) */
  clause?: { start: number; end: number; indent: string; lead: boolean } | null;
}

export interface OptionSite {
  kind: 'dict' | 'set' | 'if' | 'if-seq';
  /** index of the top-level statement that holds it */
  stmt: number;
  /** the compared expression (`attn_type`) or the dict's bound name when known */
  subject: string;
  entries: OptionEntry[];
}

/** Whole lines of a statement slim may remove, holding a call (or a decorator expression)
 *  whose callee decorators.ts judges. */
interface RemovableCall {
  stmt: number;
  /** the whole lines removed in slim */
  start: number;
  end: number;
  line: number;
  endLine: number;
  /** the text as written */
  text: string;
  /** the call's callee span (`MODELS.register_module` of `MODELS.register_module()`) */
  calleeStart: number;
  calleeEnd: number;
}

export interface DecoratorSite extends RemovableCall {
  /** where the `@` expression starts */
  exprStart: number;
  /** the call's arguments: positional count and keyword names, or null (no call) */
  call: { positional: number; keywords: string[]; star: boolean } | null;
  /** what it decorates */
  target: 'class' | 'function';
}

/** A call statement on lines of its own in a block of a top-level compound statement (not
 *  in a function or class): `R.register_module(module=C, name='c')`. decorators.ts says
 *  whether it is a registration call (it returns the object it registers; its value is
 *  dropped). */
export interface CallStatementSite extends RemovableCall {
  call: { positional: number; keywords: string[]; star: boolean };
  /** the only statement of its block: removing it needs a `pass` in its place */
  alone: boolean;
  indent: string;
}

export interface ModuleSyntax {
  strings: StringLit[];
  options: OptionSite[];
  decorators: DecoratorSite[];
  calls: CallStatementSite[];
}

/** Where a module's nodes are: its source, the top-level statement holding an offset,
 *  where the line of an offset starts, its 1-based line. */
interface Where {
  src: string;
  stmtAt: (offset: number) => number;
  lineStart: (i: number) => number;
  lineOf: (i: number) => number;
}

/** The module's slim facts, read off its parse tree (`root`). */
export function moduleSyntax(mod: CorpusModule, src: string, root: Node): ModuleSyntax {
  const stmts = mod.facts.statements;
  const stmtAt = (offset: number): number => {
    let lo = 0;
    let hi = stmts.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (stmts[mid].end <= offset) lo = mid + 1;
      else if (stmts[mid].start > offset) hi = mid - 1;
      else return mid;
    }
    return -1;
  };
  const starts = lineStarts(src);
  const at: Where = {
    src,
    stmtAt,
    lineStart: (i: number) => src.lastIndexOf('\n', i - 1) + 1,
    lineOf: (i: number) => lineIndex(starts, i) + 1,
  };
  const options: OptionSite[] = [];
  dictOptions(root, at, options);
  setOptions(root, at, options);
  ifOptions(root, at, options);
  return { strings: stringLits(root), options, decorators: decoratorSites(root, at), calls: callStatements(root, at) };
}

/** The string literals of the module, lowercased, in order. */
function stringLits(root: Node): StringLit[] {
  const strings: StringLit[] = [];
  for (const s of root.descendantsOfType('string')) {
    if (!s) continue;
    const v = stringValue(s);
    if (v !== null) strings.push({ start: s.startIndex, end: s.endIndex, value: v.toLowerCase() });
  }
  strings.sort((a, b) => a.start - b.start);
  return strings;
}

/** Option registries: dicts of string keys. */
function dictOptions(root: Node, at: Where, options: OptionSite[]): void {
  // dict registries: `{'a': A, 'b': B}` and `dict(a=A, b=B)`
  for (const d of root.descendantsOfType(['dictionary', 'call'])) {
    if (!d) continue;
    let pairs: { key: string; keyStart: number; keyEnd: number; node: Node; value: Node }[] | null = [];
    if (d.type === 'dictionary') {
      for (const c of d.namedChildren) {
        if (!c || c.type === 'comment' || c.type === 'dictionary_splat') continue;
        const k = c.type === 'pair' ? c.childForFieldName('key') : null;
        const v = c.type === 'pair' ? c.childForFieldName('value') : null;
        const kv = k?.type === 'string' ? stringValue(k) : null;
        if (!k || !v || kv === null) {
          pairs = null;
          break;
        }
        pairs.push({ key: kv, keyStart: k.startIndex, keyEnd: k.endIndex, node: c, value: v });
      }
    } else {
      const fn = d.childForFieldName('function');
      const args = d.childForFieldName('arguments');
      if (fn?.type !== 'identifier' || fn.text !== 'dict' || args?.type !== 'argument_list') continue;
      for (const c of args.namedChildren) {
        if (!c || c.type === 'comment' || c.type === 'dictionary_splat') continue;
        const k = c.type === 'keyword_argument' ? c.childForFieldName('name') : null;
        const v = c.type === 'keyword_argument' ? c.childForFieldName('value') : null;
        if (!k || !v) {
          pairs = null;
          break;
        }
        pairs.push({ key: k.text, keyStart: k.startIndex, keyEnd: k.endIndex, node: c, value: v });
      }
    }
    if (!pairs || pairs.length < 2) continue;
    const stmt = at.stmtAt(d.startIndex);
    if (stmt < 0) continue;
    const entries: OptionEntry[] = pairs.map((p) => {
      const { start, end, indent } = entrySpan(at.src, p.node, at.lineStart);
      const denoting: [number, number][] = [];
      const refLike = refLikeValue(p.value, denoting);
      return {
        keys: [p.key.toLowerCase()],
        keyRanges: [[p.keyStart, p.keyEnd]],
        start,
        end,
        codeStart: p.value.startIndex,
        codeEnd: p.value.endIndex,
        startLine: at.lineOf(p.node.startIndex),
        endLine: at.lineOf(p.node.endIndex),
        indent,
        refLike,
        denoting,
      };
    });
    options.push({ kind: 'dict', stmt, subject: boundName(d) ?? 'dict', entries });
  }
}

/** Option registries: sets of definitions. */
function setOptions(root: Node, at: Where, options: OptionSite[]): void {
  // sets of definitions (`{BatchNormAct2d, GroupNormAct}`): membership tests of classes;
  // an element whose definition nothing else reaches cannot match anything the module
  // makes, so it is an option keyed by its name
  for (const d of root.descendantsOfType('set')) {
    if (!d) continue;
    const els = d.namedChildren.filter((c): c is Node => !!c && c.type !== 'comment');
    if (els.length < 2 || !els.every((e) => e.type === 'identifier' || e.type === 'attribute')) continue;
    const stmt = at.stmtAt(d.startIndex);
    if (stmt < 0) continue;
    const entries: OptionEntry[] = els.map((e) => {
      const { start, end, indent } = entrySpan(at.src, e, at.lineStart);
      return {
        keys: [(e.text.split('.').pop() ?? e.text).toLowerCase()],
        keyRanges: [[e.startIndex, e.endIndex]],
        start,
        end,
        codeStart: e.startIndex,
        codeEnd: e.endIndex,
        startLine: at.lineOf(e.startIndex),
        endLine: at.lineOf(e.endIndex),
        indent,
        refLike: true,
        denoting: [[e.startIndex, e.endIndex]],
      };
    });
    options.push({ kind: 'set', stmt, subject: boundName(d) ?? 'set', entries });
  }
}

/** Option registries: if/elif chains and runs of `if` on one subject compared with strings. */
function ifOptions(root: Node, at: Where, options: OptionSite[]): void {
  // if/elif chains comparing one subject with strings, and runs of consecutive plain
  // `if` statements doing so (`if key in ('avg', 'avgpool'): return …`)
  const clauseEntry = (cond: Node, body: Node, clause: Node, lead: boolean): OptionEntry | null => {
    const cmp = stringCompare(cond);
    if (!cmp) return null;
    const indent = at.src.slice(at.lineStart(body.startIndex), body.startIndex);
    const ls = at.lineStart(clause.startIndex);
    const hdrIndent = at.src.slice(ls, clause.startIndex);
    const nl = at.src.indexOf('\n', body.endIndex);
    const rest = at.src.slice(body.endIndex, nl === -1 ? at.src.length : nl);
    const whole = /^\s*$/.test(hdrIndent) && /^\s*(#.*)?$/.test(rest);
    return {
      keys: cmp.keys,
      keyRanges: cmp.keyRanges,
      start: body.startIndex,
      end: body.endIndex,
      codeStart: lead || !whole ? body.startIndex : clause.startIndex,
      codeEnd: body.endIndex,
      startLine: at.lineOf(clause.startIndex),
      endLine: at.lineOf(body.endIndex),
      indent: /^\s*$/.test(indent) ? indent : null,
      refLike: true,
      denoting: [[body.startIndex, body.endIndex]],
      subject: cmp.subject,
      clause: whole ? { start: ls, end: nl === -1 ? at.src.length : nl + 1, indent: hdrIndent, lead } : null,
    };
  };
  const addIfSite = (entries: OptionEntry[], pos: number, seq: boolean) => {
    // one subject for the whole site; at least two options
    const subject = entries[0]?.subject;
    const same = entries.filter((e) => e.subject === subject);
    if (same.length < 2 || subject === undefined) return;
    const stmt = at.stmtAt(pos);
    if (stmt >= 0) options.push({ kind: seq ? 'if-seq' : 'if', stmt, subject, entries: same });
  };
  for (const ifs of root.descendantsOfType('if_statement')) {
    if (!ifs) continue;
    const c0 = ifs.childForFieldName('condition');
    const b0 = ifs.childForFieldName('consequence');
    const alts = ifs.childrenForFieldName('alternative');
    if (!c0 || !b0) continue;
    if (alts.some((a) => a?.type === 'elif_clause')) {
      const entries: OptionEntry[] = [];
      const e0 = clauseEntry(c0, b0, ifs, true);
      if (e0) entries.push(e0);
      for (const alt of alts) {
        if (alt?.type !== 'elif_clause') continue;
        const c = alt.childForFieldName('condition');
        const b = alt.childForFieldName('consequence');
        const e = c && b ? clauseEntry(c, b, alt, false) : null;
        if (e) entries.push(e);
      }
      addIfSite(entries, ifs.startIndex, false);
      continue;
    }
    // the first of a run of plain `if` statements (no elif/else) on one subject
    if (alts.length) continue;
    const prev = prevStatement(ifs);
    if (
      prev &&
      plainIf(prev) &&
      stringCompare(prev.childForFieldName('condition')!)?.subject === stringCompare(c0)?.subject
    )
      continue;
    const entries: OptionEntry[] = [];
    for (let n: Node | null = ifs; n && plainIf(n); n = nextStatement(n)) {
      const e = clauseEntry(n.childForFieldName('condition')!, n.childForFieldName('consequence')!, n, false);
      if (!e || (entries.length && e.subject !== entries[0].subject)) break;
      entries.push(e);
    }
    addIfSite(entries, ifs.startIndex, true);
  }
}

/** Decorators of top-level definitions that are whole lines. */
function decoratorSites(root: Node, at: Where): DecoratorSite[] {
  const decorators: DecoratorSite[] = [];
  for (const c of root.namedChildren) {
    if (c?.type !== 'decorated_definition') continue;
    const def = c.childForFieldName('definition');
    const stmt = at.stmtAt(c.startIndex);
    if (!def || stmt < 0) continue;
    for (const dec of c.namedChildren) {
      if (dec?.type !== 'decorator') continue;
      const expr = dec.namedChildren.find((x) => x && x.type !== 'comment');
      if (!expr) continue;
      let callee = expr;
      let call: DecoratorSite['call'] = null;
      if (expr.type === 'call') {
        callee = expr.childForFieldName('function') ?? expr;
        call = callArgs(expr);
      }
      // whole lines only: a decorator sharing its line with other code stays
      const ls = at.lineStart(dec.startIndex);
      const nl = at.src.indexOf('\n', dec.endIndex);
      const rest = at.src.slice(dec.endIndex, nl === -1 ? at.src.length : nl);
      if (!/^\s*$/.test(at.src.slice(ls, dec.startIndex)) || !/^\s*(#.*)?$/.test(rest)) continue;
      decorators.push({
        stmt,
        start: ls,
        end: nl === -1 ? at.src.length : nl + 1,
        line: at.lineOf(dec.startIndex),
        endLine: at.lineOf(dec.endIndex),
        text: dec.text,
        exprStart: expr.startIndex,
        calleeStart: callee.startIndex,
        calleeEnd: callee.endIndex,
        call,
        target: def.type === 'class_definition' ? 'class' : 'function',
      });
    }
  }
  return decorators;
}

/** Call statements (whole lines) in the blocks of top-level compound statements. */
function callStatements(root: Node, at: Where): CallStatementSite[] {
  // call statements in the blocks of top-level compound statements
  const calls: CallStatementSite[] = [];
  const visitBlock = (block: Node) => {
    const body = block.namedChildren.filter((x): x is Node => !!x && x.type !== 'comment');
    for (const c of body) {
      if (c.type === 'expression_statement') {
        const expr = c.namedChildren.find((x) => x && x.type !== 'comment');
        if (expr?.type !== 'call' || c.namedChildren.filter((x) => x && x.type !== 'comment').length !== 1) continue;
        const callee = expr.childForFieldName('function');
        if (!callee || (callee.type !== 'attribute' && callee.type !== 'identifier')) continue;
        const ls = at.lineStart(c.startIndex);
        const nl = at.src.indexOf('\n', c.endIndex);
        const rest = at.src.slice(c.endIndex, nl === -1 ? at.src.length : nl);
        const stmt = at.stmtAt(c.startIndex);
        if (stmt < 0 || !/^\s*$/.test(at.src.slice(ls, c.startIndex)) || !/^\s*(#.*)?$/.test(rest)) continue;
        calls.push({
          stmt,
          start: ls,
          end: nl === -1 ? at.src.length : nl + 1,
          line: at.lineOf(c.startIndex),
          endLine: at.lineOf(c.endIndex),
          text: c.text,
          calleeStart: callee.startIndex,
          calleeEnd: callee.endIndex,
          call: callArgs(expr),
          alone: body.length === 1,
          indent: at.src.slice(ls, c.startIndex),
        });
      } else visitCompound(c);
    }
  };
  const visitCompound = (n: Node) => {
    if (n.type === 'function_definition' || n.type === 'class_definition' || n.type === 'decorated_definition') return;
    for (const c of n.namedChildren) {
      if (!c) continue;
      if (c.type === 'block') visitBlock(c);
      else if (/_clause$/.test(c.type)) visitCompound(c);
    }
  };
  for (const c of root.namedChildren) if (c && /^(if|try|for|while|with)_statement$/.test(c.type)) visitCompound(c);
  return calls;
}

/** A call's arguments: how many positional, which keywords, any `*`/`**` splat. */
function callArgs(expr: Node): { positional: number; keywords: string[]; star: boolean } {
  const call = { positional: 0, keywords: [] as string[], star: false };
  for (const a of expr.childForFieldName('arguments')?.namedChildren ?? []) {
    if (!a || a.type === 'comment') continue;
    if (a.type === 'keyword_argument') call.keywords.push(a.childForFieldName('name')?.text ?? '');
    else if (a.type === 'list_splat' || a.type === 'dictionary_splat') call.star = true;
    else call.positional++;
  }
  return call;
}

/** The characters of a plain string literal (no interpolation), else null. */
function stringValue(s: Node): string | null {
  let out = '';
  for (const c of s.namedChildren) {
    if (!c) continue;
    if (c.type === 'interpolation') return null;
    if (c.type === 'string_content' || c.type === 'escape_sequence') out += c.text;
  }
  return out;
}

/** `x == 'a'`, `'a' == x`, `x in ('a', 'b')` (tuple, list or set of strings): the subject
 *  text and the strings, else null. */
function stringCompare(cond: Node): { subject: string; keys: string[]; keyRanges: [number, number][] } | null {
  if (cond.type === 'parenthesized_expression') {
    const inner = cond.namedChildren.find((x) => x && x.type !== 'comment');
    return inner ? stringCompare(inner) : null;
  }
  if (cond.type === 'boolean_operator') {
    // `x == 'a' or x == 'b'`
    const op = cond.children.find((x) => x && !x.isNamed)?.type;
    const l = cond.childForFieldName('left');
    const r = cond.childForFieldName('right');
    const a = op === 'or' && l ? stringCompare(l) : null;
    const b = op === 'or' && r ? stringCompare(r) : null;
    if (!a || !b || a.subject !== b.subject) return null;
    return { subject: a.subject, keys: [...a.keys, ...b.keys], keyRanges: [...a.keyRanges, ...b.keyRanges] };
  }
  if (cond.type !== 'comparison_operator') return null;
  const ops = cond.children.filter((x) => x && !x.isNamed).map((x) => x!.type);
  const operands = cond.namedChildren.filter((x): x is Node => !!x && x.type !== 'comment');
  if (operands.length !== 2 || ops.length !== 1) return null;
  const [a, b] = operands;
  if (ops[0] === '==') {
    const [subj, lit] = a.type === 'string' ? [b, a] : [a, b];
    const v = lit.type === 'string' ? stringValue(lit) : null;
    if (v === null || subj.type === 'string') return null;
    return { subject: subj.text, keys: [v.toLowerCase()], keyRanges: [[lit.startIndex, lit.endIndex]] };
  }
  if (ops[0] === 'in' && (b.type === 'tuple' || b.type === 'list' || b.type === 'set')) {
    const keys: string[] = [];
    const keyRanges: [number, number][] = [];
    for (const e of b.namedChildren) {
      if (!e || e.type === 'comment') continue;
      const v = e.type === 'string' ? stringValue(e) : null;
      if (v === null) return null;
      keys.push(v.toLowerCase());
      keyRanges.push([e.startIndex, e.endIndex]);
    }
    return keys.length && a.type !== 'string' ? { subject: a.text, keys, keyRanges } : null;
  }
  return null;
}

/** A value that names what it selects: a name, an attribute chain, `a if c else b` of
 *  such, or `partial(X, …)`; the spans that denote it go to `denoting`. */
function refLikeValue(v: Node, denoting: [number, number][]): boolean {
  if (v.type === 'identifier' || v.type === 'attribute') {
    denoting.push([v.startIndex, v.endIndex]);
    return true;
  }
  if (v.type === 'conditional_expression') {
    const parts = v.namedChildren.filter((x): x is Node => !!x && x.type !== 'comment');
    // `body if test else orelse`: the test selects, it is not selected
    return parts.length === 3 && refLikeValue(parts[0], denoting) && refLikeValue(parts[2], denoting);
  }
  if (v.type === 'call') {
    const fn = v.childForFieldName('function');
    const first = v.childForFieldName('arguments')?.namedChildren.find((x) => x && x.type !== 'comment');
    if (fn && /(^|\.)partial$/.test(fn.text) && first && (first.type === 'identifier' || first.type === 'attribute')) {
      denoting.push([first.startIndex, first.endIndex]);
      return true;
    }
  }
  return false;
}

/** The span an entry occupies: with its trailing comma, and with its whole line(s) when
 *  nothing else is on them; `indent` is then the line's indentation. */
function entrySpan(
  src: string,
  node: Node,
  lineStart: (i: number) => number,
): { start: number; end: number; indent: string | null } {
  let end = node.endIndex;
  const m = /^\s*,/.exec(src.slice(end, end + 200));
  if (m) end += m[0].length;
  const ls = lineStart(node.startIndex);
  const before = src.slice(ls, node.startIndex);
  const nl = src.indexOf('\n', end);
  const rest = src.slice(end, nl === -1 ? src.length : nl);
  if (/^\s*$/.test(before) && /^\s*(#.*)?$/.test(rest))
    return { start: ls, end: nl === -1 ? src.length : nl + 1, indent: before };
  const sp = /^ */.exec(src.slice(end))![0].length;
  return { start: node.startIndex, end: end + sp, indent: null };
}

/** `NAME = dict(...)` / `NAME = {...}`: NAME. */
function boundName(d: Node): string | null {
  const p = d.parent;
  if (p?.type === 'assignment' && p.childForFieldName('right')?.startIndex === d.startIndex) {
    const left = p.childForFieldName('left');
    if (left?.type === 'identifier') return left.text;
  }
  return null;
}

function plainIf(n: Node): boolean {
  return (
    n.type === 'if_statement' &&
    !n.childrenForFieldName('alternative').length &&
    !!n.childForFieldName('condition') &&
    !!n.childForFieldName('consequence')
  );
}

function prevStatement(n: Node): Node | null {
  let p = n.previousNamedSibling;
  while (p && p.type === 'comment') p = p.previousNamedSibling;
  return p;
}

function nextStatement(n: Node): Node | null {
  let p = n.nextNamedSibling;
  while (p && p.type === 'comment') p = p.nextNamedSibling;
  return p;
}
