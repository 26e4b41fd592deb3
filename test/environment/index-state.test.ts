// The index state a resolution's reuse depends on (src/environment/index-state.ts), read
// from a PEP 691 index served here on 127.0.0.1 whose pages the test changes: the same
// files give the same state, and a file added (even an old one), yanked or uploaded after
// the state's time, a page without upload times or a missing page, do not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { forgetIndexPages, indexState, uvIndexUrl } from '../../src/environment/index-state.js';

type File = { filename: string; 'upload-time'?: string; yanked?: boolean };

test('an index state is the same exactly while the files of its distributions are', async () => {
  const pages = new Map<string, File[]>([
    [
      'acme-a',
      [
        { filename: 'acme_a-1.0-py3-none-any.whl', 'upload-time': '2020-01-01T00:00:00.000000Z' },
        { filename: 'acme_a-1.0.tar.gz', 'upload-time': '2020-01-01T00:00:00.000000Z' },
      ],
    ],
    ['acme-b', [{ filename: 'acme_b-2.0-py3-none-any.whl', 'upload-time': '2021-06-01T00:00:00Z' }]],
  ]);
  const server = http.createServer((rq, rs) => {
    const name = /^\/simple\/([^/]+)\/$/.exec(rq.url ?? '')?.[1];
    const files = name ? pages.get(name) : undefined;
    if (!files) {
      rs.writeHead(404);
      rs.end();
      return;
    }
    rs.writeHead(200, { 'content-type': 'application/vnd.pypi.simple.v1+json' });
    rs.end(JSON.stringify({ meta: { 'api-version': '1.1' }, name, files }));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const keys = ['UV_DEFAULT_INDEX', 'UV_INDEX_URL', 'UV_INDEX', 'UV_EXTRA_INDEX_URL', 'UV_FIND_LINKS'] as const;
  const saved = keys.map((k) => [k, process.env[k]] as const);
  for (const k of keys) delete process.env[k];
  process.env.UV_DEFAULT_INDEX = `http://127.0.0.1:${(server.address() as AddressInfo).port}/simple/`;
  const before = Date.parse('2024-01-01T00:00:00Z');
  const state = async (names = ['acme-a', 'Acme_B']) => {
    forgetIndexPages();
    return indexState(names, before);
  };
  try {
    assert.equal(uvIndexUrl(), process.env.UV_DEFAULT_INDEX.replace(/\/$/, ''));
    const first = await state();
    assert.ok(first);
    assert.equal(await state(['acme-b', 'acme-a']), first, 'names in any order and spelling (PEP 503)');
    // a wheel added to an old release, uploaded before the state's time
    pages
      .get('acme-b')!
      .push({ filename: 'acme_b-2.0-cp311-cp311-linux_x86_64.whl', 'upload-time': '2022-01-01T00:00:00Z' });
    const added = await state();
    assert.ok(added && added !== first);
    // a release yanked (PEP 592)
    pages.get('acme-a')![1].yanked = true;
    const yanked = await state();
    assert.ok(yanked && yanked !== added);
    // a release uploaded after the state's time: the index changed since
    pages.get('acme-a')!.push({ filename: 'acme_a-1.1-py3-none-any.whl', 'upload-time': '2025-01-01T00:00:00Z' });
    assert.equal(await state(), null);
    pages.get('acme-a')!.pop();
    assert.equal(await state(), yanked);
    // no upload times (PEP 700), or no page: no state
    pages.get('acme-b')!.push({ filename: 'acme_b-1.0-py3-none-any.whl' });
    assert.equal(await state(), null);
    pages.get('acme-b')!.pop();
    assert.equal(await state(['acme-a', 'acme-b', 'acme-missing']), null);
    // other indexes configured: uv's choice among them is not read here
    process.env.UV_EXTRA_INDEX_URL = 'https://example.invalid/simple';
    assert.equal(uvIndexUrl(), null);
    assert.equal(await state(), null);
  } finally {
    for (const [k, v] of saved)
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    server.close();
  }
});
