// The dependency picture of a block for the web catalog: a module-level graph of the
// modules whose definitions were copied into the block (provenance entries), plus the
// extern packages it imports, drawn as inline SVG.
//
// The closure's statement edges are not stored, so module edges are derived from the
// stored facts of the source files: module M → interned module N when a statement of M
// that was copied (inside M's provenance line ranges) reads a name that one of M's import
// statements binds, and that import names N (`import N`, `from N import x`, relative forms
// resolved against M's package) or names a name that the copied statements of N bind
// (re-exports through a package `__init__`); M → extern package P when such an import's
// top-level module is P.
import type { IndexStore } from '../store/store.js';
import type { FileFacts } from '../parse/types.js';
import { absoluteImport } from '../util/python.js';
import type { SearchDoc } from '../search/documents.js';
import { escapeHtml } from './highlight.js';

export interface GraphNode {
  id: string;
  kind: 'block' | 'interned' | 'extern';
  /** number of copied line ranges (definitions) */
  defs: number;
  path: string | null;
}

export interface DependencyGraph {
  nodes: GraphNode[];
  edges: [string, string][];
}

function factsOf(store: IndexStore, repo: string, file: string): FileFacts | null {
  // an interned module is an indexed file or one the resolver read on demand (support_files)
  const blob = store.blobOf(repo, file);
  return blob ? store.getFacts(blob) : null;
}


export function dependencyGraph(store: IndexStore, doc: SearchDoc): DependencyGraph {
  const nodes = new Map<string, GraphNode>();
  const edges = new Set<string>();
  const provenance = doc.provenance ?? [];
  for (const p of provenance) nodes.set(p.module, { id: p.module, kind: p.module === doc.module ? 'block' : 'interned', defs: p.ranges.length, path: `${p.repo}:${p.path}` });
  if (!nodes.has(doc.module)) nodes.set(doc.module, { id: doc.module, kind: 'block', defs: 1, path: `${doc.origin.repo}:${doc.origin.path}` });
  const externs = new Set(doc.externs.map((x) => x.split('.')[0]));
  // names each interned module's copied statements bind
  const info = new Map<string, { facts: FileFacts; copied: FileFacts['statements'] }>();
  for (const p of provenance) {
    const facts = factsOf(store, p.repo, p.path);
    if (!facts) continue;
    const inRanges = (s: { startLine: number; endLine: number }) => p.ranges.some(([a, b]) => s.startLine <= b && s.endLine >= a);
    info.set(p.module, { facts, copied: facts.statements.filter(inRanges) });
  }
  const defines = new Map<string, Set<string>>();
  for (const [m, { copied }] of info) defines.set(m, new Set(copied.flatMap((s) => s.binds)));
  for (const p of provenance) {
    const inf = info.get(p.module);
    if (!inf) continue;
    const reads = new Set(inf.copied.flatMap((s) => s.refs.map((r) => r.name)));
    const isPackage = p.path.endsWith('__init__.py');
    for (const st of inf.facts.statements) {
      for (const e of st.imports) {
        const bound = e.kind === 'import' ? (e.asname ?? e.module.split('.')[0]) : e.name === '*' ? null : (e.asname ?? e.name);
        if (bound !== null && !reads.has(bound)) continue;
        // PEP 328, as the resolver reads it (an import above the top names nothing)
        const target = e.kind === 'import' ? e.module : absoluteImport(p.module, isPackage, e.level, e.module);
        if (target === null) continue;
        const top = target.split('.')[0];
        if (externs.has(top) && !nodes.has(target)) {
          if (!nodes.has(top)) nodes.set(top, { id: top, kind: 'extern', defs: 0, path: null });
          edges.add(`${p.module}\u0000${top}`);
          continue;
        }
        const cands: string[] = [];
        if (e.kind === 'from' && e.name !== '*' && nodes.has(`${target}.${e.name}`)) cands.push(`${target}.${e.name}`);
        else if (nodes.has(target) && (e.kind === 'import' || e.name === '*' || defines.get(target)?.has(e.name))) cands.push(target);
        else if (e.kind === 'from' && e.name !== '*') {
          for (const [m, names] of defines) if (m !== p.module && names.has(e.name) && (m === target || m.startsWith(target + '.'))) cands.push(m);
        }
        for (const c of cands) if (c !== p.module) edges.add(`${p.module}\u0000${c}`);
      }
    }
  }
  // extern packages no derived edge reaches hang off the block's module
  for (const x of externs) {
    if (!nodes.has(x)) {
      nodes.set(x, { id: x, kind: 'extern', defs: 0, path: null });
      edges.add(`${doc.module}\u0000${x}`);
    }
  }
  return { nodes: [...nodes.values()], edges: [...edges].map((k) => k.split('\u0000') as [string, string]) };
}

