// The web page's modules (Server/Sources/HeraldServer/Resources/web) import in one direction: no module reaches,
// through its imports, back to itself (docs/architecture.md, "The web client", says the layers). Each module's
// imports are read from its text: static (`import … from`, `import "…"`, `export … from`) and dynamic (`import("…")`),
// comments left out. A relative specifier (or one from the page's root, `/app.js`) is resolved to a file of the page,
// which must exist; `/herald/…` is the JavaScript package (clients/js/src, served there), checked to exist and taken
// as a leaf: the package cannot import the page back, and its own modules are its own tests' concern. Anything else
// (a bare name, an import whose specifier is not a string) fails: the page has no bundler to resolve it.
// HERALD_PAGE_DIR reads another folder of the page's modules (an older version, to see this test fail on it).

import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const pageDir = process.env.HERALD_PAGE_DIR ?? path.join(root, "Server/Sources/HeraldServer/Resources/web");
const packageDir = path.join(root, "clients/js/src");

/** `source` without its comments (a `//` only at a line's start or after a space: `"http://…"` is a string). */
function withoutComments(source) {
  return source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|\s)\/\/.*$/gm, "$1");
}

/** The specifiers `source` imports, static and dynamic, in order. */
export function importsOf(source, name) {
  const text = withoutComments(source);
  const found = [];
  const patterns = [
    /\b(?:import|export)\s*[\w$*{},\s]+?\s*from\s*(["'])([^"']+)\1/g, // import { a } from "x", export * from "x"
    /\bimport\s*(["'])([^"']+)\1/g, // import "x"
  ];
  for (const pattern of patterns) {
    for (const match of text.matchAll(pattern)) found.push({ at: match.index, specifier: match[2] });
  }
  for (const match of text.matchAll(/\bimport\s*\(\s*([^)]*?)\s*\)/g)) {
    const literal = /^(["'`])([^"'`$]+)\1$/.exec(match[1]);
    assert.ok(literal, `${name}: a dynamic import whose module cannot be read from the text: import(${match[1]})`);
    found.push({ at: match.index, specifier: literal[2] });
  }
  return found.sort((a, b) => a.at - b.at).map((entry) => entry.specifier);
}

/** The page's modules, each with the page's modules it imports (file names) and the package's (`/herald/…`). */
export function importGraph(dir) {
  const modules = readdirSync(dir).filter((file) => file.endsWith(".js")).sort();
  const graph = new Map();
  for (const module of modules) {
    const edges = [];
    for (const specifier of importsOf(readFileSync(path.join(dir, module), "utf8"), module)) {
      if (specifier.startsWith("/herald/")) {
        const file = path.join(packageDir, specifier.slice("/herald/".length));
        assert.ok(existsSync(file), `${module} imports ${specifier}, which is not in clients/js/src`);
        continue; // a leaf: the package's
      }
      assert.ok(/^(\.\.?)?\//.test(specifier), `${module} imports "${specifier}": the page has no bundler, only paths load`);
      const file = specifier.startsWith("/") ? path.join(dir, specifier) : path.resolve(dir, specifier);
      assert.ok(existsSync(file), `${module} imports ${specifier}, which is not a file of the page`);
      assert.equal(path.dirname(file), path.resolve(dir), `${module} imports ${specifier}, outside the page's folder`);
      edges.push(path.basename(file));
    }
    graph.set(module, [...new Set(edges)]);
  }
  return graph;
}

/** A cycle of `graph` as the modules met along it (`["a.js", "b.js", "a.js"]`), or null when it has none. */
export function findCycle(graph) {
  const state = new Map(); // module → "open" while its imports are walked, "done" after
  const trail = [];
  function walk(module) {
    state.set(module, "open");
    trail.push(module);
    for (const next of graph.get(module) ?? []) {
      if (state.get(next) === "open") return [...trail.slice(trail.indexOf(next)), next];
      if (!state.has(next)) {
        const cycle = walk(next);
        if (cycle) return cycle;
      }
    }
    trail.pop();
    state.set(module, "done");
    return null;
  }
  for (const module of graph.keys()) {
    if (state.has(module)) continue;
    const cycle = walk(module);
    if (cycle) return cycle;
  }
  return null;
}

/** Each module's layer: 0 for one that imports none of the page, else one above the highest it imports. */
function layers(graph) {
  const layer = new Map();
  const of = (module) => {
    if (!layer.has(module)) layer.set(module, Math.max(-1, ...(graph.get(module) ?? []).map(of)) + 1);
    return layer.get(module);
  };
  for (const module of graph.keys()) of(module);
  return layer;
}

test("the page's modules import one another in one direction: no cycle", (t) => {
  const graph = importGraph(pageDir);
  // The reading found the page: app.js on top of the others, so an empty reading cannot pass.
  assert.ok(graph.has("app.js") && graph.get("app.js").includes("state.js"), `app.js imports state.js: ${[...graph]}`);
  assert.ok(graph.size >= 10, `the page's modules: ${[...graph.keys()]}`);
  const cycle = findCycle(graph);
  assert.equal(cycle, null, `the page's modules import in a circle: ${cycle?.join(" → ")}`);
  const layer = layers(graph);
  const lines = [...graph.keys()].sort((a, b) => layer.get(a) - layer.get(b) || (a < b ? -1 : 1))
    .map((module) => `${layer.get(module)} ${module}${graph.get(module).length ? ` → ${graph.get(module).join(", ")}` : ""}`);
  t.diagnostic(`layers, bottom first:\n${lines.join("\n")}`);
});

test("the cycle check finds a circle through a dynamic import, and none in a comment", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "herald-page-modules-"));
  try {
    writeFileSync(path.join(dir, "a.js"), `import { b } from "./b.js";\nimport { cleanText } from "/herald/presentation.js";\n`);
    writeFileSync(path.join(dir, "b.js"), `// import { a } from "./c.js";\nexport async function b() {\n  return (await import("./c.js")).c;\n}\n`);
    writeFileSync(path.join(dir, "c.js"), `/* import "./b.js"; */\nimport {\n  a,\n} from "/a.js";\nexport const c = a;\n`);
    const graph = importGraph(dir);
    assert.deepEqual(Object.fromEntries(graph), { "a.js": ["b.js"], "b.js": ["c.js"], "c.js": ["a.js"] });
    assert.deepEqual(findCycle(graph), ["a.js", "b.js", "c.js", "a.js"]);
    writeFileSync(path.join(dir, "c.js"), `export const c = 1;\n`);
    assert.equal(findCycle(importGraph(dir)), null);
    writeFileSync(path.join(dir, "c.js"), `export const c = import(name);\n`);
    assert.throws(() => importGraph(dir), /cannot be read from the text/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
