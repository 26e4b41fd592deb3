// `nnrag serve`: the local web catalog of the library. node:http only, bound to a loopback
// address; pages are rendered on the server (every stored string HTML-escaped; the one
// script is the copy buttons', allowed by its hash, the Content-Security-Policy forbids any
// other), plus a small JSON API.
//
//   GET /                     search box with filters, results
//   GET /block/<id>           block page: usage as validated, highlighted code (copy
//                             buttons), provenance, validation stages and the next step,
//                             spec, dependency graph (inline SVG), similar blocks
//   GET /block/<id>.py        the module as text
//   GET /api/search?q=…       SearchResult JSON (filters: repo, category, validated,
//                             min-params, max-params, limit, offset)
//   GET /api/block/<id>       {doc, spec, record, text, similar, graph}
//
// Requests whose Host header is not the loopback address the server listens on are
// refused (a web page elsewhere cannot reach the catalog through DNS rebinding).
import { nextStep } from '../library/advice.js';
import { validationsOf, type BlockRecord } from '../records/block.js';
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Workspace } from '../workspace.js';
import { getExtraction } from '../store/records.js';
import { storeValuePlaces } from '../validate/places.js';
import { storedSpec } from '../search/documents.js';
import type { SearchDoc } from '../records/search.js';
import { facets, getDoc, prepareSearch, searchBlocks, type SearchOptions, type SearchResult } from '../search/fts.js';
import { refreshSearch } from '../search/refresh.js';
import { similarBlocks, type SimilarHit } from '../search/similar.js';
import { NnragError } from '../util/errors.js';
import { distributionNames, importableFrom, moduleNameFor, plainUsage, usageImports } from '../export/export.js';
import { commentBlock } from '../util/python.js';
import { dependencyGraph, graphSvg } from './graph.js';
import { escapeHtml as esc, highlightPython } from './highlight.js';
import { initParser } from '../parse/parser.js';

export interface ServerOptions {
  ws?: Workspace;
  storeDir?: string;
  port?: number;
  host?: string;
  /** minimum milliseconds between two checks of the store for new extractions (default 0:
   *  every request; the check is O(1), see refreshSearch) */
  refreshMs?: number;
  /** the search's thresholds (SearchOptions large, totalCap, candidates; default the
   *  search's own): a test sets them low to exercise the large path on a small store */
  search?: Pick<SearchOptions, 'large' | 'totalCap' | 'candidates'>;
}

export interface CatalogServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

const CSS = `
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#fafbfc}
header{background:#1d2330;color:#fff;padding:10px 20px}header a{color:#fff;text-decoration:none;font-weight:600}
main{max-width:1100px;margin:0 auto;padding:16px 20px}
form.search{display:flex;flex-wrap:wrap;gap:8px;align-items:center;margin-bottom:14px}
form.search input[type=search]{flex:1 1 320px;font-size:16px;padding:6px 8px}
input,select,button{font-size:14px;padding:4px 6px}
.hit{background:#fff;border:1px solid #dde1e8;border-radius:6px;padding:8px 12px;margin:8px 0}
.hit .meta,.muted{color:#5a6272;font-size:13px}
.badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;margin-left:6px;background:#e4e7ee}
.badge.validated,.pass{background:#d6f5dd;color:#145c25}.badge.failed,.fail{background:#fbdada;color:#7a1414}.skip{background:#eee;color:#555}
table{border-collapse:collapse;margin:6px 0 14px}td,th{border:1px solid #dde1e8;padding:3px 8px;text-align:left;font-size:13px;vertical-align:top}
pre.code{background:#fff;border:1px solid #dde1e8;border-radius:6px;padding:10px;overflow:auto;font:13px/1.4 ui-monospace,monospace}
.code .k{color:#8b1fa9;font-weight:600}.code .k2{color:#0b5fa8}.code .s{color:#1a7f37}.code .c{color:#6e7781;font-style:italic}
.code .n{color:#b35900}.code .f{color:#0550ae;font-weight:600}.code .cl{color:#953800;font-weight:700}.code .d{color:#8250df}.code .b{color:#0b5fa8}
section{margin-bottom:18px}h2{font-size:17px;border-bottom:1px solid #dde1e8;padding-bottom:3px}
.graph{overflow:auto;background:#fff;border:1px solid #dde1e8;border-radius:6px;padding:6px}
code{font-family:ui-monospace,monospace;font-size:13px}
`;

