// The report of the example corpus after real extraction and sandboxed validation, through
// the CLI (`nnrag report --json --html FILE`): its figures must agree with the stored
// records and with the files in blocks/ and failed/, and the HTML must carry both charts.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import * as api from '../../src/nnrag.js';
import '../../src/library/library.js';
import { listExtractions, type StoredExtraction } from '../../src/store/records.js';
import { buildReport, reportHtml, type LibraryReport } from '../../src/library/report.js';
import { wilson } from '../../src/library/stats.js';
import { extractAndValidate } from '../../src/pipeline/pipeline.js';
import { repoRoot, tempDir } from '../helpers.js';
import { needsTorch } from '../support/tier.js';

const PY = '/usr/bin/python3';
const haveTorch =
  !needsTorch() &&
  existsSync(PY) &&
  (() => {
    try {
      execFileSync(PY, ['-c', 'import torch'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  })();
const skip = !haveTorch && 'no /usr/bin/python3 with torch';
const BIN = path.join(repoRoot, 'dist', 'src', 'cli', 'bin.js');

let store: string;
let records: StoredExtraction[];
let report: LibraryReport;
let html: string;
let human: string;

before(async () => {
  if (!haveTorch) return;
  store = tempDir();
  const ws = api.Workspace.open(store);
  try {
    await api.index(ws, {
      repos: [
        {
          name: 'examples',
          url: null,
          path: path.join(repoRoot, 'examples'),
          priority: 1,
          paths: [],
          description: null,
          packageRoots: null,
        },
      ],
    });
    await extractAndValidate(
      ws,
      api.discover(ws).map((b) => b.id),
      { pool: { python: PY } },
    );
    records = listExtractions(ws.store);
  } finally {
    ws.close();
  }
  const run = promisify(execFile);
  const htmlFile = path.join(store, 'report.html');
  const { stdout } = await run(process.execPath, [BIN, 'report', '--store', store, '--json', '--html', htmlFile]);
  report = JSON.parse(stdout) as LibraryReport;
  html = readFileSync(htmlFile, 'utf8');
  human = (await run(process.execPath, [BIN, 'report', '--store', store])).stdout;
});

const pyFiles = (dir: string) => (existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.py')).length : 0);

test('totals agree with the records and the library folders', { skip }, () => {
  const lib = path.join(store, 'library');
  const t = report.totals;
  assert.equal(t.discovered, 13);
  assert.equal(t.extracted, records.length);
  assert.equal(t.validated, pyFiles(path.join(lib, 'blocks')));
  assert.equal(t.failed, pyFiles(path.join(lib, 'failed')));
  assert.equal(t.validated, records.filter((r) => r.status === 'validated').length);
  assert.equal(t.validated + t.failed, t.validationRun);
  assert.deepEqual(
    t.passRate,
    (({ p, low, high }) => ({ p: +p.toFixed(4), low: +low.toFixed(4), high: +high.toFixed(4) }))(
      wilson(t.validated, t.validationRun),
    ),
  );
  assert.equal(report.repos.length, 1);
  const r = report.repos[0];
  assert.equal(r.name, 'examples');
  assert.equal(r.validated, t.validated);
  assert.equal(r.discovered, t.discovered);
  assert.match(human, new RegExp(`validated ${t.validated}/${t.validationRun} = `));
});

test('per-stage figures count the stored stage results', { skip }, () => {
  for (const s of report.stages) {
    const got = (st: string) =>
      records.filter((r) => (r.record.validation as { stages: Record<string, string> }).stages[s.stage] === st).length;
    assert.equal(s.passed, got('pass'), s.stage);
    assert.equal(s.failed, got('fail'), s.stage);
    assert.equal(s.skipped, got('skip'), s.stage);
    assert.equal(s.attempted, s.passed + s.failed);
    assert.ok(s.rate.low <= s.rate.p && s.rate.p <= s.rate.high);
  }
  const inst = report.stages.find((s) => s.stage === 'instantiate')!;
  assert.equal(inst.failed, 1); // tinyvision.models.wrappers.FeatureTap needs a real backbone
  assert.equal(report.stages.find((s) => s.stage === 'forward')!.failed, 0);
  assert.deepEqual(report.failureCategories, { 'needs-args': 1 });
  assert.deepEqual(report.repos[0].failureCategories, report.failureCategories);
});

test('timings, sizes and uniqueness', { skip }, () => {
  assert.ok(report.timings.index && report.timings.index.total > 0);
  assert.equal(report.timings.extraction.n, records.length);
  assert.ok(report.timings.validation.forward.n >= 12, 'stage timings from the stored validation results');
  const lines = records.map((r) => r.lines);
  assert.equal(report.sizes.lines.n, records.length);
  assert.equal(report.sizes.lines.max, Math.max(...lines));
  assert.equal(
    report.sizes.histogram.reduce((a, b) => a + b.count, 0),
    records.length,
  );
  // `report` ran the de-duplication because none was stored
  assert.ok(report.uniqueness);
  assert.equal(report.uniqueness.total, records.length);
  assert.equal(report.uniqueness.fresh, true);
  assert.equal(report.repos[0].unique, report.uniqueness.perRepo.examples.unique);
});

test('HTML page with the two inline SVG charts', { skip }, () => {
  assert.match(html, /^<!DOCTYPE html>/);
  assert.equal(html.match(/<svg\b/g)?.length, 2);
  assert.equal(html.match(/<\/svg>/g)?.length, 2);
  assert.match(html, /Blocks per repository/);
  assert.match(html, /Pass rate per stage/);
  assert.match(html, /needs-args/);
  // the pass-rate chart shows every stage with its count
  const fwd = report.stages.find((s) => s.stage === 'forward')!;
  assert.ok(html.includes(`(${fwd.passed}/${fwd.attempted})`));
});

test('an empty store gives an empty report, not an error', () => {
  const ws = api.Workspace.open(tempDir());
  try {
    const r = buildReport(ws.store);
    assert.equal(r.totals.extracted, 0);
    assert.deepEqual(r.totals.passRate, { p: 0, low: 0, high: 1 });
    assert.equal(r.uniqueness, null);
    assert.deepEqual(r.sizes.histogram, []);
    const page = reportHtml(r);
    assert.equal(page.match(/<svg\b/g)?.length, 2);
    assert.match(page, /\(no data\)/);
  } finally {
    ws.close();
  }
});
