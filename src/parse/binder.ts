// The binder: one walk over a file's syntax tree (syntax.ts's plain copy of
// tree-sitter's named nodes) that collects every binding and every name access per
// scope, then resolves the accesses after the walk (the shape of LibCST's scope
// provider). The result is the file's FileFacts: per top-level
// statement, the module-scope names it binds and the module-scope names it reads,
// split into eager and lazy reads (docs/ARCHITECTURE.md "Parsing and binding").
//
// Python rules implemented here (Python Language Reference §4.2 "Naming and binding"):
// - a name is local to a block if it is bound anywhere in that block (assignment,
//   augmented/annotated assignment with a value, `for`/`with`/`except` targets,
//   import, def, class, `del`, parameters, match captures, walrus);
// - `global x` makes x refer to the module scope (a binding of x in a function then
//   happens when the function is called; in a class body, when the class statement
//   runs), `nonlocal x` to the nearest enclosing function scope;
// - class scopes are not visible from functions, lambdas or comprehensions nested in
//   them; a class body read of a name the class binds, made before the binding has
//   run (in evaluation order: `x = x`, `x += 1`), reads the globals (LOAD_NAME); a
//   class namespace starts with `__module__` and `__qualname__`;
// - a comprehension is its own scope, except that its first iterable is evaluated in
//   the enclosing scope (§6.2.4); a walrus target inside a comprehension binds in the
//   nearest enclosing non-comprehension scope (PEP 572);
// - default values, decorators, base classes and annotations are evaluated in the
//   enclosing scope when the `def`/`class` statement runs; function bodies run later
//   (lazy reads). With `from __future__ import annotations` (PEP 563) annotations are
//   not evaluated (lazy); string annotations are soft references (but not the strings
//   of `Literal[...]`, PEP 586, or `Annotated[T, ...]` metadata, PEP 593).
// Not implemented: PEP 695 (`type X = ...`, type parameters), `# type:` comments.
import type { Node as TsNode } from 'web-tree-sitter';
import { parsePython, type Tree } from './parser.js';
import { syntaxTree, type SyntaxNode as Node } from './syntax.js';
import { paramsOf } from './params.js';
import {
  FACTS_VERSION,
  type BaseExpr,
  type ClassFacts,
  type DynamicUse,
  type FileFacts,
  type Guard,
  type ImportEdge,
  type NestedImport,
  type Param,
  type Ref,
  type StatementFacts,
  type SyntaxIssue,
} from './types.js';

type ScopeKind = 'module' | 'class' | 'function' | 'lambda' | 'comprehension';

/** Names a read in scope `s` would find bound before the module scope: bindings of `s`
 *  and of the enclosing function-like scopes (class scopes are not visible from nested
 *  blocks, §4.2.2), sorted. */
function localNames(s: Scope): string[] {
  const out = new Set<string>();
  for (let p: Scope | null = s; p && p.kind !== 'module'; p = p.parent) {
    if (p.kind === 'class' && p !== s) continue;
    for (const n of p.bindings.keys()) if (!p.globals.has(n) && !p.nonlocals.has(n)) out.add(n);
  }
  return [...out].sort();
}

interface Scope {
  kind: ScopeKind;
  parent: Scope | null;
  /** name → walk order (Binder.seq) of its first binding in this scope */
  bindings: Map<string, number>;
  globals: Set<string>;
  /** identifier spans of `global` declarations and of the targets they make module
   *  bindings (`global x` … `x = 1` in a function): bindSpans when the scope binds x */
  globalSpans: { name: string; start: number; end: number }[];
  nonlocals: Set<string>;
  accesses: Access[];
  /** top-level statement the scope lives in */
  stmt: number;
}

interface Access {
  /** the reference as FileFacts records it when the read is global (keys in the order
   *  they are written: the facts' JSON is compared byte for byte) */
  ref: Ref;
  stmt: number;
  /** walk order: the walk visits reads and bindings in evaluation order (an
   *  assignment's value before its targets), so `seq` orders class-body reads
   *  against class-body bindings; source offsets do not (`x = x`) */
  seq: number;
}

/** Calls that make static name resolution impossible (reported, not guessed). A Map,
 *  not an object literal: a Python call of `constructor(...)` or `toString(...)` must not
 *  find Object.prototype's members. */
const DYNAMIC_CALLS = new Map<string, DynamicUse['kind']>([
  ['globals', 'globals'],
  ['locals', 'locals'],
  ['vars', 'vars'],
  ['exec', 'exec'],
  ['eval', 'eval'],
  ['__import__', '__import__'],
  // `from importlib import import_module` then `import_module(name)`
  ['import_module', 'import_module'],
]);

class Binder {
  private readonly src: string;
  private readonly futureAnnotations: boolean;
  private readonly scopes: Scope[] = [];
  private readonly module: Scope;
  private scope: Scope;
  /** inside a function/lambda body: reads are evaluated at call time */
  private lazy = false;
  /** inside an annotation that PEP 563 makes lazy */
  private stmt = 0;
  private readonly statements: StatementFacts[] = [];
  private readonly classes: ClassFacts[] = [];
  private readonly dynamic: DynamicUse[] = [];
  /** depth of def/class nesting (0 = module level, including if/try/with blocks) */
  private defDepth = 0;
  /** depth of `try` bodies (in this scope run) whose handlers catch ImportError */
  private importGuard = 0;
  /** depth of `if TYPE_CHECKING:` bodies being visited */
  private typeChecking = 0;
  private all: string[] | null = null;
  private allBroken = false;
  /** counter giving reads and bindings their evaluation order */
  private seq = 0;

  constructor(src: string, futureAnnotations: boolean) {
    this.src = src;
    this.futureAnnotations = futureAnnotations;
    this.module = this.newScope('module', null);
    this.scope = this.module;
  }

  private newScope(kind: ScopeKind, parent: Scope | null): Scope {
    const s: Scope = {
      kind,
      parent,
      bindings: new Map(),
      globals: new Set(),
      globalSpans: [],
      nonlocals: new Set(),
      accesses: [],
      stmt: this.stmt,
    };
    this.scopes.push(s);
    return s;
  }

  // ---------------------------------------------------------------- entry