/** Layered drawing: the block's module on top, each node one row below its deepest
 *  predecessor (longest path over a DFS tree, cycles cut), extern packages at the bottom. */
export function graphSvg(g: DependencyGraph): string {
  const out = new Map<string, string[]>();
  for (const [a, b] of g.edges) out.set(a, [...(out.get(a) ?? []), b]);
  const level = new Map<string, number>();
  const root = g.nodes.find((n) => n.kind === 'block')?.id;
  const visiting = new Set<string>();
  const visit = (id: string, d: number) => {
    if (visiting.has(id) || (level.get(id) ?? -1) >= d) return;
    level.set(id, d);
    visiting.add(id);
    for (const b of out.get(id) ?? []) visit(b, d + 1);
    visiting.delete(id);
  };
  if (root) visit(root, 0);
  for (const n of g.nodes) if (!level.has(n.id) && n.kind !== 'extern') visit(n.id, 1);
  const maxInterned = Math.max(0, ...g.nodes.filter((n) => n.kind !== 'extern').map((n) => level.get(n.id) ?? 0));
  for (const n of g.nodes) if (n.kind === 'extern') level.set(n.id, maxInterned + 1);
  const rows: GraphNode[][] = [];
  for (const n of g.nodes) (rows[level.get(n.id) ?? 0] ??= []).push(n);
  const H = 34, VGAP = 46, HGAP = 18, PAD = 10, CH = 7.2;
  const width = (n: GraphNode) => Math.max(60, n.id.length * CH + 20);
  const pos = new Map<string, { x: number; y: number; w: number }>();
  let svgW = 0;
  rows.forEach((row, r) => {
    if (!row) return;
    let x = PAD;
    for (const n of row) {
      const w = width(n);
      pos.set(n.id, { x, y: PAD + r * (H + VGAP), w });
      x += w + HGAP;
    }
    svgW = Math.max(svgW, x - HGAP + PAD);
  });
  // centre each row
  rows.forEach((row) => {
    if (!row) return;
    const last = pos.get(row[row.length - 1].id)!;
    const shift = (svgW - (last.x + last.w + PAD)) / 2;
    for (const n of row) pos.get(n.id)!.x += shift;
  });
  const svgH = PAD * 2 + rows.length * H + Math.max(0, rows.length - 1) * VGAP;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" class="depgraph" width="${Math.ceil(svgW)}" height="${svgH}" viewBox="0 0 ${Math.ceil(svgW)} ${svgH}" role="img" aria-label="module dependency graph">`,
    '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#667"/></marker></defs>',
  ];
  for (const [a, b] of g.edges) {
    const p = pos.get(a), q = pos.get(b);
    if (!p || !q) continue;
    const down = q.y > p.y;
    const x1 = p.x + p.w / 2, y1 = down ? p.y + H : p.y;
    const x2 = q.x + q.w / 2, y2 = down ? q.y : q.y + H;
    parts.push(`<line x1="${x1.toFixed(1)}" y1="${y1}" x2="${x2.toFixed(1)}" y2="${y2}" stroke="#667" stroke-width="1.2" marker-end="url(#arrow)"/>`);
  }
  for (const n of g.nodes) {
    const p = pos.get(n.id)!;
    const fill = n.kind === 'block' ? '#ffe9b3' : n.kind === 'interned' ? '#dcecff' : '#eeeeee';
    const dash = n.kind === 'extern' ? ' stroke-dasharray="4 3"' : '';
    const title = `${n.id}${n.path ? ` (${n.path})` : ''}${n.kind === 'extern' ? ' — extern, imported' : ` — ${n.defs} copied range${n.defs === 1 ? '' : 's'}`}`;
    parts.push(
      `<g class="node ${n.kind}"><title>${escapeHtml(title)}</title><rect x="${p.x.toFixed(1)}" y="${p.y}" width="${p.w.toFixed(1)}" height="${H}" rx="6" fill="${fill}" stroke="#556"${dash}/>` +
        `<text x="${(p.x + p.w / 2).toFixed(1)}" y="${p.y + H / 2 + 4}" text-anchor="middle" font-family="monospace" font-size="12">${escapeHtml(n.id)}</text></g>`,
    );
  }
  parts.push('</svg>');
  return parts.join('');
}
