// Repository config parsing (nn-rag's repo_config.json plus nnrag's extensions),
// `--repo` arguments, and the scoping matchers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  inScope,
  loadRepoConfig,
  matchGlob,
  configuredRepoFromArg,
  symbolMatches,
  type ConfiguredRepo,
} from '../../src/config/repos.js';
import { UsageError } from '../../src/util/errors.js';
import { tempDir } from '../helpers.js';

function configFile(content: unknown): string {
  const f = path.join(tempDir(), 'repo_config.json');
  writeFileSync(f, typeof content === 'string' ? content : JSON.stringify(content));
  return f;
}

test('loads nn-rag repo_config.json entries and nnrag extensions', () => {
  const f = configFile({
    'huggingface/pytorch-image-models': {
      url: 'https://github.com/huggingface/pytorch-image-models.git',
      priority: 1,
      paths: ['timm', 'timm/layers/', './timm/models'],
      description: 'Essential for models',
    },
    'facebookresearch/mae': {
      url: 'https://github.com/facebookresearch/mae.git',
      priority: 2,
      paths: ['models_vit.py'],
    },
    'local/nets': { path: 'nets', package_roots: ['src/', '.'], _comment: 'ignored' },
  });
  const specs = loadRepoConfig(f);
  assert.deepEqual(specs[0], {
    name: 'huggingface/pytorch-image-models',
    url: 'https://github.com/huggingface/pytorch-image-models.git',
    path: null,
    priority: 1,
    paths: ['timm', 'timm/layers/', 'timm/models'],
    description: 'Essential for models',
    packageRoots: null,
  } satisfies ConfiguredRepo);
  assert.equal(specs[1].priority, 2);
  assert.equal(specs[1].description, null);
  assert.deepEqual(specs[2], {
    name: 'local/nets',
    url: null,
    path: path.join(path.dirname(f), 'nets'),
    priority: 1,
    paths: [],
    description: null,
    packageRoots: ['src', ''],
  });
});

test('bad JSON names the file', () => {
  const f = configFile('{"a/b": {"url": "https://x/y.git",}');
  assert.throws(
    () => loadRepoConfig(f),
    (e: Error) => e instanceof UsageError && e.message.includes(f) && /not valid JSON/.test(e.message),
  );
  assert.throws(() => loadRepoConfig(path.join(tempDir(), 'missing.json')), /cannot read repository config/);
});

test('bad fields name the file and the repository key', () => {
  const cases: [unknown, RegExp][] = [
    [[], /top level must be an object/],
    [{ 'a/b': 'https://x/y.git' }, /repository "a\/b": expected an object/],
    [{ 'a/b': { url: 'https://x/y.git', priority: 'high' } }, /repository "a\/b": "priority" must be a number/],
    [{ 'a/b': { url: 'https://x/y.git', paths: 'timm' } }, /repository "a\/b": "paths" must be a list of strings/],
    [{ 'a/b': { url: 'https://x/y.git', paths: ['../etc'] } }, /"paths"\[0\].*must not contain "\.\."/],
    [{ 'a/b': { url: 'https://x/y.git', paths: ['/abs'] } }, /"paths"\[0\].*relative/],
    [{ 'a/b': { url: 'https://x/y.git', branch: 'main' } }, /unknown field "branch"/],
    [{ 'a/b': { priority: 1 } }, /needs a "url".*or a "path"/],
    [{ 'a/b': { url: 'ext::sh -c id' } }, /repository "a\/b": "url": refusing .*transport/],
    [{ 'a/b': { url: 'https://x/y.git', path: '.' } }, /either "url" or "path"/],
    [{ 'a/b': { url: 42 } }, /"url" must be a string/],
  ];
  for (const [content, re] of cases) {
    const f = configFile(content);
    assert.throws(
      () => loadRepoConfig(f),
      (e: Error) => e instanceof UsageError && e.message.startsWith(f) && re.test(e.message),
      JSON.stringify(content),
    );
  }
});