  run(root: Node): Omit<FileFacts, 'version' | 'lines' | 'errors' | 'futureAnnotations'> {
    for (const child of root.namedChildren) {
      if (!child) continue;
      if (child.type === 'comment') continue;
      this.stmt = this.statements.length;
      const st: StatementFacts = {
        kind: child.type,
        start: child.startIndex,
        end: child.endIndex,
        startLine: child.startPosition.row + 1,
        endLine: child.endPosition.row + 1,
        binds: [],
        bindSpans: [],
        refs: [],
        imports: [],
        guard: guardOf(child, this.src),
      };
      this.statements.push(st);
      this.visitStatement(child);
    }
    this.resolve();
    return {
      all: this.allBroken ? null : this.all,
      statements: this.statements,
      classes: this.classes,
      dynamic: this.dynamic,
    };
  }

  /** After the walk: attach module bindings and global reads to their statements. */
  private resolve(): void {
    const binds = this.statements.map(() => new Set<string>());
    const globalBinds = this.statements.map(() => new Set<string>());
    for (const s of this.scopes) {
      if (s.kind === 'module') continue; // recorded per statement in moduleBinds
      // `global x` plus a binding of x in a function (re)binds x at module scope, but
      // only when the function runs; a class body (outside functions) runs with its
      // class statement, so there it is a plain binding
      let inFunction = false;
      for (let p: Scope | null = s; p && !inFunction; p = p.parent)
        inFunction = p.kind === 'function' || p.kind === 'lambda';
      for (const g of s.globals) if (s.bindings.has(g)) (inFunction ? globalBinds : binds)[s.stmt].add(g);
      // renaming such a module binding must rename the declaration and the targets too
      for (const sp of s.globalSpans) if (s.bindings.has(sp.name)) this.statements[s.stmt].bindSpans.push(sp);
    }
    for (const [stmt, names] of this.moduleBinds) for (const n of names) binds[stmt].add(n);
    this.statements.forEach((st, i) => {
      st.bindSpans.sort((x, y) => x.start - y.start);
      for (const g of globalBinds[i]) {
        if (binds[i].has(g)) continue;
        binds[i].add(g);
        (st.globalBinds ??= []).push(g);
      }
      st.binds = [...binds[i]];
    });

    for (const s of this.scopes) {
      // the scope's local names, computed once (the walk is over: its bindings are final)
      let locals: string[] | null = null;
      for (const a of s.accesses) {
        if (!this.isGlobalRead(a, s)) continue;
        const ref = a.ref;
        if (ref.attrs) {
          locals ??= localNames(s);
          if (locals.length) ref.shadows = locals.slice();
        }
        this.statements[a.stmt].refs.push(ref);
      }
    }
    for (const st of this.statements) st.refs.sort((x, y) => x.start - y.start);
  }

  /** Does the access in scope `s` read a module-scope (or builtin) name? (LEGB) */
  private isGlobalRead(a: Access, s: Scope): boolean {
    const name = a.ref.name;
    if (s.kind === 'module') return true;
    if (s.globals.has(name)) return true;
    // a class namespace starts with __module__ and __qualname__ (datamodel §3.3.3.6)
    if (s.kind === 'class' && (name === '__module__' || name === '__qualname__')) return false;
    if (!s.nonlocals.has(name) && s.bindings.has(name)) {
      // class bodies use LOAD_NAME for names they bind: a read before the class has
      // bound the name looks in the globals (then builtins), not in enclosing functions
      // (`x = x`, `x += 1` in a class body read the global x)
      if (s.kind === 'class' && (s.bindings.get(name) as number) > a.seq) return true;
      return false;
    }
    // enclosing scopes, skipping class scopes (they are not visible from nested blocks)
    for (let p = s.parent; p; p = p.parent) {
      if (p.kind === 'module') return true;
      if (p.kind === 'class') continue;
      if (p.globals.has(name)) return true;
      if (p.bindings.has(name) && !p.nonlocals.has(name)) return false;
    }
    return true;
  }

  // ---------------------------------------------------------------- bindings

  /** module statement index → names bound at module scope */
  private readonly moduleBinds = new Map<number, Set<string>>();

  /** Bind `name` in the current scope; `at` is the offset of the binding identifier,
   *  or null when the binding has no identifier of that name (imports). */
  private bind(name: string, at: number | null): void {
    const s = this.scope;
    if (s.kind === 'module' || s.globals.has(name)) {
      if (s.kind === 'module') {
        let set = this.moduleBinds.get(this.stmt);
        if (!set) this.moduleBinds.set(this.stmt, (set = new Set()));
        set.add(name);
        if (at !== null && this.src.startsWith(name, at))
          this.statements[this.stmt].bindSpans.push({ name, start: at, end: at + name.length });
      } else if (at !== null && this.src.startsWith(name, at))
        s.globalSpans.push({ name, start: at, end: at + name.length });
    }
    if (!s.bindings.has(name)) s.bindings.set(name, this.seq++);
  }

  /** PEP 572: an assignment expression binds in the nearest non-comprehension scope. */
  private bindWalrus(name: string, at: number): void {
    const saved = this.scope;
    let s = this.scope;
    while (s.kind === 'comprehension' && s.parent) s = s.parent;
    this.scope = s;
    this.bind(name, at);
    this.scope = saved;
  }

  /** Bind the names of an assignment/for/with target; attribute and subscript targets
   *  are reads of their object. */
  private bindTarget(n: Node): void {
    switch (n.type) {
      case 'identifier':
      case 'keyword_identifier':
        this.bind(n.text, n.startIndex);
        return;
      case 'pattern_list':
      case 'tuple_pattern':
      case 'list_pattern':
      case 'tuple':
      case 'list':
      case 'expression_list':
      case 'parenthesized_expression':
      case 'list_splat_pattern':
      case 'list_splat':
      case 'as_pattern_target':
        for (const c of n.namedChildren) if (c && c.type !== 'comment') this.bindTarget(c);
        return;
      default:
        this.visitExpr(n);
    }
  }

  // ---------------------------------------------------------------- reads

  private access(n: Node, attrs?: string[], attrEnds?: number[], soft = false): void {
    const ref: Ref = { name: n.text, start: n.startIndex, end: n.endIndex, eager: !this.lazy };
    if (attrs?.length) {
      ref.attrs = attrs;
      ref.attrEnds = attrEnds;
    }
    if (soft) ref.soft = true;
    this.scope.accesses.push({ ref, stmt: this.stmt, seq: this.seq++ });
  }

  // ---------------------------------------------------------------- statements

  private visitBlock(n: Node | null): void {
    if (!n) return;
    for (const c of n.namedChildren) if (c) this.visitStatement(c);
  }

