#!/usr/bin/env node
// The dependency rule of src/ (docs/architecture.md), checked on every relative import of every
// src/**/*.ts file: static `import`/`export ... from`, side-effect `import '...'` and dynamic
// `import('...')`; type-only imports count too. Also: no import cycle between files (type-only
// imports included), and no VIM type named outside its VIM folder (src/infra/<type>/, the one
// with a vim-type.ts whose string constants are the type's names) and the composition root
// (src/main/; src/sim/ and src/lab/, the simulated cloud, too). Usage: node scripts/check-deps.mjs
// [projectDir] (default: this repository). Exit 1 listing each `file -> import (rule)`, each
// `import cycle: a -> b -> a` and each `file:line names VIM type ...`; one summary line if clean.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..'));
const src = join(root, 'src');
const LEAVES = new Set(['config', 'errors', 'logger', 'model']);
const LOWER = new Set(['lcm', 'notify', 'infra', 'mgmt', 'nfvo']);

/** The layer of a path under src/: its folder, or for a top-level file root / entry / its name. */
function layerOf(abs) {
  const parts = relative(src, abs).split(sep);
  if (parts[0] === '..') return undefined;
  if (parts.length > 1) return parts[0] === 'main' ? 'root' : parts[0] === 'cli' ? 'entry' : parts[0];
  const name = parts[0].replace(/\.[cm]?[jt]s$/, '');
  return name === 'server' || name === 'main' ? 'root' : name;
}

/** Why an import breaks the rule, or undefined. */
function violation(from, to, { typeOnly, dynamic }) {
  if (from === to) return undefined;
  if (to === 'api' && from !== 'root' && from !== 'entry') return 'only the composition root and the CLI import api/';
  if (to === 'root' && from !== 'entry') return 'only the CLI imports the composition root';
  if (to === 'sim' && from !== 'lab' && !(from === 'root' && dynamic && !typeOnly)) return from === 'root' ? 'the composition root loads src/sim/ only with a dynamic import()' : 'only the composition root and src/lab/ import src/sim/';
  if (from === 'sim' && !LEAVES.has(to)) return 'src/sim/ is self-contained (it imports only leaf modules)';
  if (to === 'lab' && !(from === 'root' && dynamic && !typeOnly)) return from === 'root' ? 'the composition root loads src/lab/ only with a dynamic import()' : 'only the composition root imports src/lab/';
  if (from === 'lab' && to !== 'sim' && !LEAVES.has(to)) return 'src/lab/ imports only src/sim/ and leaf modules';
  if (LEAVES.has(from) && !LEAVES.has(to)) return 'leaf modules import only leaf modules';
  if (from === 'store' && !LEAVES.has(to)) return 'store/ is the bottom layer (it imports only leaf modules)';
  if (from === 'core' && !LEAVES.has(to) && !typeOnly) return 'core/ imports only types from other layers';
  if (LOWER.has(from) && to === 'autoheal') return `${from}/ is below autoheal/`;
  if ((LOWER.has(from) || from === 'packages' || from === 'vims') && to === 'health') return `${from}/ is below health/`;
  if ((LOWER.has(from) || from === 'packages' || from === 'vims') && to === 'lcm') return `${from}/ is below lcm/`;
  return undefined;
}

function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
}

const STATIC = /(?:^|;)[ \t]*(import|export)\s+(type\s+)?([^'";]*?)\bfrom\s*['"](\.[^'"]*)['"]/gm;
const BARE = /(?:^|;)[ \t]*import\s*['"](\.[^'"]*)['"]/gm;
const DYNAMIC = /\bimport\(\s*['"](\.[^'"]*)['"]\s*\)/g;

/** The relative imports of a source text. */
function importsOf(text) {
  const out = [];
  for (const m of text.matchAll(STATIC)) {
    const names = m[3].match(/\{([^}]*)\}/);
    const allTypes = names !== null && !/^\s*[\w$]+\s*,/.test(m[3]) && names[1].split(',').every((s) => !s.trim() || /^\s*type\s/.test(s));
    out.push({ spec: m[4], typeOnly: Boolean(m[2]) || allTypes, dynamic: false });
  }
  for (const m of text.matchAll(BARE)) out.push({ spec: m[1], typeOnly: false, dynamic: false });
  for (const m of text.matchAll(DYNAMIC)) out.push({ spec: m[1], typeOnly: false, dynamic: true });
  return out;
}

/** The source file an import names (`.ts` or a folder's index.ts when the specifier has no extension). */
function fileOf(abs) {
  if (/\.[cm]?[jt]s$/.test(abs)) return abs.replace(/\.[cm]?js$/, '.ts');
  return existsSync(`${abs}.ts`) ? `${abs}.ts` : join(abs, 'index.ts');
}

