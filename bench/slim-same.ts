// Byte-identity of slim modules across a change (docs/ARCHITECTURE.md "Slim emission"): emits
// the slim module of every block of the test fixtures (each fixture repository indexed into a
// store of its own) and, with CONFIG, of a repository configuration's repositories (timm), as
// bench/slim.ts emits them (call sites and data sites as seeds, no sandbox probe), writes each
// to OUT/<repo>/<block id>.py, and, with `--against DIR` (an OUT of the version before), counts
// the modules that are byte-identical, differ, or exist on one side only.
//
// (The fixtures are indexed from a copy outside git, so their modules' headers name no commit.)
// usage: node dist/bench/slim-same.js --out DIR [--against DIR] [--config CONFIG]
//   [--store DIR] (the configuration's repositories indexed into one store, kept: the
//   run before and the run after index once) [--repos a/b,c/d] [--no-fixtures]
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as api from '../src/nnrag.js';
import { loadRepoConfig, type ConfiguredRepo } from '../src/config/repos.js';
import { callSites, dataSites, slimEntry, slimSeeds } from '../src/pipeline/pipeline.js';
import { args, opt } from './args.js';

const out = opt('--out');
if (!out) throw new Error('usage: slim-same --out DIR [--against DIR] [--config CONFIG] [--repos a,b] [--no-fixtures]');
const against = opt('--against');
const only = opt('--repos')?.split(',');
const isDir = (p: string) => existsSync(p) && statSync(p).isDirectory();
// the checkout: the first folder above this script with a package.json (a copy of dist/
// kept under dist/ to compare against runs on the same fixtures)
let root = path.dirname(fileURLToPath(import.meta.url));
while (!existsSync(path.join(root, 'package.json')) && path.dirname(root) !== root) root = path.dirname(root);
// a copy outside git: a module's header names the commit of a repository in git, which
// every commit of this checkout changes
const fixtures = path.join(mkdtempSync(path.join(tmpdir(), 'nnrag-slim-same-fixtures-')), 'fixtures');
cpSync(path.join(root, 'test/fixtures'), fixtures, { recursive: true });
/** The fixture repositories: a folder of test/fixtures holding a package (a child with an
 *  `__init__.py`) or Python files is one; else each of its folders is one. */
function fixtureRepos(): ConfiguredRepo[] {
  const specs: ConfiguredRepo[] = [];
  const spec = (dir: string): ConfiguredRepo => ({
    name: `fixtures/${path.relative(fixtures, dir)}`,
    url: null,
    path: dir,
    priority: 1,
    paths: [],
    description: null,
    packageRoots: null,
  });
  for (const top of readdirSync(fixtures).sort()) {
    const d = path.join(fixtures, top);
    if (!isDir(d)) continue;
    const kids = readdirSync(d).sort();
    if (kids.some((k) => k.endsWith('.py') || existsSync(path.join(d, k, '__init__.py')))) specs.push(spec(d));
    else for (const k of kids) if (isDir(path.join(d, k))) specs.push(spec(path.join(d, k)));
  }
  return specs;
}

const repos: ConfiguredRepo[] = [
  ...(args.includes('--no-fixtures') ? [] : fixtureRepos()),
  ...(opt('--config') ? loadRepoConfig(opt('--config')!) : []),
].filter((r) => !only || only.includes(r.name));
const shared = opt('--store');
let emitted = 0;
for (const repo of repos) {
  const own = !shared || repo.name.startsWith('fixtures/');
  const ws = api.Workspace.open(own ? mkdtempSync(path.join(tmpdir(), 'nnrag-slim-same-')) : shared!, { create: true });
  try {
    await api.index(ws, { repos: own ? [repo] : repos.filter((r) => !r.name.startsWith('fixtures/')) });
    const dir = path.join(out, repo.name.replace(/[^\w.-]+/g, '_'));
    mkdirSync(dir, { recursive: true });
    for (const b of api.discover(ws).filter((b) => b.repo === repo.name)) {
      const sites = { callSites: callSites(ws, b.id), dataSites: dataSites(ws, b.id) };
      const s = api.extractText(
        ws,
        b.id,
        { profile: 'slim' },
        { seeds: slimSeeds(sites, null), entry: slimEntry(sites, null) },
      );
      writeFileSync(
        path.join(dir, `${b.id.replace(/[^\w.-]+/g, '_')}.py`),
        s.text ?? `# no slim module: ${s.record.error ?? ''}\n`,
      );
      emitted++;
    }
  } catch (e) {
    console.log(`${repo.name}: ${(e as Error).message.split('\n')[0]}`);
  } finally {
    ws.close();
  }
}
console.log(`${emitted} slim modules of ${repos.length} repositories written to ${out}`);
if (against) {
  const files = (d: string) =>
    isDir(d) ? readdirSync(d).flatMap((r) => readdirSync(path.join(d, r)).map((f) => `${r}/${f}`)) : [];
  const a = new Set(files(against));
  const b = new Set(files(out));
  let same = 0;
  const differ: string[] = [];
  for (const f of b)
    if (a.has(f))
      readFileSync(path.join(against, f), 'utf8') === readFileSync(path.join(out, f), 'utf8') ? same++ : differ.push(f);
  const onlyBefore = [...a].filter((f) => !b.has(f));
  const onlyAfter = [...b].filter((f) => !a.has(f));
  console.log(
    `byte-identical ${same}, differing ${differ.length}, only before ${onlyBefore.length}, only after ${onlyAfter.length}`,
  );
  for (const f of [...differ, ...onlyBefore, ...onlyAfter].slice(0, 20)) console.log(`  ${f}`);
  if (differ.length || onlyBefore.length || onlyAfter.length) process.exitCode = 1;
}