  private visitStatement(n: Node): void {
    switch (n.type) {
      case 'comment':
      case 'pass_statement':
      case 'break_statement':
      case 'continue_statement':
        return;
      case 'import_statement':
      case 'import_from_statement':
      case 'future_import_statement':
        this.visitImport(n);
        return;
      case 'function_definition':
        this.visitFunction(n, []);
        return;
      case 'class_definition':
        this.visitClass(n, []);
        return;
      case 'decorated_definition': {
        const decorators: Node[] = [];
        for (const c of n.namedChildren) if (c && c.type === 'decorator') decorators.push(c);
        for (const d of decorators) this.visitExpr(d.namedChildren[0]!);
        const def = n.childForFieldName('definition');
        if (def?.type === 'function_definition') this.visitFunction(def, decorators);
        else if (def?.type === 'class_definition') this.visitClass(def, decorators);
        return;
      }
      case 'expression_statement':
        for (const c of n.namedChildren) if (c) this.visitExprStatementPart(c);
        return;
      case 'global_statement':
        for (const c of n.namedChildren) {
          if (c?.type !== 'identifier') continue;
          this.scope.globals.add(c.text);
          this.scope.globalSpans.push({ name: c.text, start: c.startIndex, end: c.endIndex });
        }
        return;
      case 'nonlocal_statement':
        for (const c of n.namedChildren) if (c?.type === 'identifier') this.scope.nonlocals.add(c.text);
        return;
      case 'delete_statement':
        for (const c of n.namedChildren) if (c) this.visitDelete(c);
        return;
      case 'for_statement': {
        this.visitExpr(n.childForFieldName('right'));
        const left = n.childForFieldName('left');
        if (left) this.bindTarget(left);
        this.visitBlock(n.childForFieldName('body'));
        this.visitBlock(n.childForFieldName('alternative'));
        return;
      }
      case 'with_statement':
        for (const c of n.namedChildren) {
          if (!c) continue;
          if (c.type === 'with_clause') {
            for (const item of c.namedChildren) if (item?.type === 'with_item') this.visitWithItem(item);
          } else if (c.type === 'block') this.visitBlock(c);
        }
        return;
      case 'try_statement': {
        // imports in the body of a `try` whose handlers catch ImportError are guarded:
        // their failure is part of what the program means (it runs the handler)
        const guards = n.namedChildren.some(
          (c) => !!c && (c.type === 'except_clause' || c.type === 'except_group_clause') && catchesImportError(c),
        );
        for (const c of n.namedChildren) {
          if (!c) continue;
          if (c.type === 'block') {
            if (guards) this.importGuard++;
            this.visitBlock(c);
            if (guards) this.importGuard--;
          } else if (c.type === 'except_clause' || c.type === 'except_group_clause') this.visitExcept(c);
          else if (c.type === 'else_clause' || c.type === 'finally_clause')
            this.visitBlock(c.childForFieldName('body') ?? c.namedChildren.find((x) => x?.type === 'block') ?? null);
        }
        return;
      }
      case 'match_statement':
        this.visitMatch(n);
        return;
      case 'if_statement':
      case 'while_statement':
      case 'elif_clause':
      case 'else_clause': {
        // the body of `if TYPE_CHECKING:` (not its elif/else) never runs
        const typeOnly = n.type === 'if_statement' && isTypeCheckingTest(n.childForFieldName('condition'), this.src);
        for (const c of n.namedChildren) {
          if (!c) continue;
          if (c.type === 'block') {
            if (typeOnly) this.typeChecking++;
            this.visitBlock(c);
            if (typeOnly) this.typeChecking--;
          } else if (c.type === 'elif_clause' || c.type === 'else_clause') this.visitStatement(c);
          else this.visitExpr(c);
        }
        return;
      }
      case 'block':
        this.visitBlock(n);
        return;
      default:
        // return, raise, assert, print, exec, type alias, ERROR, …: read everything
        for (const c of n.namedChildren) if (c) this.visitExprOrStatement(c);
    }
  }

  /** ERROR nodes may hold statements or expressions. */
  private visitExprOrStatement(n: Node): void {
    if (n.type.endsWith('_statement') || n.type.endsWith('_definition') || n.type === 'block') this.visitStatement(n);
    else this.visitExpr(n);
  }

  private visitExprStatementPart(n: Node): void {
    switch (n.type) {
      case 'assignment':
        this.visitAssignment(n);
        return;
      case 'augmented_assignment': {
        // `x += 1` reads and binds x
        const left = n.childForFieldName('left');
        this.visitExpr(n.childForFieldName('right'));
        if (left) {
          if (left.type === 'identifier') {
            this.visitExpr(left);
            this.bind(left.text, left.startIndex);
            if (this.scope === this.module && left.text === '__all__')
              this.collectAll(n.childForFieldName('right'), true);
          } else this.visitExpr(left);
        }
        return;
      }
      default:
        this.visitExpr(n);
        if (this.scope === this.module) this.maybeAllMutation(n);
    }
  }

  private visitAssignment(n: Node): void {
    const left = n.childForFieldName('left');
    const right = n.childForFieldName('right');
    const type = n.childForFieldName('type');
    if (type) this.visitAnnotation(type, /*variable*/ true);
    if (right) {
      if (right.type === 'assignment') this.visitAssignment(right);
      else this.visitExpr(right);
    }
    if (!left) return;
    // `x: int` without a value does not bind at runtime, but makes x local in a
    // function (§4.2.2); at module/class level it binds nothing.
    if (!right && type) {
      if (left.type === 'identifier' && this.scope.kind === 'function') this.scope.bindings.set(left.text, this.seq++);
      else if (left.type !== 'identifier') this.visitExpr(left);
      return;
    }
    this.bindTarget(left);
    if (this.scope === this.module && left.type === 'identifier' && left.text === '__all__')
      this.collectAll(right, false);
  }

  private visitDelete(n: Node): void {
    // `del x` makes x local to the block (§4.2.2) and unbinds it
    if (n.type === 'identifier') {
      this.visitExpr(n);
      if (this.scope === this.module) {
        const st = this.statements[this.stmt];
        (st.deletes ??= []).push(n.text);
      } else if (!this.scope.bindings.has(n.text)) this.scope.bindings.set(n.text, this.seq++);
    } else if (
      n.type === 'expression_list' ||
      n.type === 'tuple' ||
      n.type === 'list' ||
      n.type === 'parenthesized_expression'
    ) {
      for (const c of n.namedChildren) if (c) this.visitDelete(c);
    } else this.visitExpr(n);
  }