// The one script of the catalog: copy buttons. The policy allows exactly this text (by
// its SHA-256, CSP Level 2 hash source), nothing else; the buttons only copy the text of
// the element they name, so no stored string ever reaches a script.
const COPY_SCRIPT =
  "document.addEventListener('click',function(e){var b=e.target.closest('button[data-copy]');if(!b)return;" +
  "var t=document.getElementById(b.getAttribute('data-copy'));if(!t)return;" +
  "navigator.clipboard.writeText(t.textContent).then(function(){b.textContent='Copied';setTimeout(function(){b.textContent='Copy'},1500)},function(){b.textContent='Copy failed'})});";
const COPY_SCRIPT_HASH = `sha256-${createHash('sha256').update(COPY_SCRIPT).digest('base64')}`;

/** What to do about a failure (library/advice.ts; shown on the block page). */
export { nextStep } from '../library/advice.js';

/** The block's verdict in each environment it was validated in (record.validations). */
function environmentsHtml(rec: Pick<BlockRecord, 'validation' | 'validations' | 'ok'>): string {
  const envs = Object.entries(validationsOf(rec));
  if (!envs.length) return '';
  const passed = envs.filter(([, e]) => e.ok).length;
  return (
    `<table id="environments"><tr><th>environment</th><th>id</th><th>verdict</th></tr>` +
    envs
      .map(
        ([id, e]) =>
          `<tr><td>${esc(e.label)}</td><td><code>${esc(id)}</code></td><td class="${e.ok ? 'pass' : 'fail'}">${e.ok ? 'passed' : `failed${e.category ? ` (${esc(e.category)})` : ''}`}</td></tr>`,
      )
      .join('') +
    `</table><p class="muted">validated in ${passed} of ${envs.length} environment${envs.length === 1 ? '' : 's'}</p>`
  );
}

/** A usage snippet (`import` lines, then the call) with its value bound to `y`. */
function usageLines(usage: string): string {
  const lines = usage.split('\n');
  lines.push(`y = ${lines.pop()}`);
  return lines.join('\n');
}

