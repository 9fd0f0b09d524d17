#!/usr/bin/env node
// Summarises scripts/bench-peers.sh's runs.jsonl: medians per tool and same-run ratios, as Markdown.
'use strict'
const fs = require('fs')
const [runsPath, summaryPath] = process.argv.slice(2)
const runs = fs.readFileSync(runsPath, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
const summary = JSON.parse(fs.readFileSync(summaryPath, 'utf8'))
const c = summary.counts || {}
const frames = (c.book_array || 0) + (c.book || 0) + (c.price_change || 0)
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}
const by = (tool) => runs.filter((r) => r.tool === tool)
for (const r of by('tardis-raw').concat(by('tardis-books'))) {
  if (r.stub_requests !== 0) throw new Error(`tardis-dev asked its API ${r.stub_requests} times: the cache is incomplete`)
}
const digests = new Set(by('tapedeck-run').map((r) => r.digest))
if (digests.size > 1) throw new Error('tapedeck run gave different digests across rounds: ' + [...digests].join(' '))
const fps = (tool) => {
  const rs = by(tool)
  if (!rs.length) return null
  return median(rs.map((r) => frames / r.seconds))
}
const rows = [
  ['tardis-dev raw replay, no decoding', 'tardis-raw'],
  ['tapedeck `replay run` (decode + books + integrity checks)', 'tapedeck-run'],
  ['tardis-dev books (normalized, 25-level snapshot per change)', 'tardis-books'],
  ['tapedeck `export --table depth --levels 25 --every-event --format csv`', 'tapedeck-depth']
]
const f = (x) => (x == null ? '–' : x >= 1e6 ? (x / 1e6).toFixed(2) + ' M' : Math.round(x / 1e3) + ' k')
const rounds = Math.max(...runs.map((r) => r.round))
let md = `Same run, ${rounds} alternated round(s), ${frames.toLocaleString('en')} frames (${(summary.text_bytes / 1e6 || 0).toFixed(1)} MB of frame text); medians of input frames per second.\n\n`
md += '| workload | frames/s |\n|---|---|\n'
for (const [name, tool] of rows) md += `| ${name} | ${f(fps(tool))} |\n`
const ratio = (a, b) => (fps(a) && fps(b) ? (fps(a) / fps(b)).toFixed(1) + '×' : '–')
md += `\ntapedeck run / tardis-dev raw: **${ratio('tapedeck-run', 'tardis-raw')}**; `
md += `tapedeck run / tardis-dev books: **${ratio('tapedeck-run', 'tardis-books')}**; `
md += `tapedeck depth export / tardis-dev books: **${ratio('tapedeck-depth', 'tardis-books')}**.\n`
md += `tapedeck digest ${[...digests][0] || '–'}; tardis-dev stub API requests: 0.\n`
process.stdout.write(md)
