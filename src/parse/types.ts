// Types of the per-file facts the binder produces (docs/ARCHITECTURE.md "Parsing and binding").
// FileFacts are pure data (JSON-serialisable), computed from one file's text alone,
// and stored in the IndexStore keyed by the file's git blob id.
// All offsets are JavaScript string (UTF-16 code unit) indices into the decoded
// source text; all line numbers are 1-based.

/** Bump when the shape or meaning of FileFacts changes: stored facts of an older
 *  version are re-parsed. */
export const FACTS_VERSION = 9;

/** One parameter of a `def` (parse/params.ts reads them): name, default and annotation as
 *  source text, and its kind (Language Reference, "Function definitions"). */
export interface Param {
  name: string;
  default: string | null;
  annotation: string | null;
  kind: 'positional' | 'keyword' | 'var-positional' | 'var-keyword';
}

/** One imported name, one edge. `import a.b as c, d` gives two edges.
 *  - `import a.b.c`        → {kind:'import', module:'a.b.c', asname:null} binds `a`
 *  - `import a.b as c`     → {kind:'import', module:'a.b', asname:'c'} binds `c`
 *  - `from ..x import y as z` → {kind:'from', module:'x', level:2, name:'y', asname:'z'} binds `z`
 *  - `from . import y`     → {kind:'from', module:'', level:1, name:'y'}
 *  - `from x import *`     → {kind:'from', module:'x', level:0, name:'*'} */
export type ImportEdge = (
  | { kind: 'import'; module: string; asname: string | null }
  | { kind: 'from'; module: string; level: number; name: string; asname: string | null }
) & {
  line: number;
  /** span of the whole import statement the edge belongs to */
  start: number;
  end: number;
  /** the import runs in the body of a `try` whose handlers catch ImportError (a bare
   *  `except:`, Exception, ImportError, …): its failure runs the handler */
  guarded?: true;
  /** the import is in the body of `if TYPE_CHECKING:`, which never runs (PEP 484): it
   *  binds a name for type checkers only */
  typeChecking?: true;
};

/** The name an import edge binds in the importing scope (null for a star import). */
export function importBinds(e: ImportEdge): string | null {
  if (e.kind === 'import') return e.asname ?? e.module.split('.')[0];
  if (e.name === '*') return null;
  return e.asname ?? e.name;
}

/** A read of a module-scope (global or builtin) name somewhere inside a statement:
 *  at module level, or free in a nested function/class/lambda/comprehension. */
export interface Ref {
  name: string;
  /** span of the identifier itself */
  start: number;
  end: number;
  /** evaluated when the top-level statement runs (bases, decorators, defaults,
   *  class bodies, module-level expressions, eager annotations) vs. lazily at call time */
  eager: boolean;
  /** plain attribute chain that follows the name: `a.b.c` → ['b', 'c'] */
  attrs?: string[];
  /** end offset of the expression after each attribute of `attrs` (same length) */
  attrEnds?: number[];
  /** the reference comes from a string annotation or is otherwise optional */
  soft?: boolean;
  /** for a read with an attribute chain (which the emitter may replace by one name, an
   *  interned module's attribute): the names bound locally in the function scopes around
   *  it, which that one name must not be (§4.2.2: they would be local there) */
  shadows?: string[];
}

/** How a top-level statement that binds names conditionally is guarded. */
export type Guard = 'try' | 'if' | 'type-checking' | null;

export interface StatementFacts {
  /** tree-sitter node type of the top-level statement */
  kind: string;
  start: number;
  end: number;
  startLine: number;
  endLine: number;
  /** module-scope names this statement binds (in any branch, including `global`
   *  declarations inside functions); `*` imports are in `imports` only */
  binds: string[];
  /** names in `binds` that are bound only by `global` declarations inside function
   *  bodies (the binding happens when the function is called, not when the statement runs) */
  globalBinds?: string[];
  /** identifier spans of the module-scope bindings (def/class names, assignment
   *  targets, `global` declarations and their targets inside functions; not imports,
   *  which are rewritten whole), for renaming a binding when two copied definitions
   *  collide */
  bindSpans: { name: string; start: number; end: number }[];
  refs: Ref[];
  imports: ImportEdge[];
  guard: Guard;
  /** names this statement deletes at module scope (`del x`) */
  deletes?: string[];
  /** imports inside function or class bodies of this statement (they bind locals) */
  nestedImports?: NestedImport[];
  /** identifier strings given to a config dict's `type` key in the statement's code
   *  (`dict(type='CrossEntropyLoss')`, `{'type': 'X'}`, `cfg.setdefault('type', 'X')`,
   *  `cfg['type'] = 'X'`): the names a registry builds from (resolve/registry.ts). */
  typeNames?: { text: string; start: number }[];
}

/** An import statement nested in a def/class body: `def f(): from .x import y`. */
export interface NestedImport {
  start: number;
  end: number;
  line: number;
  edges: ImportEdge[];
}

export interface ClassFacts {
  name: string;
  /** index into FileFacts.statements of the top-level statement holding the class */
  stmt: number;
  line: number;
  start: number;
  end: number;
  /** base class expressions (positional arguments of the class statement) */
  bases: BaseExpr[];
  /** `metaclass=` keyword text, if any */
  metaclass: string | null;
  /** names bound directly in the class body (methods, attributes) */
  members: string[];
  /** methods decorated with abstractmethod (any spelling ending in `abstractmethod`) */
  abstractMethods: string[];
  /** first statement of the body is a string */
  docstring: string | null;
  decorators: string[];
  /** parameter list text of __init__ and forward, if defined in this class */
  initParams: string | null;
  forwardParams: string | null;
  /** the same lists read from the syntax tree, without `self` (parse/params.ts); null
   *  when the class does not define the method; absent in facts of FACTS_VERSION < 5 */
  init?: Param[] | null;
  forward?: Param[] | null;
  /** nested in a function or class (not reachable as a module attribute) */
  nested: boolean;
}

/** A base-class expression. When it is a dotted name (`nn.Module`, `Bottleneck`,
 *  `mmcv.runner.BaseModule`), `name` + `attrs` give it; otherwise only `text`. */
export interface BaseExpr {
  text: string;
  name: string | null;
  attrs: string[];
}

/** Things that make name resolution impossible to do statically. */
export interface DynamicUse {
  kind: 'globals' | 'exec' | 'eval' | 'import_module' | '__import__' | 'locals' | 'vars' | 'setattr-module';
  line: number;
  /** top-level statement index */
  stmt: number;
}

export interface SyntaxIssue {
  line: number;
  column: number;
  message: string;
}

export interface FileFacts {
  version: number;
  /** number of lines of the file */
  lines: number;
  errors: SyntaxIssue[];
  /** `from __future__ import annotations` is in effect (PEP 563): annotations are lazy */
  futureAnnotations: boolean;
  /** literal `__all__` (list/tuple of strings, including `+=` of literals), else null */
  all: string[] | null;
  statements: StatementFacts[];
  classes: ClassFacts[];
  dynamic: DynamicUse[];
}
