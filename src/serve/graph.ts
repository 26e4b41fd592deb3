// The dependency picture of a block for the web catalog: the modules whose definitions
// were copied into the block (provenance entries) and the extern packages it imports,
// with the module edges extraction recorded (`moduleGraph` of the block record, computed
// from the closure by emit/graph.ts), drawn as inline SVG. Nothing is derived here: a
// record stored before the edges were recorded draws its modules without edges and says
// so (extract the block again to record them).
import type { BlockRecord } from '../records/block.js';
import { parseBlockId } from '../discover/ids.js';
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
  /** false: the record has no module edges (stored before they were recorded) */
  recorded: boolean;
}

/** The graph of a block record: its modules and extern packages, the recorded edges. */
export function dependencyGraph(rec: BlockRecord): DependencyGraph {
  const module = rec.source?.module ?? parseBlockId(rec.id).module;
  const nodes = new Map<string, GraphNode>();
  for (const p of rec.provenance)
    nodes.set(p.module, {
      id: p.module,
      kind: p.module === module ? 'block' : 'interned',
      defs: p.ranges.length,
      path: `${p.repo}:${p.path}`,
    });
  if (!nodes.has(module))
    nodes.set(module, {
      id: module,
      kind: 'block',
      defs: 1,
      path: rec.source ? `${rec.source.repo}:${rec.source.path}` : null,
    });
  const edges = new Set<string>();
  const g = rec.moduleGraph;
  for (const [a, b] of g?.interned ?? []) if (nodes.has(a) && nodes.has(b)) edges.add(`${a}\u0000${b}`);
  for (const x of new Set(rec.externs.map((e) => e.split('.')[0]))) {
    if (nodes.has(x)) continue; // a package both interned and imported: drawn once, as interned
    nodes.set(x, { id: x, kind: 'extern', defs: 0, path: null });
  }
  for (const [a, x] of g?.extern ?? [])
    if (nodes.get(x)?.kind === 'extern' && nodes.has(a)) edges.add(`${a}\u0000${x}`);
  return {
    nodes: [...nodes.values()],
    edges: [...edges].map((k) => k.split('\u0000') as [string, string]),
    recorded: !!g,
  };
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
  const H = 34,
    VGAP = 46,
    HGAP = 18,
    PAD = 10,
    CH = 7.2;
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
    const p = pos.get(a),
      q = pos.get(b);
    if (!p || !q) continue;
    const down = q.y > p.y;
    const x1 = p.x + p.w / 2,
      y1 = down ? p.y + H : p.y;
    const x2 = q.x + q.w / 2,
      y2 = down ? q.y : q.y + H;
    parts.push(
      `<line x1="${x1.toFixed(1)}" y1="${y1}" x2="${x2.toFixed(1)}" y2="${y2}" stroke="#667" stroke-width="1.2" marker-end="url(#arrow)"><title>${escapeHtml(`${a} → ${b}`)}</title></line>`,
    );
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
  if (!g.recorded)
    parts.push(
      '<p class="muted" id="graph-not-recorded">module edges not recorded: this block was extracted before nnrag recorded them; extract it again to draw them</p>',
    );
  return parts.join('');
}
