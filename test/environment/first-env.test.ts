// A new user's first environment (issue 23): a repository whose block needs a PyPI package
// the validation environment lacks (addict, declared in its requirements.txt). The one-step
// extract fails for it and prints the one command that fixes it; that command, run as
// printed, makes a PyPI environment for the store (torch from uv's cache, addict from
// PyPI), and the same extract command then validates the block in it with nothing else
// given. NNRAG_HOME points at a folder of the test, so no environment of the machine is used.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { findUv } from '../../src/environment/pypi.js';
import { repoRoot, tempDir } from '../helpers.js';
import { needsSandbox, needsTorch } from '../support/tier.js';

const bin = path.join(repoRoot, 'dist', 'src', 'cli', 'bin.js');
const skip =
  needsTorch() || needsSandbox() || (findUv() ? false : 'uv is not installed (scripts/setup.sh installs it)');

test('extract fails for a missing requirement, prints the env create command; run as printed, the same extract validates', {
  skip,
  timeout: 1_200_000,
}, () => {
  const dir = tempDir('nnrag-first-env-');
  chmodSync(dir, 0o755); // the sandbox's user (uid 65534 under root) enters the environment
  const repo = path.join(dir, 'cfgnet');
  mkdirSync(path.join(repo, 'cfgnet'), { recursive: true });
  writeFileSync(path.join(repo, 'requirements.txt'), 'addict\n');
  writeFileSync(path.join(repo, 'cfgnet', '__init__.py'), '');
  writeFileSync(
    path.join(repo, 'cfgnet', 'net.py'),
    'import torch\nfrom addict import Dict\n\n\nclass CfgNet(torch.nn.Module):\n    def __init__(self, dim=4):\n        super().__init__()\n        self.cfg = Dict(dim=dim)\n        self.lin = torch.nn.Linear(dim, dim)\n\n    def forward(self, x):\n        return self.lin(x)\n',
  );
  spawnSync('git', ['init', '-q', repo]);
  const store = path.join(dir, 'store');
  // only the test's own folders: no NNRAG_PYTHON, nnrag's home inside the test
  const env: NodeJS.ProcessEnv = { ...process.env, NNRAG_HOME: path.join(dir, 'home') };
  delete env.NNRAG_PYTHON;
  const extract = () =>
    spawnSync(
      process.execPath,
      [bin, 'extract', '--repo', repo, '--block', 'CfgNet', '--store', store, '--workers', '1'],
      { encoding: 'utf8', env, timeout: 600_000 },
    );

  const first = extract();
  assert.equal(first.status, 1, first.stderr + first.stdout);
  const next = /next: .*`(nnrag env create (\S+) --store (\S+))`/.exec(first.stdout);
  assert.ok(next, `the next step is printed:\n${first.stdout}`);
  assert.equal(next[3], store);
  assert.ok(next[2].startsWith(path.join(dir, 'home', 'envs')), next[2]);

  // the printed command, as printed
  const made = spawnSync(process.execPath, [bin, ...next[1].split(' ').slice(1)], {
    encoding: 'utf8',
    env,
    timeout: 900_000,
  });
  assert.equal(made.status, 0, made.stderr + made.stdout);
  assert.match(made.stdout, /environment ready/);

  const second = extract();
  assert.equal(second.status, 0, second.stderr + second.stdout);
  assert.match(second.stdout, /1\/1 validated/);
  assert.doesNotMatch(second.stdout, /next:/);
});