test('--repo: URLs, configured names, local folders', () => {
  const gh = configuredRepoFromArg('https://github.com/huggingface/pytorch-image-models.git');
  assert.equal(gh.name, 'huggingface/pytorch-image-models');
  assert.equal(gh.url, 'https://github.com/huggingface/pytorch-image-models.git');
  assert.equal(configuredRepoFromArg('git@github.com:pytorch/vision.git').name, 'pytorch/vision');
  assert.equal(configuredRepoFromArg('file:///srv/git/acme/nets.git').name, 'acme/nets');

  // owner/name is never guessed into a URL
  assert.throws(() => configuredRepoFromArg('pytorch/vision'), /only accepted when the repository config defines it/);
  const configured: ConfiguredRepo = {
    name: 'pytorch/vision',
    url: 'https://github.com/pytorch/vision.git',
    path: null,
    priority: 1,
    paths: ['torchvision/models'],
    description: null,
    packageRoots: null,
  };
  assert.equal(configuredRepoFromArg('pytorch/vision', [configured]), configured);

  const dir = path.join(tempDir(), 'my-nets');
  mkdirSync(dir);
  const local = configuredRepoFromArg(dir);
  assert.deepEqual([local.name, local.url, local.path], ['my-nets', null, dir]);
});

test('path globs: folders, single-segment stars, ** and module form', () => {
  const yes: [string, string][] = [
    ['timm', 'timm/layers/mlp.py'],
    ['timm/', 'timm/layers/mlp.py'],
    ['timm/layers', 'timm/layers/mlp.py'],
    ['models/*', 'models/a.py'],
    ['models/*', 'models/x/b.py'],
    ['models/*.py', 'models/a.py'],
    ['**/layers', 'a/b/layers/x.py'],
    ['**/layers', 'layers/x.py'],
    ['timm/**/mlp.py', 'timm/mlp.py'],
    ['timm/**/mlp.py', 'timm/a/b/mlp.py'],
    ['models_vit', 'models_vit.py'],
    ['torchvision/_utils.py', 'torchvision/_utils.py'],
    ['mod?ls/[ab].py', 'models/a.py'],
    ['', 'anything/at/all.py'],
    ['./timm', 'timm/x.py'],
  ];
  const no: [string, string][] = [
    ['timm', 'timmy/x.py'],
    ['models', 'a/models/x.py'],
    ['models/*.py', 'models/x/b.py'],
    ['timm/', 'timm'],
    ['*.py', 'pkg/a.py'],
    ['mod?ls/[!ab].py', 'models/a.py'],
    ['timm/layers', 'timm/layers2/x.py'],
  ];
  for (const [p, f] of yes) assert.equal(matchGlob(p, f), true, `${p} should match ${f}`);
  for (const [p, f] of no) assert.equal(matchGlob(p, f), false, `${p} should not match ${f}`);
});

test('inScope combines repository and path patterns; absent lists do not restrict', () => {
  assert.equal(inScope({}, 'a/b', 'x.py'), true);
  assert.equal(inScope({ repos: ['huggingface/*'] }, 'huggingface/pytorch-image-models', 'timm/x.py'), true);
  assert.equal(inScope({ repos: ['pytorch-image-models'] }, 'huggingface/pytorch-image-models', 'timm/x.py'), true);
  assert.equal(inScope({ repos: ['pytorch/*'] }, 'huggingface/pytorch-image-models', 'timm/x.py'), false);
  assert.equal(inScope({ repos: ['*'], paths: ['timm/layers'] }, 'x/y', 'timm/models/vit.py'), false);
  assert.equal(inScope({ paths: ['timm/layers', 'timm/models'] }, 'x/y', 'timm/models/vit.py'), true);
});

test('symbol patterns: bare names, qualified names and dotted suffixes', () => {
  const q = 'timm.layers.mlp.Mlp';
  assert.equal(symbolMatches(['Mlp'], q), true);
  assert.equal(symbolMatches(['*lp'], q), true);
  assert.equal(symbolMatches(['timm.layers.*'], q), true);
  assert.equal(symbolMatches(['mlp.Mlp'], q), true);
  assert.equal(symbolMatches(['timm.models.*'], q), false);
  assert.equal(symbolMatches(['mlp'], q), false, 'a bare pattern is compared with the bare name only');
  assert.equal(symbolMatches(['lp.Mlp'], q), false, 'suffixes start at a dot');
  assert.equal(symbolMatches(['mlp'], 'Mlp'), false, 'case-sensitive like fnmatchcase');
  assert.equal(symbolMatches([], q), false);
});
