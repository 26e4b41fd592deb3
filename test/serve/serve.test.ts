// The web catalog: server-side highlighting (escaped, text preserved), the dependency
// picture, the JSON API, loopback/Host checks, escaping of hostile stored text, and an
// end-to-end test in headless Chromium (Debian's /usr/bin/chromium driven by
// playwright-core; no browser is downloaded) that searches, opens a block and checks
// that its code and provenance are shown.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { IndexStore } from '../../src/store/store.js';
import { deleteExtraction, getExtraction, putExtraction, textHash } from '../../src/store/records.js';
import { dependencyGraph, graphSvg } from '../../src/serve/graph.js';
import { escapeHtml, highlightPython } from '../../src/serve/highlight.js';
import { nextStep, originUrlHtml, startServer, type CatalogServer } from '../../src/serve/server.js';
import { createHash } from 'node:crypto';
import { repoRoot, tempDir } from '../helpers.js';
import { needsSandbox } from '../support/tier.js';
import { buildExampleLibrary } from '../search/library-fixture.js';

const CHROMIUM = '/usr/bin/chromium';
const bin = path.join(repoRoot, 'dist', 'src', 'cli', 'bin.js');
const WA = 'tinyvision.layers.attention.WindowAttention';

const unescapeHtml = (s: string) =>
  s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');

describe('highlighting', () => {
  test('every character of the source survives, escaped, with token classes', async () => {
    const src =
      'import torch  # x < y & z\n\n@dec\nclass A(nn.Module):\n    """Doc <b>"""\n    def f(self, x=1.5):\n        return x if x > 2 else None  # ünïcode\n';
    const html = await highlightPython(src);
    assert.equal(unescapeHtml(html.replace(/<\/?span[^>]*>/g, '')), src);
    assert.ok(!/<(?!\/?span)/.test(html), 'no tags but spans');
    assert.match(html, /<span class="k">class<\/span> <span class="cl">A<\/span>/);
    assert.match(html, /<span class="k">def<\/span> <span class="f">f<\/span>/);
    assert.match(html, /<span class="s">&quot;&quot;&quot;Doc &lt;b&gt;&quot;&quot;&quot;<\/span>/);
    assert.match(html, /<span class="c"># x &lt; y &amp; z<\/span>/);
    assert.match(html, /<span class="n">1\.5<\/span>/);
    assert.match(html, /<span class="k2">None<\/span>/);
    assert.equal(escapeHtml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });
});

function get(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    http
      // a connection per request: a kept-alive socket the server closed after its idle
      // timeout (5 s, longer than a loaded machine takes between two tests) gave ECONNRESET
      .get(url, { headers, agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
      })
      .on('error', reject);
  });
}

