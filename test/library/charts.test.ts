// SVG charts must be well-formed XML (checked with a real XML parser: Python's expat),
// escape labels, and draw bars proportional to values.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { barChart, blocksPerRepoChart, passRateChart, escapeXml, niceStep } from '../../src/library/charts.js';
import { wilson } from '../../src/library/stats.js';

/** Parse with xml.etree (expat); returns the root tag and the count of <rect> elements. */
function parseXml(svg: string): { root: string; rects: number; texts: string[] } {
  const out = execFileSync(
    'python3',
    [
      '-c',
      'import sys,json,xml.etree.ElementTree as E\nr=E.fromstring(sys.stdin.buffer.read())\nns="{http://www.w3.org/2000/svg}"\nprint(json.dumps({"root":r.tag,"rects":len(r.findall(".//"+ns+"rect")),"texts":["".join(t.itertext()) for t in r.iter(ns+"text")]}))',
    ],
    { input: svg, encoding: 'utf8' },
  );
  return JSON.parse(out);
}

test('bar chart is well-formed and escapes labels', () => {
  const svg = barChart({
    title: 'Blocks <per> "repo" & more',
    bars: [
      { label: 'a<b>&c', value: 10, max: 20 },
      { label: "it's \u0001 weird", value: 5 },
    ],
  });
  const x = parseXml(svg);
  assert.equal(x.root, '{http://www.w3.org/2000/svg}svg');
  assert.ok(x.texts.includes('Blocks <per> "repo" & more'));
  assert.ok(x.texts.includes('a<b>&c'));
  assert.ok(x.texts.includes('10 / 20'));
  assert.ok(!svg.includes('a<b>'));
  assert.equal(escapeXml('<&>"\''), '&lt;&amp;&gt;&quot;&#39;');
});

test('bar widths are proportional; max track drawn behind', () => {
  const svg = barChart({
    title: 't',
    bars: [
      { label: 'x', value: 50, max: 100 },
      { label: 'y', value: 100 },
    ],
  });
  const widths = [
    ...svg.matchAll(/<rect x="\d+(?:\.\d+)?" y="[\d.]+" width="([\d.]+)" height="14" fill="(#[0-9a-f]+)"/g),
  ].map((m) => [Number(m[1]), m[2]]);
  // track(100), bar(50), bar(100)
  assert.equal(widths.length, 3);
  assert.equal(widths[0][1], '#c6dbef');
  assert.ok(Math.abs((widths[1][0] as number) * 2 - (widths[0][0] as number)) < 0.02);
  assert.equal(widths[2][0], widths[0][0]);
});

test('pass rate chart has whiskers and percentages', () => {
  const stages = [
    { stage: 'import', passed: 90, total: 100 },
    { stage: 'forward', passed: 0, total: 0 },
  ].map((s) => ({ ...s, ...wilson(s.passed, s.total) }));
  const svg = passRateChart(stages);
  const x = parseXml(svg);
  assert.ok(x.texts.includes('90.0% (90/100)'));
  assert.ok(x.texts.includes('100%'));
  assert.equal((svg.match(/stroke-width="1.2"/g) ?? []).length, 2);
  const empty = parseXml(barChart({ title: 'none', bars: [] }));
  assert.ok(empty.texts.includes('(no data)'));
  assert.throws(() => barChart({ title: 'bad', bars: [{ label: 'n', value: NaN }] }));
});

test('blocks per repository chart sorts by total', () => {
  const svg = blocksPerRepoChart({ small: { total: 2, unique: 2 }, big: { total: 10, unique: 7 } });
  const x = parseXml(svg);
  const iBig = x.texts.indexOf('big');
  const iSmall = x.texts.indexOf('small');
  assert.ok(iBig >= 0 && iSmall > iBig);
  assert.ok(x.texts.includes('7 unique / 10'));
});

test('value axis uses round tick values', () => {
  assert.deepEqual([0.3, 1, 1.5, 205, 999, 1000].map(niceStep), [0.2, 1, 2, 200, 1000, 1000]);
  const x = parseXml(barChart({ title: 't', bars: [{ label: 'a', value: 820 }] }));
  for (const t of ['0', '200', '400', '600', '800', '1000']) assert.ok(x.texts.includes(t), t);
});
