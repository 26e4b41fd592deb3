// A plain-JavaScript copy of a tree-sitter tree's named nodes, made in one cursor walk,
// for the binder to read. web-tree-sitter's Node API crosses into WebAssembly and
// builds a Node object (marshalling five words through a transfer buffer) on every
// `namedChildren`, `childForFieldName`, `parent` and `endIndex` access; the binder
// makes millions of those on a corpus the size of timm, and they cost as much as the
// parse. Here each named node is read once: type, field name, start and end offset,
// with rows computed from the source's line starts when asked.
//
// The walk drives the tree cursor through the WebAssembly exports of the Emscripten
// module that `Parser.init(module)` fills in (the `ts_tree_cursor_*_wasm` functions
// web-tree-sitter's TreeCursor wraps, which keep the cursor in the transfer buffer
// between calls), so a step is one call with no marshalling. If those exports are
// not there (another web-tree-sitter build), the same walk runs through the public
// TreeCursor API: slower, same result.
import type { Language, Tree, TreeCursor } from 'web-tree-sitter';
import { lineIndex, lineStarts } from '../util/lines.js';

/** A named node of the tree (the subset of web-tree-sitter's Node the binder uses). */
export class SyntaxNode {
  readonly namedChildren: SyntaxNode[] = NO_CHILDREN;
  constructor(
    /** walk order in its tree, unique in it */
    readonly id: number,
    readonly type: string,
    /** the field of the parent this node fills (tree-sitter's `currentFieldName`) */
    readonly fieldName: string | null,
    readonly startIndex: number,
    readonly endIndex: number,
    readonly parent: SyntaxNode | null,
    private readonly doc: SyntaxDoc,
  ) {}

  get text(): string {
    return this.doc.text.slice(this.startIndex, this.endIndex);
  }

  get startPosition(): { row: number; column: number } {
    return this.doc.point(this.startIndex);
  }

  get endPosition(): { row: number; column: number } {
    return this.doc.point(this.endIndex);
  }

  /** The first named child filling `field` (the binder only asks for fields that
   *  hold named nodes). */
  childForFieldName(field: string): SyntaxNode | null {
    for (const c of this.namedChildren) if (c.fieldName === field) return c;
    return null;
  }

  childrenForFieldName(field: string): SyntaxNode[] {
    return this.namedChildren.filter((c) => c.fieldName === field);
  }
}

const NO_CHILDREN: SyntaxNode[] = [];
Object.freeze(NO_CHILDREN);

/** The source text and its line starts (rows as tree-sitter counts them: one per '\n';
 *  columns in UTF-16 code units, as web-tree-sitter reports them for a JS string). */
class SyntaxDoc {
  private lineStarts: number[] | null = null;
  constructor(readonly text: string) {}

  point(index: number): { row: number; column: number } {
    this.lineStarts ??= lineStarts(this.text);
    const row = lineIndex(this.lineStarts, index);
    return { row, column: index - this.lineStarts[row] };
  }
}

/** The WebAssembly exports the fast walk calls (see tree-sitter's binding
 *  lib/tree-sitter.c: each reads the cursor from the transfer buffer and, for the
 *  moves, writes it back). */
interface CursorExports {
  _ts_tree_cursor_goto_first_child_wasm(tree: number): number;
  _ts_tree_cursor_goto_next_sibling_wasm(tree: number): number;
  _ts_tree_cursor_goto_parent_wasm(tree: number): number;
  _ts_tree_cursor_current_node_type_id_wasm(tree: number): number;
  _ts_tree_cursor_current_field_id_wasm(tree: number): number;
  _ts_tree_cursor_start_index_wasm(tree: number): number;
  _ts_tree_cursor_end_index_wasm(tree: number): number;
  _ts_tree_cursor_delete_wasm(tree: number): void;
  _ts_language_type_is_named_wasm(language: number, typeId: number): number;
}

const EXPORTS: (keyof CursorExports)[] = [
  '_ts_tree_cursor_goto_first_child_wasm',
  '_ts_tree_cursor_goto_next_sibling_wasm',
  '_ts_tree_cursor_goto_parent_wasm',
  '_ts_tree_cursor_current_node_type_id_wasm',
  '_ts_tree_cursor_current_field_id_wasm',
  '_ts_tree_cursor_start_index_wasm',
  '_ts_tree_cursor_end_index_wasm',
  '_ts_tree_cursor_delete_wasm',
  '_ts_language_type_is_named_wasm',
];

let exportsOf: CursorExports | null = null;

/** Called by the parser setup with the Emscripten module object given to
 *  `Parser.init`; the fast walk is used when every export it needs is there. */
export function useWasmModule(module: Record<string, unknown>): boolean {
  exportsOf = EXPORTS.every((k) => typeof module[k] === 'function') ? (module as unknown as CursorExports) : null;
  return exportsOf !== null;
}

/** Is the fast walk in use (for tests comparing it with the public one)? */
export function fastWalkAvailable(): boolean {
  return exportsOf !== null;
}