  private visitWithItem(item: Node): void {
    const value = item.childForFieldName('value');
    if (!value) return;
    if (value.type === 'as_pattern') {
      const expr = value.namedChildren.find((c) => c && c.type !== 'as_pattern_target');
      if (expr) this.visitExpr(expr);
      const alias = value.childForFieldName('alias');
      if (alias) this.bindTarget(alias);
    } else this.visitExpr(value);
  }

  private visitExcept(n: Node): void {
    for (const c of n.namedChildren) {
      if (!c) continue;
      if (c.type === 'block') this.visitBlock(c);
      else if (c.type === 'as_pattern') {
        const expr = c.namedChildren.find((x) => x && x.type !== 'as_pattern_target');
        if (expr) this.visitExpr(expr);
        const alias = c.childForFieldName('alias');
        if (alias) this.bindTarget(alias);
      } else if (c.type !== 'comment') this.visitExpr(c);
    }
  }

  private visitMatch(n: Node): void {
    this.visitExpr(n.childForFieldName('subject'));
    const body = n.childForFieldName('body');
    if (!body) return;
    for (const clause of body.namedChildren) {
      if (clause?.type !== 'case_clause') continue;
      for (const c of clause.namedChildren) {
        if (!c) continue;
        if (c.type === 'case_pattern') this.visitPattern(c);
        else if (c.type === 'if_clause') this.visitExpr(c);
        else if (c.type === 'block') this.visitBlock(c);
      }
    }
  }

  /** PEP 634 patterns: capture names bind, value patterns (dotted names) and class
   *  patterns read. */
  private visitPattern(n: Node): void {
    switch (n.type) {
      case 'case_pattern': {
        const kids = n.namedChildren.filter((c): c is Node => !!c);
        if (kids.length === 1 && kids[0].type === 'dotted_name') {
          const parts = kids[0].namedChildren;
          if (parts.length === 1) {
            if (parts[0]!.text !== '_') this.bind(parts[0]!.text, parts[0]!.startIndex);
          } else this.visitDottedRead(kids[0]);
          return;
        }
        for (const c of kids) this.visitPattern(c);
        return;
      }
      case 'dotted_name':
        this.visitDottedRead(n);
        return;
      case 'class_pattern': {
        const kids = n.namedChildren.filter((c): c is Node => !!c);
        for (const c of kids) {
          if (c.type === 'dotted_name') this.visitDottedRead(c);
          else this.visitPattern(c);
        }
        return;
      }
      case 'keyword_pattern': {
        // `x=<pattern>`: the keyword is an attribute name, not a read
        const kids = n.namedChildren.filter((c): c is Node => !!c);
        for (const c of kids.slice(1)) {
          if (c.type === 'dotted_name') {
            if (c.namedChildren.length === 1) this.bind(c.text, c.startIndex);
            else this.visitDottedRead(c);
          } else this.visitPattern(c);
        }
        return;
      }
      case 'as_pattern':
      case 'splat_pattern': {
        for (const c of n.namedChildren) {
          if (!c) continue;
          if (c.type === 'identifier') {
            if (c.text !== '_') this.bind(c.text, c.startIndex);
          } else this.visitPattern(c);
        }
        return;
      }
      case 'identifier':
        if (n.text !== '_') this.bind(n.text, n.startIndex);
        return;
      case 'string':
      case 'integer':
      case 'float':
      case 'true':
      case 'false':
      case 'none':
        return;
      default:
        for (const c of n.namedChildren) if (c) this.visitPattern(c);
    }
  }

  private visitDottedRead(n: Node): void {
    const parts = n.namedChildren.filter((c): c is Node => !!c);
    if (!parts.length) return;
    const attrs = parts.slice(1).map((p) => p.text);
    const ends = parts.slice(1).map((p) => p.endIndex);
    this.access(parts[0], attrs, ends);
  }

  // ---------------------------------------------------------------- imports

  private visitImport(n: Node): void {
    const edges: ImportEdge[] = [];
    const line = n.startPosition.row + 1;
    const start = n.startIndex;
    const end = n.endIndex;
    if (n.type === 'import_statement') {
      for (const c of n.namedChildren) {
        if (!c) continue;
        if (c.type === 'dotted_name') edges.push({ kind: 'import', module: c.text, asname: null, line, start, end });
        else if (c.type === 'aliased_import') {
          edges.push({
            kind: 'import',
            module: c.childForFieldName('name')!.text,
            asname: c.childForFieldName('alias')!.text,
            line,
            start,
            end,
          });
        }
      }
    } else {
      let module = '';
      let level = 0;
      const mod = n.childForFieldName('module_name');
      if (n.type === 'future_import_statement') module = '__future__';
      else if (mod?.type === 'relative_import') {
        for (const c of mod.namedChildren) {
          if (c?.type === 'import_prefix') level = c.text.length;
          else if (c?.type === 'dotted_name') module = c.text;
        }
      } else if (mod) module = mod.text;
      for (const c of n.namedChildren) {
        if (!c || c === mod || c.id === mod?.id) continue;
        if (c.type === 'wildcard_import')
          edges.push({ kind: 'from', module, level, name: '*', asname: null, line, start, end });
        else if (c.type === 'dotted_name')
          edges.push({ kind: 'from', module, level, name: c.text, asname: null, line, start, end });
        else if (c.type === 'aliased_import') {
          edges.push({
            kind: 'from',
            module,
            level,
            name: c.childForFieldName('name')!.text,
            asname: c.childForFieldName('alias')!.text,
            line,
            start,
            end,
          });
        }
      }
    }
    if (this.importGuard > 0) for (const e of edges) e.guarded = true;
    if (this.typeChecking > 0) for (const e of edges) e.typeChecking = true;
    for (const e of edges) {
      const name =
        e.kind === 'import' ? (e.asname ?? e.module.split('.')[0]) : e.name === '*' ? null : (e.asname ?? e.name);
      // no bindSpan: `from m import y` binds y but renaming it needs `y as z`, which the
      // emitter does by rewriting the whole import statement
      if (name) this.bind(name, null);
    }
    if (this.scope === this.module) this.statements[this.stmt].imports.push(...edges);
    else {
      const st = this.statements[this.stmt];
      const nested: NestedImport = { start: n.startIndex, end: n.endIndex, line, edges };
      (st.nestedImports ??= []).push(nested);
    }
  }

