// A workspace over a copy of one test fixture, as one repository (the set-up many tests
// share: copy the fixture into a folder the sandbox can read, open a store, and, for
// `indexedFixture`, index the fixture's packages with one worker).
import { chmodSync, cpSync } from 'node:fs';
import path from 'node:path';
import * as api from '../../src/nnrag.js';
import { fixture, tempDir } from '../helpers.js';

type RepoSpec = api.IndexOptions['repos'][number];

export interface FixtureWorkspace {
  ws: api.Workspace;
  /** the temporary folder holding `repo` and `store` */
  dir: string;
  /** the fixture's copy */
  repo: string;
  /** the repository as `index` takes it */
  spec: RepoSpec;
}

/** `fixturePath` (below test/fixtures) copied to DIR/repo, a new store at DIR/store, and the
 *  repository `name` (its `paths`) to index; not indexed yet. DIR is readable by the
 *  sandbox, which runs as an unprivileged user when the tests run as root. */
export function fixtureWorkspace(fixturePath: string, name: string, paths: string[] = []): FixtureWorkspace {
  const dir = tempDir();
  chmodSync(dir, 0o755);
  const repo = path.join(dir, 'repo');
  cpSync(fixture(fixturePath), repo, { recursive: true });
  const ws = api.Workspace.open(path.join(dir, 'store'), { create: true });
  const spec: RepoSpec = { name, url: null, path: repo, priority: 1, paths, description: null, packageRoots: null };
  return { ws, dir, repo, spec };
}

/** `fixtureWorkspace`, indexed with one worker. */
export async function indexedFixture(
  fixturePath: string,
  name: string,
  paths: string[] = [],
): Promise<FixtureWorkspace> {
  const f = fixtureWorkspace(fixturePath, name, paths);
  await api.index(f.ws, { repos: [f.spec], workers: 1 });
  return f;
}