describe('catalog server', { skip: needsSandbox() }, () => {
  let dir: string;
  let server: CatalogServer;
  before(async () => {
    dir = await buildExampleLibrary();
    // a block whose docstring tries to inject markup
    const store = IndexStore.open(dir);
    const mlp = getExtraction(store, 'tinyvision.models.mixer.Mlp')!;
    const text = mlp.text.replace(
      /class Mlp\(nn\.Module\):\n(\s+)"""/,
      'class Mlp(nn.Module):\n$1"""<script>alert(1)</script> <img src=x onerror=alert(2)> ',
    );
    assert.notEqual(text, mlp.text);
    putExtraction(store, { ...mlp, id: 'evil.mod.Mlp', text, hash: textHash(text) });
    store.close();
    server = await startServer({ storeDir: dir, port: 0 });
  });
  after(async () => {
    await server?.close();
  });

  test('a malformed %-escape is a bad request (400), not a server error', async () => {
    for (const p of ['block/%E0%A4%A', 'api/block/%zz', 'block/%']) {
      const r = await get(server.url + p);
      assert.equal(r.status, 400, `${p}: ${r.status} ${r.body}`);
    }
  });

  test('only http(s) origin URLs become links', () => {
    assert.match(originUrlHtml('https://github.com/o/r'), /<a href="https:\/\/github.com\/o\/r"/);
    for (const u of ['javascript:alert(1)', 'JavaScript:alert(1)', 'data:text/html,x', ' javascript:alert(1)']) {
      const h = originUrlHtml(u);
      assert.ok(!h.includes('<a'), h);
      assert.ok(h.includes('<code>'), h);
    }
  });

  test('a port in use is a clear error, not a stack trace', async () => {
    const port = Number(new URL(server.url).port);
    await assert.rejects(startServer({ storeDir: dir, port }), /already in use/);
    const r = spawnSync(process.execPath, [bin, 'serve', '--port', String(port), '--store', dir], {
      encoding: 'utf8',
      timeout: 20000,
    });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /already in use/);
    assert.ok(!/\n\s+at /.test(r.stderr), r.stderr);
  });

  test('stats and serve refuse a store that does not exist, and create nothing', () => {
    const missing = path.join(tempDir(), 'typo');
    for (const args of [['stats'], ['serve', '--port', '0']]) {
      const r = spawnSync(process.execPath, [bin, ...args, '--store', missing], { encoding: 'utf8', timeout: 20000 });
      assert.equal(r.status, 1, `${args[0]}: ${r.stderr}`);
      assert.match(r.stderr, /no nnrag store/);
      assert.equal(existsSync(missing), false);
    }
  });

  test('bound to loopback; other Host headers are refused', async () => {
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    const ok = await get(server.url);
    assert.equal(ok.status, 200);
    assert.match(ok.headers['content-security-policy'] as string, /default-src 'none'/);
    const rebound = await get(server.url, { Host: 'attacker.example:80' });
    assert.equal(rebound.status, 421);
  });

  test('JSON API: search and block', async () => {
    const s = JSON.parse((await get(`${server.url}api/search?q=window+attention`)).body);
    assert.equal(s.hits[0].id, WA);
    const f = JSON.parse((await get(`${server.url}api/search?q=&category=convolution&validated=1`)).body);
    assert.ok(
      f.hits.length >= 3 &&
        f.hits.every(
          (h: { category: string; status: string }) => h.category === 'convolution' && h.status === 'validated',
        ),
    );
    const b = JSON.parse((await get(`${server.url}api/block/${encodeURIComponent(WA)}`)).body);
    assert.equal(b.doc.id, WA);
    assert.match(b.text, /class WindowAttention\(Attention\):/);
    assert.ok(b.similar.length > 0);
    assert.ok(b.graph.nodes.some((n: { id: string; kind: string }) => n.id === 'torch' && n.kind === 'extern'));
    assert.equal((await get(`${server.url}api/block/no.such.Block`)).status, 404);
    assert.equal((await get(`${server.url}block/no.such.Block`)).status, 404);
    const raw = await get(`${server.url}block/${encodeURIComponent(WA)}.py`);
    assert.equal(raw.status, 200);
    assert.match(raw.headers['content-type'] as string, /^text\/plain/);
  });

  test('filter menus show a selection on its page only; parameter counts are en-US, from one formatter', async () => {
    // the search page formats counts with one Intl.NumberFormat (a toLocaleString per count
    // made a formatter each, the first ~130 ms at 10^6 blocks) and renders a menu's
    // unselected options once per facet list
    const toLocale = Number.prototype.toLocaleString;
    let calls = 0;
    Number.prototype.toLocaleString = function (this: number, ...a: Parameters<typeof toLocale>) {
      calls++;
      return toLocale.apply(this, a);
    };
    const noMs = (html: string) => html.replace(/ · [\d.]+ ms/, '');
    try {
      const plain = (await get(`${server.url}?q=attention`)).body;
      assert.match(plain, /\d,\d{3} params/);
      const repos = [...plain.matchAll(/<option value="([^"]+)">/g)].map((m) => m[1]);
      assert.ok(repos.length > 0);
      const chosen = (await get(`${server.url}?q=attention&repo=${encodeURIComponent(unescapeHtml(repos[0]))}`)).body;
      assert.ok(chosen.includes(`<option value="${repos[0]}" selected>`));
      const again = (await get(`${server.url}?q=attention`)).body;
      assert.ok(!again.includes(' selected>'));
      assert.equal(noMs(again), noMs(plain));
      assert.equal(calls, 0, 'no toLocaleString per count');
    } finally {
      Number.prototype.toLocaleString = toLocale;
    }
  });

  test('stored text is escaped in pages', async () => {
    const page = await get(`${server.url}block/evil.mod.Mlp`);
    assert.equal(page.status, 200);
    assert.ok(!page.body.includes('<script>alert(1)</script>'));
    assert.ok(!page.body.includes('<img src=x'));
    assert.match(page.body, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
    const results = await get(`${server.url}?q=${encodeURIComponent('"><script>x</script>')}`);
    assert.ok(!results.body.includes('<script>x</script>'));
  });

  test("the only script a page may run is the copy buttons', by its hash", async () => {
    const res = await new Promise<{ csp: string; body: string }>((resolve, reject) =>
      http
        .get(`${server.url}block/${WA}`, (r) => {
          let body = '';
          r.on('data', (d) => (body += d));
          r.on('end', () => resolve({ csp: String(r.headers['content-security-policy']), body }));
        })
        .on('error', reject),
    );
    const scripts = [...res.body.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]);
    assert.equal(scripts.length, 1);
    const hash = createHash('sha256').update(scripts[0]).digest('base64');
    const scriptSrc = /(?:^|; )script-src ([^;]*)/.exec(res.csp)?.[1];
    assert.equal(scriptSrc, `'sha256-${hash}'`, 'exactly that script, no unsafe-inline, no other source');
  });

  test('a failure says what to do next, and only steps that work', () => {
    // without the environment's verdict no package name is guessed: doctor is asked
    const unknown = nextStep(
      { category: 'missing-extern', error: "ModuleNotFoundError: No module named 'einops'" },
      'x.Y',
    )!;
    assert.match(unknown, /`einops`.*nnrag doctor --store S.*nnrag validate x\.Y --force/);
    assert.doesNotMatch(unknown, /apt-get/);
    const miss = {
      module: 'kornia_rs',
      distribution: 'kornia-rs',
      debian: 'python3-kornia-rs',
      candidate: null,
      installed: false,
      verdict: 'no-package' as const,
    };
    const none = nextStep({ category: 'missing-extern', error: "No module named 'kornia_rs'", missing: miss })!;
    assert.doesNotMatch(none, /apt-get install/, 'a package Debian does not have is never recommended');
    assert.match(none, /Debian has no package.*nnrag env create DIR --store S.*--wheels.*--env DIR.*--python/);
    const has = nextStep({
      category: 'missing-extern',
      error: "No module named 'einops'",
      missing: {
        ...miss,
        module: 'einops',
        distribution: 'einops',
        debian: 'python3-einops',
        candidate: '0.8.1-1',
        verdict: 'lacks',
      },
    })!;
    assert.match(has, /apt-get install python3-einops` \(Debian 0\.8\.1-1\)/);
    // a torch API another torch version has: the repository's declared torch is named
    const tv = nextStep({
      category: 'torch-version',
      error: "AttributeError: module 'torch' has no attribute 'compiler'",
      torchRequired: { spec: 'torch>=2.0', file: 'setup.py', line: 12 },
    })!;
    assert.match(
      tv,
      /lacks `compiler`; the repository declares `torch>=2\.0` \(setup\.py:12\).*nnrag env create DIR --store S/,
    );
    assert.match(
      nextStep({
        category: 'runtime-error',
        error: "TypeError: __init__() got an unexpected keyword argument 'bias' (torch.nn.LayerNorm)",
      })!,
      /nnrag env create DIR --store S.*--env DIR/,
    );
    assert.match(
      nextStep({ category: 'needs-args', error: 'TypeError: missing 1 required positional argument' })!,
      /--args/,
    );
    assert.match(nextStep({ category: 'forward-shape', error: 'RuntimeError: shape mismatch' })!, /--input-shape/);
    assert.match(nextStep({ category: 'timeout', error: 'no answer' })!, /--timeout/);
    assert.equal(nextStep({ category: null, error: null }), null);
    assert.equal(nextStep(null), null);
  });

  test('the dependency graph is the module edges extraction recorded, and the block page draws them', async () => {
    const BN = 'tinyvision.models.resnet.Bottleneck';
    const store = IndexStore.open(dir);
    let rec;
    try {
      rec = getExtraction(store, BN)!.record;
    } finally {
      store.close();
    }
    // recorded at extraction, from the closure (emit/graph.ts)
    const g0 = rec.moduleGraph!;
    const has = (l: [string, string][], a: string, b: string) => l.some(([x, y]) => x === a && y === b);
    // resnet reads BaseModule (from tinybase.module import …) and make_divisible (helpers.make_divisible)
    assert.ok(has(g0.interned, 'tinyvision.models.resnet', 'tinybase.module'), JSON.stringify(g0));
    assert.ok(has(g0.interned, 'tinyvision.models.resnet', 'tinyvision.layers.helpers'), JSON.stringify(g0));
    // the ConvBnAct default argument comes through the tinyvision.layers package re-export:
    // the edge goes to the module that defines it
    assert.ok(has(g0.interned, 'tinyvision.models.resnet', 'tinyvision.layers.conv'), JSON.stringify(g0));
    assert.ok(
      !has(g0.interned, 'tinyvision.models.resnet', 'tinyvision.layers'),
      'a re-exporting package is not a definer',
    );
    // `import torch.nn as nn` in resnet, and in the modules it copies from
    assert.ok(has(g0.extern, 'tinyvision.models.resnet', 'torch'), JSON.stringify(g0));
    assert.ok(has(g0.extern, 'tinyvision.layers.conv', 'torch'), JSON.stringify(g0));
    // the catalog only draws them: every recorded edge, nothing else
    const g = dependencyGraph(rec);
    assert.equal(g.recorded, true);
    assert.deepEqual(
      new Set(g.edges.map((e) => e.join(' → '))),
      new Set([...g0.interned, ...g0.extern].map((e) => e.join(' → '))),
    );
    const ids = g.nodes.map((n) => n.id);
    assert.ok(
      ids.includes('tinyvision.models.resnet') &&
        ids.includes('tinyvision.layers.helpers') &&
        ids.includes('tinybase.module') &&
        ids.includes('torch'),
      ids.join(),
    );
    const svg = graphSvg(g);
    assert.match(svg, /^<svg [^>]*role="img"/);
    assert.equal((svg.match(/<g class="node/g) ?? []).length, g.nodes.length);
    assert.equal((svg.match(/<line /g) ?? []).length, g.edges.length);
    // the block page shows them
    const page = await get(`${server.url}block/${BN}`);
    assert.equal(page.status, 200);
    for (const [a, b] of [...g0.interned, ...g0.extern])
      assert.ok(page.body.includes(`<title>${escapeHtml(`${a} → ${b}`)}</title>`), `${a} → ${b} drawn`);
    assert.ok(!page.body.includes('graph-not-recorded'));
  });

  test('a record stored before module edges were recorded draws its modules, without edges, and says so', async () => {
    const store = IndexStore.open(dir);
    try {
      const e = getExtraction(store, 'tinyvision.models.resnet.Bottleneck')!;
      const { moduleGraph: _dropped, ...old } = e.record;
      putExtraction(store, { ...e, id: 'old.mod.Bottleneck', record: { ...old, id: 'old.mod.Bottleneck' } });
      const g = dependencyGraph(getExtraction(store, 'old.mod.Bottleneck')!.record);
      assert.equal(g.recorded, false);
      assert.deepEqual(g.edges, []);
      assert.ok(g.nodes.length >= 4);
      assert.match(graphSvg(g), /id="graph-not-recorded"[^>]*>module edges not recorded: .*extract it again/);
    } finally {
      store.close();
    }
    try {
      const page = await get(`${server.url}block/old.mod.Bottleneck`);
      assert.equal(page.status, 200);
      assert.match(page.body, /module edges not recorded/);
    } finally {
      // the other tests see the library as it was
      const s2 = IndexStore.open(dir);
      deleteExtraction(s2, 'old.mod.Bottleneck');
      s2.close();
    }
  });

  test('a slim block that imports installed distributions lists them with their versions (escaped)', async () => {
    const store = IndexStore.open(dir);
    const wa = getExtraction(store, WA)!;
    const id = 'pkgs.slim.WindowAttention';
    const packages = [
      {
        distribution: 'tinybase',
        version: '1.2.0',
        repo: 'acme/tinybase',
        modules: ['tinybase.model', 'tinybase.registry'],
      },
      { distribution: '<b>evil</b>', version: '0.1', repo: 'x/y', modules: ['evil'] },
    ];
    try {
      putExtraction(store, { ...wa, id, record: { ...wa.record, id, emission: { ...wa.record.emission, packages } } });
    } finally {
      store.close();
    }
    try {
      const page = await get(`${server.url}block/${id}`);
      assert.equal(page.status, 200);
      const section = /<section id="packages">([\s\S]*?)<\/section>/.exec(page.body)?.[1] ?? '';
      assert.match(section, /<code>tinybase<\/code><\/td><td><code>1\.2\.0<\/code><\/td><td>acme\/tinybase<\/td>/);
      assert.match(section, /<code>tinybase\.model<\/code>, <code>tinybase\.registry<\/code>/);
      assert.ok(
        section.includes('&lt;b&gt;evil&lt;/b&gt;') && !section.includes('<b>evil'),
        'stored names are escaped',
      );
      const plain = await get(`${server.url}block/${WA}`);
      assert.ok(
        !plain.body.includes('id="packages"'),
        'a block that imports no installed distribution has no such section',
      );
    } finally {
      const s2 = IndexStore.open(dir);
      deleteExtraction(s2, id);
      s2.close();
    }
  });

  test('the usage section shows only snippets of the renderer: import lines, then y = the call; a pasted one is not shown', async () => {
    const store = IndexStore.open(dir);
    const wa = getExtraction(store, WA)!;
    const put = (id: string, usage: string, usageRoots?: string[]) =>
      putExtraction(store, {
        ...wa,
        id,
        record: {
          ...wa.record,
          id,
          validation: { ...wa.record.validation!, usage },
          emission: { ...wa.record.emission, ...(usageRoots ? { usageRoots } : {}) },
        },
      });
    const plain =
      'import functools\nWindowAttention(norm=functools.partial(torch.nn.LayerNorm, eps=1e-06), tag="a\\nb")(torch.randn(2, 10, 32))';
    const pasted = "WindowAttention(tag='x'\nopen('/tmp/pwned', 'w').write('1')\n#')(torch.randn(2, 10, 32))";
    try {
      put('usage.plain.WindowAttention', plain);
      put('usage.pasted.WindowAttention', pasted);
      // an object made without its constructor, a definition copied for the line (issue 26)
      put(
        'usage.roots.WindowAttention',
        'value1 = Spec.__new__(Spec)\nvalue1.dim = 32\nWindowAttention(value1, norm=FrozenNorm)(torch.randn(2, 10, 32))',
        ['norms.FrozenNorm<b>'],
      );
    } finally {
      store.close();
    }
    try {
      const ok = await get(`${server.url}block/usage.plain.WindowAttention`);
      assert.equal(ok.status, 200);
      const code = unescapeHtml(/<code id="usage-code">([\s\S]*?)<\/code>/.exec(ok.body)![1]);
      assert.match(
        code,
        /\nimport torch\nfrom window_attention import \*\n\nimport functools\ny = WindowAttention\(norm=functools\.partial/,
      );
      const bad = await get(`${server.url}block/usage.pasted.WindowAttention`);
      assert.equal(bad.status, 200);
      assert.ok(!bad.body.includes('id="usage"'), 'a snippet pasted from repr() is not shown as code');
      assert.ok(!bad.body.includes('/tmp/pwned'));
      assert.ok(!ok.body.includes('id="usage-roots"'), 'no roots, no note');
      const rooted = await get(`${server.url}block/usage.roots.WindowAttention`);
      assert.equal(rooted.status, 200);
      const code2 = unescapeHtml(/<code id="usage-code">([\s\S]*?)<\/code>/.exec(rooted.body)![1]);
      assert.match(
        code2,
        /\n\nvalue1 = Spec\.__new__\(Spec\)\nvalue1\.dim = 32\ny = WindowAttention\(value1, norm=FrozenNorm\)/,
      );
      assert.match(
        rooted.body,
        /<p class="muted" id="usage-roots">the module also defines <code>norms\.FrozenNorm&lt;b&gt;<\/code> for this line/,
      );
    } finally {
      const s2 = IndexStore.open(dir);
      deleteExtraction(s2, 'usage.plain.WindowAttention');
      deleteExtraction(s2, 'usage.pasted.WindowAttention');
      deleteExtraction(s2, 'usage.roots.WindowAttention');
      s2.close();
    }
  });

  test('a line importing from an installed distribution is shown when the environment had it; a block without a line says why', async () => {
    const store = IndexStore.open(dir);
    const wa = getExtraction(store, WA)!;
    const v = wa.record.validation!;
    const env = (d: string[]) => ({
      ...(v.environment ?? { id: v.envId, label: 'x', python: '3', torch: '2' }),
      distributions: d,
    });
    const put = (id: string, validation: typeof v) =>
      putExtraction(store, {
        ...wa,
        id,
        record: { ...wa.record, id, validation, validations: undefined, ok: true },
      });
    const line = 'from tinylayers import Scale\nWindowAttention(Scale(8))(torch.randn(2, 10, 32))';
    try {
      put('usage.installed.WindowAttention', {
        ...v,
        usage: line,
        environment: env(['tinylayers==0.3', 'torch==2.1']),
      });
      put('usage.notpinned.WindowAttention', { ...v, usage: line, environment: env(['torch==2.1']) });
      put('usage.skipped.WindowAttention', {
        ...v,
        usage: null,
        usageSkipped: 'NotInModule: acme.Gate<b> is not a name of the module',
      });
    } finally {
      store.close();
    }
    try {
      const ok = await get(`${server.url}block/usage.installed.WindowAttention`);
      assert.equal(ok.status, 200);
      const code = unescapeHtml(/<code id="usage-code">([\s\S]*?)<\/code>/.exec(ok.body)![1]);
      assert.match(code, /\n\nfrom tinylayers import Scale\ny = WindowAttention\(Scale\(8\)\)/);
      const off = await get(`${server.url}block/usage.notpinned.WindowAttention`);
      assert.ok(
        !off.body.includes('id="usage-code"'),
        'an import of a distribution the environment did not have is not shown',
      );
      const skipped = await get(`${server.url}block/usage.skipped.WindowAttention`);
      assert.match(
        skipped.body,
        /<p class="muted" id="usage-skipped">no usage line: NotInModule: acme\.Gate&lt;b&gt; is not a name/,
      );
      assert.ok(!ok.body.includes('id="usage-skipped"'));
    } finally {
      const s2 = IndexStore.open(dir);
      for (const id of ['installed', 'notpinned', 'skipped']) deleteExtraction(s2, `usage.${id}.WindowAttention`);
      s2.close();
    }
  });

  test('nnrag serve: one command, loopback URL on stdout with --json, exits 0 on SIGINT', async () => {
    const child = spawn('node', [bin, 'serve', '--port', '0', '--json', '--store', dir], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.setEncoding('utf8');
        child.stdout.on('data', (c: string) => {
          out += c;
          const line = out.split('\n').find((l) => l.startsWith('{'));
          if (line && out.includes('\n')) resolve(JSON.parse(line).url);
        });
        child.once('exit', (code) => reject(new Error(`serve exited early with ${code}`)));
      });
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
      const s = JSON.parse((await get(`${url}api/search?q=conv+bn+act`)).body);
      assert.equal(s.hits[0].id, 'tinyvision.layers.conv.ConvBnAct');
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGINT');
      assert.equal(await exited, 0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    const bad = spawnSync('node', [bin, 'serve', '--host', '0.0.0.0', '--store', dir], { encoding: 'utf8' });
    assert.equal(bad.status, 2, 'only loopback addresses');
  });

  test('end to end in headless Chromium: search, open a block, code and provenance shown', async (t) => {
    if (!existsSync(CHROMIUM)) {
      t.skip(`${CHROMIUM} is not installed (apt-get install chromium); browser test skipped`);
      return;
    }
    const { chromium } = await import('playwright-core');
    // a fresh profile folder (playwright passes it as --user-data-dir)
    const browser = await chromium.launchPersistentContext(tempDir('nnrag-chromium-'), {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    try {
      const page = browser.pages()[0] ?? (await browser.newPage());
      await page.goto(server.url);
      await page.fill('input[name=q]', 'window attention');
      await Promise.all([page.waitForURL(/\?q=window\+attention/), page.press('input[name=q]', 'Enter')]);
      const first = page.locator('#results .hit-link').first();
      assert.equal(await first.textContent(), 'WindowAttention');
      await Promise.all([page.waitForURL(/\/block\//), first.click()]);
      assert.equal(await page.locator('#block-id').textContent(), WA);
      assert.equal(await page.locator('#status').textContent(), 'validated');
      const code = await page.locator('#code pre').textContent();
      assert.match(code ?? '', /class WindowAttention\(Attention\):/);
      assert.match(code ?? '', /def window_partition\(x, window_size\):/);
      assert.ok((await page.locator('#code span.cl').count()) >= 2, 'class names highlighted');
      // the usage that passed validation, and copy buttons (the one script the policy allows)
      const usage = await page.locator('#usage-code').textContent();
      assert.match(usage ?? '', /from window_attention import \*/);
      assert.match(usage ?? '', /y = WindowAttention\(.*\)\(torch\.randn\(/);
      await browser.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
      await page.click('#copy-usage');
      await page.locator('#copy-usage', { hasText: 'Copied' }).waitFor();
      assert.equal(await page.evaluate(() => navigator.clipboard.readText()), usage);
      await page.click('#copy-code');
      assert.match(await page.evaluate(() => navigator.clipboard.readText()), /class WindowAttention\(Attention\):/);
      const prov = await page.locator('#provenance').textContent();
      assert.match(prov ?? '', /tinyvision\/layers\/attention\.py/);
      assert.match(prov ?? '', /swh:1:cnt:[0-9a-f]{40}/);
      assert.ok((await page.locator('#validation td.pass').count()) >= 5);
      // the environments it was validated in, each with its verdict
      const envs = (await page.locator('#environments').textContent()) ?? '';
      const st = IndexStore.open(dir);
      const env = getExtraction(st, WA)!.record.validation!.environment!;
      st.close();
      assert.ok(envs.includes(env.label) && envs.includes(env.id), envs);
      assert.match(envs, /passed/);
      assert.equal(await page.locator('#graph svg').count(), 1);
      assert.ok((await page.locator('#similar a').count()) > 0);
      // filters through the form: category select + validated checkbox
      await page.goto(server.url);
      await page.selectOption('select[name=category]', 'convolution');
      await page.check('input[name=validated]');
      await Promise.all([page.waitForURL(/category=convolution/), page.click('button[type=submit]')]);
      const names = await page.locator('#results .hit-link').allTextContents();
      assert.ok(names.includes('ConvBnAct') && !names.includes('WindowAttention'), names.join());
      // a failed block says what to do next
      await page.goto(`${server.url}block/tinyvision.models.wrappers.FeatureTap`);
      const next = (await page.locator('#next-step').textContent()) ?? '';
      assert.match(next, /Next step: .*constructor/);
      assert.match(
        next,
        /nnrag validate tinyvision\.models\.wrappers\.FeatureTap --force --args/,
        'the step names the block and the flag that gives the arguments',
      );
      assert.equal(await page.locator('#usage').count(), 0, 'no usage for a block that did not run');
    } finally {
      await browser.close();
    }
  });
});