function page(title: string, body: string): string {
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(title)} · nnrag</title><meta name="viewport" content="width=device-width, initial-scale=1"><style>${CSS}</style></head>` +
    `<body><header><a href="/">nnrag catalog</a></header><main>${body}</main><script>${COPY_SCRIPT}</script></body></html>`
  );
}

const blockHref = (id: string) => `/block/${encodeURIComponent(id)}`;
// one formatter, made when the module loads: `n.toLocaleString('en-US')` makes one per call,
// and the first (ICU's locale data) cost a fresh catalog's first search page ~130 ms of CPU
// at 10^6 blocks. Number.prototype.toLocaleString(locales) is this formatter's format()
// (ECMA-402), so the text is the same.
const PARAMS_FORMAT = new Intl.NumberFormat('en-US');
const fmtParams = (n: number | null) => (n === null ? '?' : PARAMS_FORMAT.format(n));

/** A filter menu's options with none selected, by the facet's values (facets() gives the
 *  same array while the store is unchanged): a library of 10^3 repositories has 10^3
 *  options, escaped once instead of on every page. */
const plainOptions = new WeakMap<string[], string>();

function parseFilters(q: URLSearchParams): SearchOptions {
  const num = (k: string) => {
    const v = q.get(k);
    if (v === null || v.trim() === '') return undefined;
    const n = Number(v);
    return Number.isFinite(n) ? n : undefined;
  };
  return {
    repo: q.getAll('repo').filter(Boolean),
    category: q.getAll('category').filter(Boolean),
    validated: q.get('validated') === '1' || q.get('validated') === 'on' || q.get('validated') === 'true',
    minParams: num('min-params'),
    maxParams: num('max-params'),
    limit: num('limit') ?? 50,
    offset: num('offset') ?? 0,
    after: q.get('after') || undefined,
  };
}

function searchPage(store: Workspace['store'], q: URLSearchParams, thresholds: ServerOptions['search'] = {}): string {
  const query = q.get('q') ?? '';
  const f = { ...thresholds, ...parseFilters(q) };
  const res = searchBlocks(store, query, f);
  const fc = facets(store);
  const sel = (name: string, values: string[], chosen: string[] | string | undefined) => {
    const ch = new Set(Array.isArray(chosen) ? chosen : chosen ? [chosen] : []);
    const options = () =>
      values.map((v) => `<option value="${esc(v)}"${ch.has(v) ? ' selected' : ''}>${esc(v)}</option>`).join('');
    let html = ch.size ? undefined : plainOptions.get(values);
    if (html === undefined) {
      html = options();
      if (!ch.size) plainOptions.set(values, html);
    }
    return `<select name="${name}" aria-label="${name}"><option value="">any ${name}</option>${html}</select>`;
  };
  const form =
    `<form class="search" method="get" action="/" role="search">` +
    `<input type="search" name="q" value="${esc(query)}" placeholder="search blocks: window attention, conv bn, mlp …" autofocus aria-label="query">` +
    sel('repo', fc.repos, f.repo) +
    sel('category', fc.categories, f.category) +
    `<label><input type="checkbox" name="validated" value="1"${f.validated ? ' checked' : ''}> validated</label>` +
    `<input type="number" name="min-params" placeholder="min params" value="${f.minParams ?? ''}" min="0" style="width:8em" aria-label="min params">` +
    `<input type="number" name="max-params" placeholder="max params" value="${f.maxParams ?? ''}" min="0" style="width:8em" aria-label="max params">` +
    `<button type="submit">Search</button></form>`;
  let more = '';
  const shown = (f.offset ?? 0) + res.hits.length;
  // the blocks a next page can show: every match when browsing, the ranked ones otherwise
  const reachable = Math.min(res.total, res.ranked ?? res.total);
  if (reachable > shown) {
    const next = new URLSearchParams(q);
    // `offset` counts what was shown; browsing pages by `after` (keyset: a page deep in
    // the library costs what the first does)
    next.set('offset', String(shown));
    if (res.mode === 'browse' && res.last) next.set('after', res.last);
    more = `<p><a id="more" href="/?${esc(next.toString())}">next ${Math.min(f.limit ?? 50, reachable - shown)} of ${res.capped ? 'more than ' : ''}${res.total - shown} more</a></p>`;
  }
  return page(query || 'search', form + resultsHtml(res) + more);
}

function resultsHtml(res: SearchResult): string {
  const head = `<p class="muted" id="count">${res.capped ? 'more than ' : ''}${res.total} block${res.total === 1 && !res.capped ? '' : 's'}${res.mode === 'any' ? ' (matching some of the words)' : ''} · ${res.ms.toFixed(1)} ms</p>`;
  const hits = res.hits
    .map(
      (h) =>
        `<div class="hit"><a class="hit-link" href="${blockHref(h.id)}"><strong>${esc(h.name)}</strong></a> <code>${esc(h.id)}</code>` +
        `<span class="badge ${esc(h.status)}">${esc(h.status)}</span><span class="badge">${esc(h.category)}</span>` +
        `<div class="meta">${esc(h.origin.repo)}:${esc(h.origin.path)}:${h.origin.line} · ${fmtParams(h.params)} params${res.mode !== 'browse' ? ` · score ${h.score.toFixed(2)}` : ''}</div>` +
        (h.summary ? `<div>${esc(h.summary)}</div>` : '') +
        `</div>`,
    )
    .join('');
  return `<div id="results">${head}${hits}</div>`;
}

async function blockPage(store: Workspace['store'], id: string, hl: Map<string, string>): Promise<string | null> {
  const e = getExtraction(store, id);
  const doc = getDoc(store, id);
  if (!e || !doc) return null;
  const spec = storedSpec(store, id);
  const rec = e.record;
  let code = hl.get(e.hash);
  if (code === undefined) {
    code = await highlightPython(e.text);
    if (hl.size > 200) hl.clear();
    hl.set(e.hash, code);
  }
  let similar: SimilarHit[] = [];
  try {
    similar = similarBlocks(store, id, 8);
  } catch {
    /* no signature yet */
  }
  const o = doc.origin;
  const v = rec.validation;
  const sections: string[] = [];
  sections.push(
    `<h1 id="title">${esc(doc.name)}<span class="badge ${esc(doc.status)}" id="status">${esc(doc.status)}</span><span class="badge">${esc(doc.category)}</span></h1>` +
      `<p><code id="block-id">${esc(id)}</code></p>` +
      (doc.docstring ? `<p id="docstring">${esc(doc.docstring).replace(/\n\s*\n/g, '<br><br>')}</p>` : '') +
      `<p class="muted">${fmtParams(doc.params)} parameters · ${doc.lines} lines · <a href="${blockHref(id)}.py">module as text</a> · export: <code>nnrag export ${esc(id)} --into DIR</code></p>`,
  );
  // usage: the construction and call that passed validation
  // a line importing from an installed distribution is shown when the environments the
  // block passed in had that distribution (export pins it)
  const tested = Object.values(validationsOf(rec)).filter((x) => x.ok);
  // (its values name checkouts by place: shown with this machine's, to be copied and run)
  const recorded = (v as { usage?: string | null } | undefined)?.usage;
  const usage = plainUsage(
    recorded ? storeValuePlaces(store).localText(recorded) : recorded,
    importableFrom(distributionNames(tested.flatMap((x) => x.environment?.distributions ?? []))),
  );
  const usageSkipped = (v as { usageSkipped?: string } | undefined)?.usageSkipped;
  if (!usage && usageSkipped && doc.status === 'validated')
    sections.push(
      `<section id="usage"><h2>Usage</h2><p class="muted" id="usage-skipped">no usage line: ${esc(usageSkipped)}</p></section>`,
    );
  if (usage && doc.status === 'validated') {
    const modName = moduleNameFor(doc.name);
    sections.push(
      `<section id="usage"><h2>Usage <button type="button" id="copy-usage" data-copy="usage-code">Copy</button></h2>` +
        `<pre class="code"><code id="usage-code">${esc(`${commentBlock(`nnrag export ${id} --into . --module ${modName}`)}\n${usageImports(modName, doc.name, e.text, usage).join('\n')}\n\n${usageLines(usage)}`)}</code></pre>` +
        `<p class="muted">the arguments and input that passed validation</p>` +
        // a seeded line (usageCheck 'seeded'): why it seeds the random generators
        ((v as { usageCheck?: string } | undefined)?.usageCheck === 'seeded'
          ? `<p class="muted" id="usage-draws">the line seeds the random generators: ${esc((v as { usageDraws?: string }).usageDraws ?? 'another random draw fails')}</p>`
          : '') +
        // usage roots (resolve/closure.ts): definitions copied for this line only
        (e.record.emission.usageRoots?.length
          ? `<p class="muted" id="usage-roots">the module also defines ${e.record.emission.usageRoots.map((r) => `<code>${esc(r)}</code>`).join(', ')} for this line: the validated arguments name them, the block's code does not</p>`
          : '') +
        `</section>`,
    );
  }
  // provenance
  const origin = `${esc(o.repo)}:${esc(o.path)}:${o.line}${originUrlHtml(o.url)}${o.revision ? ` @ <code>${esc(o.revision)}</code>` : ''}`;
  sections.push(
    `<section id="provenance"><h2>Provenance</h2><p>Origin: ${origin}</p><table><tr><th>repository</th><th>module</th><th>path</th><th>lines</th><th>SWHID</th></tr>` +
      doc.provenance
        .map(
          (p) =>
            `<tr><td>${esc(p.repo)}${p.revision ? ` @ <code>${esc(p.revision.slice(0, 12))}</code>` : ''}</td><td><code>${esc(p.module)}</code></td><td><code>${esc(p.path)}</code></td>` +
            `<td>${p.ranges.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(', ')}</td><td><code class="swhid">${esc(p.swhid)}</code></td></tr>`,
        )
        .join('') +
      `</table></section>`,
  );
  // installed distributions the slim module imports instead of copying (issue 25: the
  // package boundary, src/emit/slim/packages.ts); export pins each to this version
  const pkgs = rec.emission?.packages ?? [];
  if (pkgs.length)
    sections.push(
      `<section id="packages"><h2>Installed packages it imports</h2><p class="muted">not copied: the validating environment had these distributions installed with the indexed files; <code>export</code> pins them</p>` +
        `<table><tr><th>distribution</th><th>version</th><th>repository</th><th>modules</th></tr>` +
        pkgs
          .map(
            (p) =>
              `<tr><td><code>${esc(p.distribution)}</code></td><td><code>${esc(p.version)}</code></td><td>${esc(p.repo)}</td><td>${p.modules.map((m) => `<code>${esc(m)}</code>`).join(', ')}</td></tr>`,
          )
          .join('') +
        `</table></section>`,
    );
  // validation
  const stages = doc.stages ?? v?.stages ?? null;
  sections.push(
    `<section id="validation"><h2>Validation</h2>` +
      (stages
        ? `<table><tr>${Object.keys(stages)
            .map((s) => `<th>${esc(s)}</th>`)
            .join('')}</tr><tr>${Object.values(stages)
            .map((r) => `<td class="${esc(r)}">${esc(r)}</td>`)
            .join('')}</tr></table>`
        : '<p class="muted">not validated</p>') +
      (v?.error ? `<p><strong>${esc(v.category ?? 'error')}</strong>: <code>${esc(v.error)}</code></p>` : '') +
      (v?.error || v?.category
        ? ((n) =>
            n
              ? `<p id="next-step"><strong>Next step:</strong> ${esc(n).replace(/`([^`]+)`/g, '<code>$1</code>')}</p>`
              : '')(nextStep(v, id))
        : '') +
      environmentsHtml(rec) +
      (v?.input_shapes
        ? `<p class="muted">input shapes <code>${esc(JSON.stringify(v.input_shapes))}</code> → output shapes <code>${esc(JSON.stringify(v.output_shapes))}</code>${v.args && Object.keys(v.args).length ? ` · constructor args <code>${esc(JSON.stringify(v.args))}</code>` : ''}</p>`
        : '') +
      `</section>`,
  );
  // spec
  const specRows: [string, string][] = spec
    ? [
        ['constructor', spec.init.map((p) => p.name + (p.default !== null ? `=${p.default}` : '')).join(', ')],
        ['forward', spec.forward.map((p) => p.name).join(', ')],
        ['bases', spec.bases.join(', ')],
        [
          'layers',
          Object.entries(spec.layers)
            .map(([k, n]) => `${k}×${n}`)
            .join(', '),
        ],
        ['dependencies', spec.dependencies.join(', ')],
        ['requirements', spec.requirements.join(', ')],
      ]
    : [
        ['constructor', doc.hyperparameters.join(', ')],
        ['forward', doc.forwardParams.join(', ')],
        ['bases', doc.bases.join(', ')],
        [
          'layers (constructed in the code)',
          Object.entries(doc.layers)
            .map(([k, n]) => `${k}×${n}`)
            .join(', '),
        ],
        ['dependencies', doc.dependencies.join(', ')],
        ['externs', doc.externs.join(', ')],
      ];
  sections.push(
    `<section id="spec"><h2>Spec</h2><table>${specRows.map(([k, val]) => `<tr><th>${esc(k)}</th><td><code>${esc(val || '—')}</code></td></tr>`).join('')}</table>` +
      (spec ? '' : '<p class="muted">derived from the extraction record (no stored spec)</p>') +
      `</section>`,
  );
  // dependency graph
  let svg = '';
  try {
    svg = graphSvg(dependencyGraph(rec));
  } catch (err) {
    svg = `<p class="muted">graph unavailable: ${esc((err as Error).message)}</p>`;
  }
  sections.push(`<section id="graph"><h2>Dependencies</h2><div class="graph">${svg}</div></section>`);
  // code
  sections.push(
    `<section id="code"><h2>Module <button type="button" id="copy-code" data-copy="code-text">Copy</button></h2><pre class="code"><code id="code-text">${code}</code></pre></section>`,
  );
  // similar
  sections.push(
    `<section id="similar"><h2>Similar blocks</h2>` +
      (similar.length
        ? `<table><tr><th>block</th><th>similarity</th><th>lexical</th><th>structural</th><th></th></tr>${similar
            .map(
              (s) =>
                `<tr><td><a href="${blockHref(s.id)}">${esc(s.id)}</a></td><td>${s.score.toFixed(3)}</td><td>${s.lexical.toFixed(3)}</td><td>${s.structural.toFixed(3)}</td><td>${s.duplicate ? esc(s.duplicate + ' duplicate') : ''}</td></tr>`,
            )
            .join('')}</table>`
        : '<p class="muted">none</p>') +
      `</section>`,
  );
  return page(doc.name, sections.join(''));
}

function send(res: http.ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, {
    'content-type': type,
    'content-length': Buffer.byteLength(body),
    'x-content-type-options': 'nosniff',
    'content-security-policy': `default-src 'none'; style-src 'unsafe-inline'; script-src '${COPY_SCRIPT_HASH}'; img-src data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'`,
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
  });
  res.end(body);
}