/** Per language: type names, field names and which type ids are named. */
interface LanguageTables {
  types: string[];
  fields: (string | null)[];
  named: Int8Array; // 0 unknown, 1 named, 2 anonymous
}
const tables = new WeakMap<Language, LanguageTables>();

function tablesOf(lang: Language): LanguageTables {
  let t = tables.get(lang);
  if (!t) {
    t = { types: lang.types, fields: lang.fields, named: new Int8Array(65536) };
    tables.set(lang, t);
  }
  return t;
}

/** The named nodes of `tree` (parsed from `text`) as SyntaxNodes; returns the root. */
export function syntaxTree(tree: Tree, text: string, fast = true): SyntaxNode {
  const doc = new SyntaxDoc(text);
  const cursor = tree.walk();
  const ex = fast ? exportsOf : null;
  return ex ? walkFast(ex, tree, cursor, doc) : walkPublic(tree, cursor, doc);
}

function walkFast(ex: CursorExports, tree: Tree, cursor: TreeCursor, doc: SyntaxDoc): SyntaxNode {
  // `tree.walk()` left the new cursor in the transfer buffer; the calls below move it
  // there, and the public TreeCursor object (whose copy of the state is now stale) is
  // dropped without its delete(): the cursor is freed from the buffer's state
  void cursor;
  const T = (tree as unknown as { 0: number })[0];
  const langAddr = (tree.language as unknown as { 0: number })[0];
  const tab = tablesOf(tree.language);
  const { types, fields, named } = tab;
  const typeId = ex._ts_tree_cursor_current_node_type_id_wasm;
  const fieldId = ex._ts_tree_cursor_current_field_id_wasm;
  const startIndex = ex._ts_tree_cursor_start_index_wasm;
  const endIndex = ex._ts_tree_cursor_end_index_wasm;
  const first = ex._ts_tree_cursor_goto_first_child_wasm;
  const next = ex._ts_tree_cursor_goto_next_sibling_wasm;
  const up = ex._ts_tree_cursor_goto_parent_wasm;
  let id = 0;
  // owner[d]: the node the named nodes at cursor depth d+1 attach to
  const owner: SyntaxNode[] = [];
  const visit = (depth: number): boolean => {
    const t = typeId(T);
    let isNamed = named[t];
    if (isNamed === 0) named[t] = isNamed = ex._ts_language_type_is_named_wasm(langAddr, t) ? 1 : 2;
    if (isNamed === 2) return false;
    const parent = depth ? owner[depth - 1] : null;
    const f = depth ? fieldId(T) : 0;
    // web-tree-sitter's nodeType: the error symbol (65535) has no name in the table
    const node = new SyntaxNode(
      id++,
      types[t] || 'ERROR',
      f ? (fields[f] ?? null) : null,
      startIndex(T),
      endIndex(T),
      parent,
      doc,
    );
    if (parent) addChild(parent, node);
    owner[depth] = node;
    return true;
  };
  try {
    let named = visit(0);
    const root = owner[0];
    let depth = 0;
    for (;;) {
      // an anonymous node's children are not the named children of any node (the Node
      // API does not look inside a visible node for them): not entered
      if (named && first(T)) {
        named = visit(++depth);
        continue;
      }
      for (;;) {
        if (depth === 0) return root;
        if (next(T)) {
          named = visit(depth);
          break;
        }
        up(T);
        depth--;
      }
    }
  } finally {
    ex._ts_tree_cursor_delete_wasm(T);
  }
}

function walkPublic(tree: Tree, c: TreeCursor, doc: SyntaxDoc): SyntaxNode {
  const tab = tablesOf(tree.language);
  let id = 0;
  const owner: SyntaxNode[] = [];
  const visit = (depth: number): boolean => {
    if (!c.nodeIsNamed) return false;
    const parent = depth ? owner[depth - 1] : null;
    const f = depth ? c.currentFieldId : 0;
    const node = new SyntaxNode(
      id++,
      c.nodeType,
      f ? (tab.fields[f] ?? null) : null,
      c.startIndex,
      c.endIndex,
      parent,
      doc,
    );
    if (parent) addChild(parent, node);
    owner[depth] = node;
    return true;
  };
  try {
    let named = visit(0);
    const root = owner[0];
    let depth = 0;
    for (;;) {
      if (named && c.gotoFirstChild()) {
        named = visit(++depth);
        continue;
      }
      for (;;) {
        if (depth === 0) return root;
        if (c.gotoNextSibling()) {
          named = visit(depth);
          break;
        }
        c.gotoParent();
        depth--;
      }
    }
  } finally {
    c.delete();
  }
}

function addChild(parent: SyntaxNode, node: SyntaxNode): void {
  const kids = parent.namedChildren;
  if (kids === NO_CHILDREN) (parent as { namedChildren: SyntaxNode[] }).namedChildren = [node];
  else kids.push(node);
}