  // ---------------------------------------------------------------- definitions

  private visitParameters(params: Node | null, fnScope: Scope): void {
    // defaults and annotations are evaluated in the enclosing scope, now
    if (!params) return;
    const names: Node[] = [];
    for (const p of params.namedChildren) {
      if (!p) continue;
      switch (p.type) {
        case 'identifier':
          names.push(p);
          break;
        case 'typed_parameter': {
          const id = p.namedChildren.find(
            (c) =>
              c &&
              (c.type === 'identifier' || c.type === 'list_splat_pattern' || c.type === 'dictionary_splat_pattern'),
          );
          if (id) names.push(id.type === 'identifier' ? id : id.namedChildren[0]!);
          const t = p.childForFieldName('type');
          if (t) this.visitAnnotation(t, false);
          break;
        }
        case 'default_parameter':
        case 'typed_default_parameter': {
          const nm = p.childForFieldName('name');
          if (nm) names.push(nm.type === 'identifier' ? nm : (nm.namedChildren[0] ?? nm));
          const t = p.childForFieldName('type');
          if (t) this.visitAnnotation(t, false);
          this.visitExpr(p.childForFieldName('value'));
          break;
        }
        case 'list_splat_pattern':
        case 'dictionary_splat_pattern': {
          const id = p.namedChildren[0];
          if (id) names.push(id);
          break;
        }
        case 'tuple_pattern': // Python 2 style, tolerated
          for (const c of p.namedChildren) if (c?.type === 'identifier') names.push(c);
          break;
        default:
          break;
      }
    }
    for (const id of names) if (id.type === 'identifier') fnScope.bindings.set(id.text, -1);
  }

  private visitFunction(n: Node, decorators: Node[]): void {
    const name = n.childForFieldName('name');
    const fnScope = this.newScope('function', this.scope);
    this.visitParameters(n.childForFieldName('parameters'), fnScope);
    const ret = n.childForFieldName('return_type');
    if (ret) this.visitAnnotation(ret, false);
    if (name) this.bind(name.text, name.startIndex);
    // the body runs at call time
    const saved = this.scope;
    const savedLazy = this.lazy;
    // a `try` around the def does not guard the imports its body runs when called
    const savedGuard = this.importGuard;
    this.scope = fnScope;
    this.lazy = true;
    this.importGuard = 0;
    this.defDepth++;
    this.visitBlock(n.childForFieldName('body'));
    this.defDepth--;
    this.scope = saved;
    this.lazy = savedLazy;
    this.importGuard = savedGuard;
    void decorators;
  }

  private visitClass(n: Node, decorators: Node[]): void {
    const name = n.childForFieldName('name');
    const supers = n.childForFieldName('superclasses');
    const bases: BaseExpr[] = [];
    let metaclass: string | null = null;
    if (supers) {
      for (const c of supers.namedChildren) {
        if (!c) continue;
        if (c.type === 'keyword_argument') {
          if (c.childForFieldName('name')?.text === 'metaclass') metaclass = c.childForFieldName('value')?.text ?? null;
        } else if (c.type !== 'comment') bases.push(baseExpr(c));
      }
      this.visitExpr(supers);
    }
    const topLevel = this.defDepth === 0;
    const clsScope = this.newScope('class', this.scope);
    const saved = this.scope;
    this.scope = clsScope;
    this.defDepth++;
    const body = n.childForFieldName('body');
    this.visitBlock(body);
    this.defDepth--;
    this.scope = saved;
    if (name) this.bind(name.text, name.startIndex);
    if (topLevel && name)
      this.classes.push(this.classFacts(n, name.text, bases, metaclass, decorators, clsScope, body));
  }

  private classFacts(
    n: Node,
    name: string,
    bases: BaseExpr[],
    metaclass: string | null,
    decorators: Node[],
    scope: Scope,
    body: Node | null,
  ): ClassFacts {
    const abstractMethods: string[] = [];
    let docstring: string | null = null;
    let initParams: string | null = null;
    let forwardParams: string | null = null;
    let init: Param[] | null = null;
    let forward: Param[] | null = null;
    const stmts = body ? body.namedChildren.filter((c): c is Node => !!c && c.type !== 'comment') : [];
    if (stmts.length && stmts[0].type === 'expression_statement') {
      const s = stmts[0].namedChildren[0];
      if (s && (s.type === 'string' || s.type === 'concatenated_string')) docstring = stringValue(s);
    }
    for (const st of stmts) {
      let def = st;
      let decos: Node[] = [];
      if (st.type === 'decorated_definition') {
        decos = st.namedChildren.filter((c): c is Node => !!c && c.type === 'decorator');
        def = st.childForFieldName('definition') ?? st;
      }
      if (def.type !== 'function_definition') continue;
      const fname = def.childForFieldName('name')?.text;
      if (!fname) continue;
      if (decos.some((d) => /abstractmethod\s*$/.test(d.text))) abstractMethods.push(fname);
      const params = fname === '__init__' || fname === 'forward' ? def.childForFieldName('parameters') : null;
      if (fname === '__init__') {
        initParams = params?.text ?? null;
        init = params ? paramsOf(params, { dropFirst: true }) : null;
      }
      if (fname === 'forward') {
        forwardParams = params?.text ?? null;
        forward = params ? paramsOf(params, { dropFirst: true }) : null;
      }
    }
    const outer = decorators.length ? (n.parent ?? n) : n;
    return {
      name,
      stmt: this.stmt,
      line: n.startPosition.row + 1,
      start: outer.startIndex,
      end: n.endIndex,
      bases,
      metaclass,
      // a name declared global/nonlocal in the class body is not a class attribute
      members: [...scope.bindings.keys()].filter((m) => !scope.globals.has(m) && !scope.nonlocals.has(m)),
      abstractMethods,
      docstring,
      decorators: decorators.map((d) => d.text.replace(/^@\s*/, '')),
      initParams,
      forwardParams,
      init,
      forward,
      nested: false,
    };
  }

  // ---------------------------------------------------------------- expressions

  private visitAnnotation(t: Node, variable: boolean): void {
    // Variable annotations inside a function body are never evaluated (§7.2.2).
    if (variable && this.scope.kind === 'function') {
      this.withLazy(true, () => this.visitAnnotationExpr(t));
      return;
    }
    if (this.futureAnnotations) this.withLazy(true, () => this.visitAnnotationExpr(t));
    else this.visitAnnotationExpr(t);
  }