const json = (res: http.ServerResponse, status: number, data: unknown) =>
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(data));

/** Start the catalog; `port: 0` picks a free port. */
/** The origin URL of a block: a link only for http(s) (a javascript: or data: URL from
 *  a repository config would run in the catalog's page), else shown as text. */
export function originUrlHtml(url: string | null): string {
  if (!url) return '';
  if (/^https?:\/\//i.test(url)) return ` · <a href="${esc(url)}" rel="noreferrer">${esc(url)}</a>`;
  return ` · <code>${esc(url)}</code>`;
}

export async function startServer(opts: ServerOptions): Promise<CatalogServer> {
  const ownWs = !opts.ws;
  const ws = opts.ws ?? Workspace.open(opts.storeDir ?? '.nnrag');
  const store = ws.store;
  const host = opts.host ?? '127.0.0.1';
  const refreshMs = opts.refreshMs ?? 0;
  let lastRefresh = 0;
  const refresh = () => {
    const now = Date.now();
    if (now - lastRefresh >= refreshMs) {
      refreshSearch(store);
      lastRefresh = Date.now();
    }
  };
  refresh();
  // the search's per-store structures and the highlighter's parser, built before the first
  // request rather than by it
  const common = prepareSearch(store);
  // one search page of the commonest class-name part, rendered and dropped: the code of a
  // query and its page is compiled at the start, not by the first pages (each of the first
  // two paid ~40 ms of compilation at 10^6 blocks). Reads only; what it keeps (the word's
  // document frequency) is what its first query would keep
  if (common) searchPage(store, new URLSearchParams({ q: common }), opts.search);
  await initParser();
  const hl = new Map<string, string>();
  let allowedHosts = new Set<string>();

  const server = http.createServer((req, res) => {
    void (async () => {
      try {
        if (!allowedHosts.has((req.headers.host ?? '').toLowerCase()))
          return send(res, 421, 'text/plain; charset=utf-8', 'misdirected request: unknown Host\n');
        if (req.method !== 'GET' && req.method !== 'HEAD')
          return send(res, 405, 'text/plain; charset=utf-8', 'method not allowed\n');
        const url = new URL(req.url ?? '/', 'http://localhost');
        const p = url.pathname;
        refresh();
        if (p === '/' || p === '/index.html')
          return send(res, 200, 'text/html; charset=utf-8', searchPage(store, url.searchParams, opts.search));
        if (p === '/api/search')
          return json(
            res,
            200,
            searchBlocks(store, url.searchParams.get('q') ?? '', { ...opts.search, ...parseFilters(url.searchParams) }),
          );
        if (p.startsWith('/api/block/')) {
          const id = decodeURIComponent(p.slice('/api/block/'.length));
          const e = getExtraction(store, id);
          const doc: SearchDoc | null = getDoc(store, id);
          if (!e || !doc) return json(res, 404, { error: `no block ${id}` });
          return json(res, 200, {
            doc,
            spec: storedSpec(store, id),
            record: e.record,
            text: e.text,
            similar: similarBlocks(store, id, 8),
            graph: dependencyGraph(e.record),
          });
        }
        if (p.startsWith('/block/')) {
          let id = decodeURIComponent(p.slice('/block/'.length));
          if (id.endsWith('.py')) {
            id = id.slice(0, -3);
            const e = getExtraction(store, id);
            if (e) return send(res, 200, 'text/plain; charset=utf-8', e.text);
          }
          const html = await blockPage(store, id, hl);
          if (html) return send(res, 200, 'text/html; charset=utf-8', html);
          return send(
            res,
            404,
            'text/html; charset=utf-8',
            page('not found', `<p>No block <code>${esc(id)}</code>.</p>`),
          );
        }
        return send(res, 404, 'text/html; charset=utf-8', page('not found', '<p>Not found.</p>'));
      } catch (err) {
        // a malformed %-escape in the path is the client's error, not ours
        if (err instanceof URIError)
          return send(res, 400, 'text/plain; charset=utf-8', 'bad request: malformed %-escape in the URL\n');
        const msg = err instanceof NnragError ? err.message : `internal error: ${(err as Error).message}`;
        if (!res.headersSent) send(res, 500, 'text/plain; charset=utf-8', msg + '\n');
        else res.end();
      }
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => {
      if (ownWs) ws.close();
      const why =
        e.code === 'EADDRINUSE'
          ? 'is already in use (another nnrag serve? pick one with --port)'
          : e.code === 'EACCES'
            ? 'needs privileges'
            : e.message;
      reject(new NnragError(`cannot listen on ${host}:${opts.port ?? 0}: the port ${why}`, 'serve'));
    });
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  allowedHosts = new Set([`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]);
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${port}/`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          if (ownWs) ws.close();
          resolve();
        });
      }),
  };
}