const files = walk(src);
const bad = [];
const edges = new Map(); // folder -> Set of folders it imports values from
const fileEdges = new Map(); // file -> Set of files it imports (types too)
let count = 0;
for (const file of files) {
  const from = layerOf(file);
  fileEdges.set(file, new Set());
  for (const imp of importsOf(readFileSync(file, 'utf8'))) {
    count++;
    const target = resolve(dirname(file), imp.spec);
    fileEdges.get(file).add(fileOf(target));
    const to = layerOf(target);
    if (to === undefined) continue;
    const why = violation(from, to, imp);
    if (why) bad.push(`${relative(root, file)} -> ${imp.spec}  (${why})`);
    if (from !== to && !imp.typeOnly) edges.set(from, (edges.get(from) ?? new Set()).add(to));
  }
}

// File import cycles (type-only imports count: a type cycle ties the modules as much as a value
// one): the strongly connected components (Tarjan), one cycle printed per component.
{
  let next = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const components = [];
  const strong = (v) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of fileEdges.get(v) ?? []) {
      if (!fileEdges.has(w)) continue;
      if (!index.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) === index.get(v)) {
      const c = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        c.push(w);
      } while (w !== v);
      if (c.length > 1 || fileEdges.get(v).has(v)) components.push(c);
    }
  };
  for (const v of fileEdges.keys()) if (!index.has(v)) strong(v);
  for (const c of components) {
    // a shortest way back to the first file (breadth-first inside the component)
    const inC = new Set(c);
    const start = [...c].sort()[0];
    const prev = new Map([[start, undefined]]);
    const queue = [start];
    let found;
    while (queue.length > 0 && found === undefined) {
      const v = queue.shift();
      for (const w of fileEdges.get(v)) {
        if (!inC.has(w)) continue;
        if (w === start) {
          found = v;
          break;
        }
        if (!prev.has(w)) {
          prev.set(w, v);
          queue.push(w);
        }
      }
    }
    const path = [start];
    for (let v = found; v !== undefined && v !== start; v = prev.get(v)) path.splice(1, 0, v);
    bad.push(`import cycle: ${[...path, start].map((f) => relative(root, f)).join(' -> ')}${c.length > path.length ? ` (${c.length} files tied)` : ''}`);
  }
}

// VIM types: the names of each VIM folder (the string constants of its vim-type.ts) appear as a
// string only there and where the simulated cloud and the composition root live.
{
  const infra = join(src, 'infra');
  const vimFolders = existsSync(infra) ? readdirSync(infra).filter((d) => existsSync(join(infra, d, 'vim-type.ts'))) : [];
  const owner = new Map(); // name -> VIM folder
  for (const d of vimFolders) {
    const code = readFileSync(join(infra, d, 'vim-type.ts'), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
    for (const m of code.matchAll(/(['"`])([^'"`\n]+)\1/g)) owner.set(m[2], d);
  }
  const free = ['main', 'sim', 'lab'].map((d) => join(src, d) + sep);
  const LITERAL = /(['"`])([^'"`\n]*)\1/g;
  for (const file of files) {
    if (free.some((d) => file.startsWith(d))) continue;
    const lines = readFileSync(file, 'utf8').split('\n');
    for (const [i, line] of lines.entries()) {
      for (const m of line.matchAll(LITERAL)) {
        const d = owner.get(m[2]);
        if (d === undefined || file.startsWith(join(infra, d) + sep)) continue;
        bad.push(`${relative(root, file)}:${i + 1} names VIM type ${m[1]}${m[2]}${m[1]}  (only src/infra/${d}/ and the composition root name it; import its constant from src/infra/${d}/vim-type.ts)`);
      }
    }
  }
}

// Folder cycles over value imports (type-only imports are erased at run time): a depth-first search.
const cycles = new Set();
const visit = (node, path) => {
  for (const next of edges.get(node) ?? []) {
    const at = path.indexOf(next);
    if (at >= 0) {
      const cyc = path.slice(at);
      const start = cyc.indexOf([...cyc].sort()[0]);
      cycles.add([...cyc.slice(start), ...cyc.slice(0, start), cyc[start]].join(' -> '));
    } else if (path.length < 20) visit(next, [...path, next]);
  }
};
for (const node of edges.keys()) visit(node, [node]);
for (const c of cycles) bad.push(`folder cycle: ${c}`);

if (bad.length > 0) {
  console.error(`check-deps: ${bad.length} violation(s) of the dependency rule (docs/architecture.md):`);
  for (const b of bad) console.error(`  ${b}`);
  process.exit(1);
}
console.log(`check-deps: ${files.length} files, ${count} relative imports, ${new Set(files.map(layerOf)).size} layers: dependency rule holds, no folder cycles, no import cycles, VIM types named only in their folders`);