  private withLazy(lazy: boolean, f: () => void): void {
    const saved = this.lazy;
    this.lazy = this.lazy || lazy;
    f();
    this.lazy = saved;
  }

  private visitAnnotationExpr(t: Node): void {
    // string annotations (forward references) are soft references to names
    const inner = t.type === 'type' ? t.namedChildren[0] : t;
    if (!inner) return;
    this.visitExpr(inner, true);
  }

  /** A string used as an annotation: its dotted names are soft references. */
  private stringAnnotation(s: Node): void {
    const content = s.namedChildren.find((c) => c?.type === 'string_content');
    if (!content) return;
    const text = content.text;
    const re = /(?<![\w.'"])([A-Za-z_]\w*)((?:\s*\.\s*[A-Za-z_]\w*)*)/g;
    for (let m = re.exec(text); m; m = re.exec(text)) {
      const start = content.startIndex + m.index;
      const attrs: string[] = [];
      const ends: number[] = [];
      if (m[2]) {
        const are = /[A-Za-z_]\w*/g;
        for (let am = are.exec(m[2]); am; am = are.exec(m[2])) {
          attrs.push(am[0]);
          ends.push(start + m[1].length + am.index + am[0].length);
        }
      }
      const ref: Ref = { name: m[1], start, end: start + m[1].length, eager: false, soft: true };
      if (attrs.length) {
        ref.attrs = attrs;
        ref.attrEnds = ends;
      }
      this.scope.accesses.push({ ref, stmt: this.stmt, seq: this.seq++ });
    }
  }

  /** A plain string literal whose value is an identifier (`'CrossEntropyLoss'`), recorded
   *  on its statement when it is the value given to a config dict's `type` key: the
   *  registry config convention (mmengine's `build_from_cfg`: "cfg must contain the key
   *  'type'"; mmcv, detectron2's LazyConfig `_target_` aside) in its four spellings,
   *  `dict(type='X')`, `{'type': 'X'}`, `cfg.setdefault('type', 'X')` and
   *  `cfg['type'] = 'X'`. An f-string or bytes literal is no name (Language Reference
   *  §2.4.1). */
  private typeString(n: Node): void {
    const content = plainString(n);
    if (!content || !/^[A-Za-z_]\w*$/.test(content.text)) return;
    const text = content.text;
    const p = n.parent;
    if (!p) return;
    const isType = (k: Node | null | undefined) => !!k && plainString(k)?.text === 'type';
    let typed = false;
    if (p.type === 'keyword_argument')
      typed = p.childForFieldName('name')?.text === 'type' && p.childForFieldName('value')?.id === n.id;
    else if (p.type === 'pair') typed = isType(p.childForFieldName('key')) && p.childForFieldName('value')?.id === n.id;
    else if (p.type === 'argument_list') {
      const args = p.namedChildren;
      typed = args.length >= 2 && isType(args[0]) && args[1]?.id === n.id;
    } else if (p.type === 'assignment') {
      const left = p.childForFieldName('left');
      typed =
        p.childForFieldName('right')?.id === n.id &&
        left?.type === 'subscript' &&
        isType(left.childForFieldName('subscript'));
    }
    if (typed) (this.statements[this.stmt].typeNames ??= []).push({ text, start: content.startIndex });
  }

  visitExpr(n: Node | null | undefined, annotation = false): void {
    if (!n) return;
    switch (n.type) {
      case 'identifier':
        this.access(n);
        return;
      case 'keyword_identifier':
        this.access(n);
        return;
      case 'comment':
      case 'integer':
      case 'float':
      case 'true':
      case 'false':
      case 'none':
      case 'ellipsis':
      case 'escape_sequence':
      case 'string_start':
      case 'string_content':
      case 'string_end':
      case 'type_conversion':
        return;
      case 'string':
        if (annotation) {
          this.stringAnnotation(n);
          return;
        }
        for (const c of n.namedChildren) if (c?.type === 'interpolation') this.visitExpr(c);
        this.typeString(n);
        return;
      case 'interpolation':
        for (const c of n.namedChildren) if (c) this.visitExpr(c);
        return;
      case 'attribute': {
        // a.b.c: collect the plain attribute chain down to a name
        const attrs: string[] = [];
        const ends: number[] = [];
        let cur: Node = n;
        while (cur.type === 'attribute') {
          const attr = cur.childForFieldName('attribute');
          attrs.push(attr ? attr.text : '');
          ends.push(cur.endIndex);
          const obj = cur.childForFieldName('object');
          if (!obj) return;
          cur = obj;
        }
        attrs.reverse();
        ends.reverse();
        if (cur.type === 'identifier') this.access(cur, attrs, ends, false);
        else this.visitExpr(cur, annotation);
        return;
      }
      case 'keyword_argument':
        this.visitExpr(n.childForFieldName('value'), annotation);
        return;
      case 'call': {
        const fn = n.childForFieldName('function');
        if (fn) this.noteDynamic(fn, n);
        this.visitExpr(fn, annotation);
        this.visitExpr(n.childForFieldName('arguments'), annotation);
        return;
      }
      case 'lambda':
        this.visitLambda(n);
        return;
      case 'list_comprehension':
      case 'set_comprehension':
      case 'dictionary_comprehension':
      case 'generator_expression':
        this.visitComprehension(n);
        return;
      case 'named_expression': {
        this.visitExpr(n.childForFieldName('value'));
        const nm = n.childForFieldName('name');
        if (nm) this.bindWalrus(nm.text, nm.startIndex);
        return;
      }
      case 'type':
        for (const c of n.namedChildren) if (c) this.visitExpr(c, annotation);
        return;
      case 'subscript': {
        const value = n.childForFieldName('value');
        this.visitExpr(value, annotation);
        const types = annotation && value ? typeArguments(value) : Infinity;
        let i = 0;
        for (const c of n.namedChildren) {
          if (c && c.id !== value?.id && c.type !== 'comment') this.visitExpr(c, annotation && i++ < types);
        }
        return;
      }
      case 'generic_type': {
        // `List[int]` in a `type` node: a name and a type_parameter list
        const head = n.namedChildren[0];
        const types = annotation && head ? typeArguments(head) : Infinity;
        let i = 0;
        for (const c of n.namedChildren) {
          if (!c) continue;
          if (c.type === 'type_parameter') {
            for (const t of c.namedChildren)
              if (t && t.type !== 'comment') this.visitExpr(t, annotation && i++ < types);
          } else this.visitExpr(c, annotation);
        }
        return;
      }
      default:
        if (n.type.endsWith('_statement') || n.type.endsWith('_definition')) {
          this.visitStatement(n);
          return;
        }
        for (const c of n.namedChildren) if (c) this.visitExpr(c, annotation);
    }
  }

  private noteDynamic(fn: Node, call: Node): void {
    let kind: DynamicUse['kind'] | undefined;
    if (fn.type === 'identifier') kind = DYNAMIC_CALLS.get(fn.text);
    else if (fn.type === 'attribute' && fn.childForFieldName('attribute')?.text === 'import_module')
      kind = 'import_module';
    if (kind) this.dynamic.push({ kind, line: call.startPosition.row + 1, stmt: this.stmt });
  }

  private visitLambda(n: Node): void {
    const scope = this.newScope('lambda', this.scope);
    const params = n.childForFieldName('parameters');
    if (params) this.visitParameters(params, scope);
    const saved = this.scope;
    const savedLazy = this.lazy;
    this.scope = scope;
    this.lazy = true;
    this.visitExpr(n.childForFieldName('body'));
    this.scope = saved;
    this.lazy = savedLazy;
  }

  private visitComprehension(n: Node): void {
    const clauses = n.namedChildren.filter(
      (c): c is Node => !!c && (c.type === 'for_in_clause' || c.type === 'if_clause'),
    );
    const body = n.childForFieldName('body');
    // the first iterable is evaluated in the enclosing scope (§6.2.4)
    const first = clauses.find((c) => c.type === 'for_in_clause');
    if (first) for (const r of first.childrenForFieldName('right')) if (r) this.visitExpr(r);
    const scope = this.newScope('comprehension', this.scope);
    const saved = this.scope;
    this.scope = scope;
    for (const c of clauses) {
      if (c.type === 'for_in_clause') {
        if (c !== first && c.id !== first?.id)
          for (const r of c.childrenForFieldName('right')) if (r) this.visitExpr(r);
        const left = c.childForFieldName('left');
        if (left) this.bindTarget(left);
      } else for (const x of c.namedChildren) if (x) this.visitExpr(x);
    }
    if (body) this.visitExpr(body);
    this.scope = saved;
  }

  // ---------------------------------------------------------------- __all__

  private collectAll(value: Node | null, augment: boolean): void {
    const names = literalStrings(value);
    if (names === null) {
      this.allBroken = true;
      return;
    }
    if (augment) this.all = [...(this.all ?? []), ...names];
    else this.all = names;
  }

  /** `__all__.extend([...])`, `__all__.append('x')`, `__all__ += [...]` */
  private maybeAllMutation(n: Node): void {
    if (n.type !== 'call') return;
    const fn = n.childForFieldName('function');
    if (fn?.type !== 'attribute' || fn.childForFieldName('object')?.text !== '__all__') return;
    const method = fn.childForFieldName('attribute')?.text;
    const args =
      n.childForFieldName('arguments')?.namedChildren.filter((c): c is Node => !!c && c.type !== 'comment') ?? [];
    if (method === 'extend' && args.length === 1) this.collectAll(args[0], true);
    else if (method === 'append' && args.length === 1 && args[0].type === 'string') {
      // one string, not a sequence of strings
      const v = stringValue(args[0]);
      if (v === null) this.allBroken = true;
      else this.all = [...(this.all ?? []), v];
    } else if (method === 'remove' && args.length === 1 && args[0].type === 'string') {
      const v = stringValue(args[0]);
      if (this.all) this.all = this.all.filter((x) => x !== v);
    } else this.allBroken = true;
  }
}

// ---------------------------------------------------------------- helpers

/** Does this `except` / `except*` clause catch ImportError? A bare `except:`, or an
 *  exception class that is ImportError or one of its bases or subclasses by name
 *  (ImportError, ModuleNotFoundError, Exception, BaseException), alone or in a tuple. */
function catchesImportError(clause: Node): boolean {
  const head = clause.namedChildren.filter((c) => !!c && c.type !== 'block' && c.type !== 'comment');
  if (!head.length) return true;
  let expr = head[0]!;
  if (expr.type === 'as_pattern') expr = expr.namedChildren.find((x) => !!x && x.type !== 'as_pattern_target') ?? expr;
  const names =
    expr.type === 'tuple' || expr.type === 'parenthesized_expression' ? expr.namedChildren.filter((c) => !!c) : [expr];
  return names.some((c) =>
    /(?:^|\.)\s*(?:ImportError|ModuleNotFoundError|Exception|BaseException)$/.test(c!.text.trim()),
  );
}

function guardOf(n: Node, src: string): Guard {
  if (n.type === 'try_statement') return 'try';
  if (n.type === 'if_statement')
    return isTypeCheckingTest(n.childForFieldName('condition'), src) ? 'type-checking' : 'if';
  return null;
}

/** `TYPE_CHECKING` / `typing.TYPE_CHECKING` (False at run time, PEP 484): only a plain
 *  test counts; `not TYPE_CHECKING` or `TYPE_CHECKING or x` run. */
function isTypeCheckingTest(cond: Node | null, src: string): boolean {
  const text = cond ? src.slice(cond.startIndex, cond.endIndex) : '';
  return /^\(*\s*(?:[A-Za-z_]\w*\s*\.\s*)*TYPE_CHECKING\s*\)*$/.test(text);
}

/** How many leading subscript arguments of an annotation are type expressions: the
 *  strings of `Literal['a']` are values (PEP 586) and the metadata of
 *  `Annotated[T, 'm']` are not types (PEP 593), so they are not forward references. */
function typeArguments(head: Node): number {
  const last =
    head.type === 'identifier'
      ? head.text
      : head.type === 'attribute'
        ? head.childForFieldName('attribute')?.text
        : undefined;
  if (last === 'Literal') return 0;
  if (last === 'Annotated') return 1;
  return Infinity;
}

function baseExpr(n: Node): BaseExpr {
  const attrs: string[] = [];
  let cur: Node = n;
  while (cur.type === 'attribute') {
    attrs.push(cur.childForFieldName('attribute')?.text ?? '');
    cur = cur.childForFieldName('object')!;
    if (!cur) return { text: n.text, name: null, attrs: [] };
  }
  if (cur.type !== 'identifier') return { text: n.text, name: null, attrs: [] };
  return { text: n.text, name: cur.text, attrs: attrs.reverse() };
}

/** The value of a plain (non-f) string literal, or concatenation of such. */
function stringValue(n: Node): string | null {
  if (n.type === 'concatenated_string') {
    let out = '';
    for (const c of n.namedChildren) {
      if (!c) continue;
      const v = stringValue(c);
      if (v === null) return null;
      out += v;
    }
    return out;
  }
  if (n.type !== 'string') return null;
  let out = '';
  for (const c of n.namedChildren) {
    if (!c) continue;
    if (c.type === 'interpolation') return null;
    if (c.type === 'string_content' || c.type === 'escape_sequence') out += c.text;
  }
  return out;
}

function literalStrings(n: Node | null): string[] | null {
  if (!n) return null;
  if (
    n.type === 'list' ||
    n.type === 'tuple' ||
    n.type === 'parenthesized_expression' ||
    n.type === 'expression_list'
  ) {
    const out: string[] = [];
    for (const c of n.namedChildren) {
      if (!c || c.type === 'comment') continue;
      if (c.type === 'string' || c.type === 'concatenated_string') {
        const v = stringValue(c);
        if (v === null) return null;
        out.push(v);
      } else if (c.type === 'list' || c.type === 'tuple') {
        return null;
      } else return null;
    }
    return out;
  }
  if (n.type === 'binary_operator') {
    const l = literalStrings(n.childForFieldName('left'));
    const r = literalStrings(n.childForFieldName('right'));
    return l && r ? [...l, ...r] : null;
  }
  return null;
}

function syntaxIssues(root: TsNode, max = 20): SyntaxIssue[] {
  const out: SyntaxIssue[] = [];
  if (!root.hasError) return out;
  const stack: TsNode[] = [root];
  while (stack.length && out.length < max) {
    const n = stack.pop()!;
    if (n.isMissing) {
      out.push({ line: n.startPosition.row + 1, column: n.startPosition.column + 1, message: `missing ${n.type}` });
      continue;
    }
    if (n.type === 'ERROR') {
      out.push({
        line: n.startPosition.row + 1,
        column: n.startPosition.column + 1,
        message: `syntax error near ${JSON.stringify(n.text.slice(0, 30))}`,
      });
      continue;
    }
    if (!n.hasError) continue;
    const kids = n.children;
    for (let i = kids.length - 1; i >= 0; i--) if (kids[i]) stack.push(kids[i]!);
  }
  out.sort((a, b) => a.line - b.line || a.column - b.column);
  return out;
}

function hasFutureAnnotations(root: Node): boolean {
  for (const c of root.namedChildren) {
    if (!c) continue;
    if (c.type === 'future_import_statement') {
      if (
        c.namedChildren.some(
          (x) => x && (x.text === 'annotations' || x.childForFieldName?.('name')?.text === 'annotations'),
        )
      )
        return true;
      continue;
    }
    if (c.type === 'comment') continue;
    if (c.type === 'expression_statement' && c.namedChildren[0]?.type === 'string') continue;
    break; // __future__ imports must come first
  }
  return false;
}

/** Error recovery: after an unclosed bracket tree-sitter can put every following
 *  statement into one ERROR node, and their facts would be lost. Blank the
 *  first line of such a node (with spaces, so every offset stays the same) and parse
 *  again, a bounded number of times; the statements after the error then parse. */
function recoverStatements(source: string, tree: Tree): { text: string; tree: Tree } {
  let text = source;
  let cur = tree;
  for (let round = 0; round < 50; round++) {
    const err = firstMultiLineError(cur.rootNode);
    if (!err) break;
    const lineStart = text.lastIndexOf('\n', err.startIndex - 1) + 1;
    let lineEnd = text.indexOf('\n', err.startIndex);
    if (lineEnd === -1) lineEnd = text.length;
    const blanked =
      text.slice(0, lineStart) + text.slice(lineStart, lineEnd).replace(/[^\r]/g, ' ') + text.slice(lineEnd);
    if (blanked === text) break; // nothing left to blank on that line
    text = blanked;
    if (cur !== tree) cur.delete();
    cur = parsePython(text);
  }
  return { text, tree: cur };
}

/** The first ERROR node (in source order, at any depth) that spans several lines. */
function firstMultiLineError(root: TsNode): TsNode | null {
  const stack: TsNode[] = [root];
  while (stack.length) {
    const n = stack.pop()!;
    if (!n.hasError || n.endPosition.row === n.startPosition.row) continue;
    if (n.type === 'ERROR') return n;
    const kids = n.children;
    for (let i = kids.length - 1; i >= 0; i--) if (kids[i]) stack.push(kids[i]!);
  }
  return null;
}

/** Compute the FileFacts of one Python source text. Call after `await initParser()`. */
export function bindSource(source: string): FileFacts {
  const tree = parsePython(source);
  let recovered: Tree | null = null;
  try {
    // errors are those of the file as written; facts come from the recovered parse
    const errors = syntaxIssues(tree.rootNode);
    let text = source;
    let parsed = tree;
    if (errors.length) {
      const r = recoverStatements(source, tree);
      if (r.tree !== tree) {
        recovered = r.tree;
        text = r.text;
        parsed = r.tree;
      }
    }
    // the binder reads a plain copy of the named nodes (syntax.ts), not the wasm tree
    const root = syntaxTree(parsed, text);
    const futureAnnotations = hasFutureAnnotations(root);
    const b = new Binder(text, futureAnnotations);
    const facts = b.run(root);
    let lines = 1;
    for (let i = source.indexOf('\n'); i !== -1; i = source.indexOf('\n', i + 1)) lines++;
    if (source.endsWith('\n')) lines--;
    return { version: FACTS_VERSION, lines, errors, futureAnnotations, ...facts };
  } finally {
    tree.delete();
    recovered?.delete();
  }
}

/** The content node of a plain string literal (`'X'`: one part, no interpolation), or null;
 *  an f-string or bytes literal is no plain string (Language Reference §2.4.1). */
function plainString(n: Node): Node | null {
  const parts = n.namedChildren;
  if (n.type !== 'string' || parts.length !== 3 || parts[1]?.type !== 'string_content') return null;
  return /[bfBF]/.test((parts[0]?.text ?? '').replace(/['"]+$/, '')) ? null : parts[1];
}
