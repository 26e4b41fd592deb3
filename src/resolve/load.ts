// Builds the resolver's Corpus from the IndexStore: module rows plus their facts, with
// the on-demand loader attached (modules outside the configured paths, ondemand.ts).
// Facts an older nnrag wrote (another FACTS_VERSION) are parsed again from the same bytes
// here, so extraction never resolves with facts of an older shape (they may lack what the
// resolver now reads); a file that changed since it was indexed needs `nnrag index`.
import { NnragError } from '../util/errors.js';
import type { IndexStore } from '../store/store.js';
import { FACTS_VERSION } from '../parse/types.js';
import { Corpus, type CorpusModule } from './corpus.js';
import { OnDemandLoader } from './ondemand.js';
import { parserReady } from '../parse/parser.js';

export function loadCorpus(store: IndexStore): Corpus {
  const c = store.indexContents();
  const facts = store.loadAllFacts();
  const repos = c.repos;
  const byName = new Map(repos.map((r) => [r.name, r]));
  const loader = new OnDemandLoader(store);
  const modules: CorpusModule[] = [];
  const stale: string[] = [];
  for (const f of c.files) {
    if (!f.module) continue;
    let ff = facts.get(f.blob);
    if (!ff) continue;
    if (ff.version !== FACTS_VERSION) {
      const repo = byName.get(f.repo);
      const fresh = repo ? loader.reparse(repo, f.path, f.blob) : null;
      if (!fresh) {
        stale.push(`${f.repo}:${f.path}`);
        continue;
      }
      ff = fresh;
    }
    modules.push({
      name: f.module,
      repo: f.repo,
      path: f.path,
      isPackage: /(^|\/)__init__\.py$/.test(f.path),
      blob: f.blob,
      facts: ff,
    });
  }
  if (stale.length) {
    throw new NnragError(
      `${stale.length} indexed file(s) have facts of an older nnrag${parserReady() ? ' and changed since they were indexed' : ''} (${stale.slice(0, 3).join(', ')}${stale.length > 3 ? ', …' : ''}): run \`nnrag index\` to parse them again`,
      'stale-facts',
    );
  }
  const corpus = new Corpus(repos, modules);
  corpus.setLoader(loader);
  return corpus;
}
