// Child process for the crash and concurrency tests: index one synthetic tree into a
// store and print the report as JSON. Does nothing without arguments (node --test
// runs every file under dist/test).
import { IndexStore } from '../../src/store/store.js';
import { indexRepos } from '../../src/indexer/indexer.js';
import { checkout } from './corpus.js';

const [storeDir, root, workers] = process.argv.slice(2);
if (storeDir && root) {
  const store = IndexStore.open(storeDir);
  const report = await indexRepos(store, [checkout('r', root)], {
    workers: Number(workers ?? 2),
  });
  store.close();
  process.stdout.write(JSON.stringify({ files: report.files, parsed: report.parsed, reused: report.reused }) + '\n');
}
