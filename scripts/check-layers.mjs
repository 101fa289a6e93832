#!/usr/bin/env node
// The import rules of src/ (docs/architecture.md, "Layers"), checked on every `npm run lint`:
//   1. a folder imports only from folders on its own layer or below it (LAYERS, top first);
//   2. no import cycle between folders (two folders of one layer may not import each other both ways);
//   3. no import cycle between files;
//   4. no import cycle between the domain folders of a folder split by domain (DOMAIN_SPLIT: core/pipeline,
//      core/limits, …): a domain may use another, never both ways.
// Type-only imports count: a type cycle is still a cycle for whoever reads the code.
//   node scripts/check-layers.mjs [root]     exit 0 when the rules hold, 1 with one line per problem otherwise
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Top first. `.` is the files directly in src/ (main, serve, app, index). */
export const LAYERS = [
  ['cli'],
  ['.'],
  ['wiring'],
  ['process'],
  ['routes', 'dashboard'],
  ['surfaces'],
  ['http'],
  ['observability', 'usage', 'webhooks'],
  ['request'],
  ['auth'],
  ['core'],
  ['providers', 'store', 'mcp'],
  ['config'],
  ['errors', 'streaming', 'secrets', 'net', 'wire'],
  ['names'],
];

/** Folders whose subfolders are domains: the subfolders' imports may not form a cycle. */
export const DOMAIN_SPLIT = ['core'];

const IMPORT =
  /(?:^|[\s;])(?:import|export)\s+(?:type\s+)?(?:[\w*\s{},]*?\s+from\s+)?['"](\.{1,2}\/[^'"]+)['"]|\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

function sourceFiles(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(path));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** The file → files graph of the relative imports under `root` (`.js` specifiers name the `.ts` sources). */
export function importGraph(root) {
  const files = sourceFiles(root);
  const known = new Set(files);
  const graph = new Map();
  for (const file of files) {
    const targets = new Set();
    for (const match of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const target = resolve(dirname(file), match[1] ?? match[2]).replace(/\.js$/, '.ts');
      if (known.has(target)) targets.add(target);
    }
    graph.set(file, targets);
  }
  return graph;
}

/** Strongly connected components with more than one member (Tarjan): each is a cycle. */
function cycles(nodes, next) {
  let counter = 0;
  const index = new Map(),
    low = new Map(),
    stack = [],
    onStack = new Set(),
    found = [];
  const visit = (node) => {
    index.set(node, counter);
    low.set(node, counter);
    counter++;
    stack.push(node);
    onStack.add(node);
    for (const other of next(node)) {
      if (!index.has(other)) {
        visit(other);
        low.set(node, Math.min(low.get(node), low.get(other)));
      } else if (onStack.has(other)) low.set(node, Math.min(low.get(node), index.get(other)));
    }
    if (low.get(node) === index.get(node)) {
      const members = [];
      let member;
      do {
        member = stack.pop();
        onStack.delete(member);
        members.push(member);
      } while (member !== node);
      if (members.length > 1) found.push(members.reverse());
    }
  };
  for (const node of nodes) if (!index.has(node)) visit(node);
  return found;
}

/** Every broken rule under `root`, one line each (empty when the layers hold). */
export function checkLayers(root, layers = LAYERS, domainSplit = DOMAIN_SPLIT) {
  const graph = importGraph(root);
  const rank = new Map(layers.flatMap((folders, level) => folders.map((folder) => [folder, level])));
  const rel = (file) => relative(root, file).split(sep).join('/');
  const folderOf = (file) => {
    const parts = rel(file).split('/');
    return parts.length > 1 ? parts[0] : '.';
  };
  const problems = [];
  const folderEdges = new Map();
  for (const [file, targets] of graph) {
    const from = folderOf(file);
    if (!rank.has(from)) {
      problems.push(`${rel(file)}: its folder "${from}" has no layer (add it to LAYERS in scripts/check-layers.mjs)`);
      continue;
    }
    for (const target of targets) {
      const to = folderOf(target);
      if (to === from || !rank.has(to)) continue;
      if (rank.get(to) < rank.get(from))
        problems.push(`${rel(file)} imports ${rel(target)}: "${from}" sits below "${to}" and may not import it`);
      if (!folderEdges.has(from)) folderEdges.set(from, new Set());
      folderEdges.get(from).add(to);
    }
  }
  for (const members of cycles([...folderEdges.keys()], (folder) => folderEdges.get(folder) ?? [])) {
    problems.push(`folders import each other: ${members.join(' -> ')} -> ${members[0]}`);
  }
  const domainOf = (file) => {
    const parts = rel(file).split('/');
    return parts.length > 2 && domainSplit.includes(parts[0]) ? `${parts[0]}/${parts[1]}` : undefined;
  };
  const domainEdges = new Map();
  for (const [file, targets] of graph) {
    const from = domainOf(file);
    if (from === undefined) continue;
    for (const target of targets) {
      const to = domainOf(target);
      if (to === undefined || to === from) continue;
      if (!domainEdges.has(from)) domainEdges.set(from, new Set());
      domainEdges.get(from).add(to);
    }
  }
  for (const members of cycles([...domainEdges.keys()], (domain) => domainEdges.get(domain) ?? [])) {
    problems.push(`domain folders import each other: ${members.join(' -> ')} -> ${members[0]}`);
  }
  for (const members of cycles([...graph.keys()], (file) => graph.get(file))) {
    problems.push(`files import each other: ${members.map(rel).join(' -> ')} -> ${rel(members[0])}`);
  }
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..', 'src'));
  const problems = checkLayers(root);
  for (const problem of problems) process.stderr.write(`layers: ${problem}\n`);
  if (problems.length > 0) {
    process.stderr.write(`layers: ${problems.length} problem(s); the rules are in docs/architecture.md ("Layers")\n`);
    process.exit(1);
  }
  process.stdout.write(`layers: ${importGraph(root).size} files, no upward import, no cycle\n`);
}
