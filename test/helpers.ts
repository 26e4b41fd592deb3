// Shared helpers for the test suite: paths of the repository and its fixtures,
// and temporary folders that are removed when the test process exits.
import { chmodSync, cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Root of the nnrag repository (tests run from dist/test/...). */
export const repoRoot = (() => {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!dir.endsWith(`${path.sep}dist`) && dir !== path.dirname(dir)) dir = path.dirname(dir);
  return path.dirname(dir);
})();

/** Absolute path of a fixture under test/fixtures. */
export function fixture(...parts: string[]): string {
  return path.join(repoRoot, 'test', 'fixtures', ...parts);
}

const temps: string[] = [];
process.on('exit', () => {
  for (const t of temps) rmSync(t, { recursive: true, force: true });
});

/** A fresh temporary folder, removed at process exit. */
export function tempDir(prefix = 'nnrag-test-'): string {
  const d = mkdtempSync(path.join(tmpdir(), prefix));
  temps.push(d);
  return d;
}

/** A copy of a fixture (under test/fixtures) in a fresh temporary folder that the
 *  sandbox's unprivileged user can enter (we may be root): that folder. */
export function sandboxFixture(...parts: string[]): string {
  const dir = tempDir();
  chmodSync(dir, 0o755);
  cpSync(fixture(...parts), dir, { recursive: true });
  return dir;
}

/** A checkout of pytorch-image-models (timm) for the tests that run over real code,
 *  from NNRAG_TEST_TIMM; those tests skip when it is not set or absent. */
export const TIMM_CHECKOUT = process.env.NNRAG_TEST_TIMM ?? '';
