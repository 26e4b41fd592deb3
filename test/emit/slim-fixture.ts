// The slim fixture (test/fixtures/slim) copied, indexed and discovered in a new store: the
// set-up of the slim emission, probe and slim-first tests.
import * as api from '../../src/nnrag.js';
import { type FixtureWorkspace, indexedFixture } from '../support/indexed.js';

export async function slimWorkspace(): Promise<FixtureWorkspace> {
  const f = await indexedFixture('slim', 'org/slim', ['slimpkg']);
  api.discover(f.ws);
  return f;
}
