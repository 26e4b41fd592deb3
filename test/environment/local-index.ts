// A package index for the environment tests, served on 127.0.0.1 (no network): wheels and
// source distributions written here, listed by the PEP 691 JSON simple API with each
// file's PEP 700 upload time, so that uv's date limits (--exclude-newer) apply to them.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { needsTorch } from '../support/tier.js';
import { tempDir } from '../helpers.js';

/** The interpreter the environment tests build their virtual environments over. */
export const BASE = '/usr/bin/python3';

/** Build a wheel (zipfile, PEP 427) or a source distribution (tar, PKG-INFO of metadata
 *  2.2: static, so the resolver reads it without building) of `dist` at `version`. */
export function makeFile(
  dir: string,
  kind: 'wheel' | 'sdist',
  dist: string,
  version: string,
  requires: string[] = [],
  init = '',
): string {
  const script = String.raw`
import sys, zipfile, hashlib, base64, tarfile, io, json
d, kind, dist, v, requires, init = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], json.loads(sys.argv[5]), sys.argv[6]
stem = dist.replace("-", "_") + "-" + v
pkg = dist.replace("-", "_")
meta = "Metadata-Version: 2.2\nName: %s\nVersion: %s\n" % (dist, v) + "".join("Requires-Dist: %s\n" % r for r in requires)
if kind == "wheel":
    files = {pkg + "/__init__.py": "__version__ = '%s'\n" % v + init, stem + ".dist-info/METADATA": meta,
             stem + ".dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    rec = []
    for p, t in files.items():
        h = base64.urlsafe_b64encode(hashlib.sha256(t.encode()).digest()).rstrip(b"=").decode()
        rec.append("%s,sha256=%s,%d" % (p, h, len(t.encode())))
    rec.append(stem + ".dist-info/RECORD,,")
    files[stem + ".dist-info/RECORD"] = "\n".join(rec) + "\n"
    name = stem + "-py3-none-any.whl"
    with zipfile.ZipFile(d + "/" + name, "w") as z:
        for p, t in files.items():
            z.writestr(p, t)
else:
    name = stem + ".tar.gz"
    with tarfile.open(d + "/" + name, "w:gz") as t:
        for p, text in {"PKG-INFO": meta, "setup.py": "raise SystemExit('this test never builds it')\n"}.items():
            b = text.encode(); i = tarfile.TarInfo(stem + "/" + p); i.size = len(b); t.addfile(i, io.BytesIO(b))
print(name)
`;
  return execFileSync(BASE, ['-c', script, dir, kind, dist, version, JSON.stringify(requires), init])
    .toString()
    .trim();
}

/** A PEP 691 simple index of the files in `dir`, each with its PEP 700 upload time. */
export async function serveIndex(
  dir: string,
  uploaded: Map<string, string>,
): Promise<{ url: string; close: () => void }> {
  const server = http.createServer((rq, rs) => {
    const u = new URL(rq.url ?? '/', 'http://x');
    const file = /^\/files\/([^/]+)$/.exec(u.pathname)?.[1];
    if (file && existsSync(path.join(dir, file))) {
      rs.writeHead(200, { 'content-type': 'application/octet-stream' });
      rs.end(readFileSync(path.join(dir, file)));
      return;
    }
    const name = /^\/simple\/([^/]+)\/?$/.exec(u.pathname)?.[1];
    const norm = (s: string) => s.toLowerCase().replace(/[-_.]+/g, '-');
    const files = name
      ? readdirSync(dir).filter((f) => norm(f.replace(/-\d.*$/, '')) === norm(name) && uploaded.has(f))
      : [];
    if (!files.length) {
      rs.writeHead(404);
      rs.end();
      return;
    }
    rs.writeHead(200, { 'content-type': 'application/vnd.pypi.simple.v1+json' });
    rs.end(
      JSON.stringify({
        meta: { 'api-version': '1.1' },
        name: norm(name!),
        versions: [...new Set(files.map((f) => /-(\d[^-]*?)(\.tar\.gz|-py3)/.exec(f)![1]))],
        files: files.map((f) => ({
          filename: f,
          url: `/files/${f}`,
          hashes: {
            sha256: createHash('sha256')
              .update(readFileSync(path.join(dir, f)))
              .digest('hex'),
          },
          'upload-time': uploaded.get(f),
        })),
      }),
    );
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/simple`, close: () => server.close() };
}

/** Point uv at `url` with a cache of its own (`cache`), for a test; the returned function
 *  puts the three variables back as they were. */
export function pointUvAt(url: string, cache: string): () => void {
  const keys = ['UV_DEFAULT_INDEX', 'UV_INDEX_URL', 'UV_CACHE_DIR'] as const;
  const saved = keys.map((k) => [k, process.env[k]] as const);
  process.env.UV_DEFAULT_INDEX = url;
  delete process.env.UV_INDEX_URL;
  process.env.UV_CACHE_DIR = cache;
  return () => {
    for (const [k, v] of saved)
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
  };
}

/** Why a test that resolves a whole environment with the real uv cannot run here, or false. */
export function uvTestSkip(uv: string | null): string | false {
  return (
    needsTorch() ||
    (!uv ? 'uv is not installed (scripts/setup.sh installs it)' : !existsSync(BASE) ? 'no /usr/bin/python3' : false)
  );
}

/** Commit everything in `repo` as one revision of `date` (ISO 8601): the revision date the
 *  as-of resolution reads. */
export function commitAt(repo: string, date: string, message: string): void {
  const git = (...a: string[]) =>
    execFileSync('git', ['-C', repo, ...a], {
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: 't',
        GIT_AUTHOR_EMAIL: 't@x',
        GIT_COMMITTER_NAME: 't',
        GIT_COMMITTER_EMAIL: 't@x',
        GIT_AUTHOR_DATE: date,
        GIT_COMMITTER_DATE: date,
      },
    });
  git('init', '-q');
  git('add', '.');
  git('commit', '-q', '-m', message);
}

/** A test folder the sandboxed uid can read (0755), with an empty `index` folder for the
 *  files the index serves. */
export function indexFolder(prefix: string): { dir: string; files: string } {
  const dir = tempDir(prefix);
  chmodSync(dir, 0o755);
  const files = path.join(dir, 'index');
  mkdirSync(files);
  return { dir, files };
}
