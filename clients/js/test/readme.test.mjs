// The READMEs' TypeScript compiles as it is written: every ```ts block of README.md and clients/js/README.md, each a
// module of its own, checked by `tsc --strict --noEmit` against the package's declarations, imported by its name
// ("@herald-chat/client") from a node_modules that holds this package, as an app that installed it does. tsc is
// Debian's node-typescript, which scripts/js-tests installs when it is missing.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const READMES = ["README.md", "clients/js/README.md"];

/** The code of each ```ts (or ```typescript) block of a Markdown text. */
function typescriptBlocks(markdown) {
  return [...markdown.matchAll(/^```(?:ts|typescript)\n([\s\S]*?)^```$/gm)].map((match) => match[1]);
}

test("the READMEs' TypeScript compiles with tsc --strict against the package's declarations", () => {
  const folder = mkdtempSync(join(tmpdir(), "herald-readme-ts-"));
  try {
    mkdirSync(join(folder, "node_modules", "@herald-chat"), { recursive: true });
    symlinkSync(join(ROOT, "clients", "js"), join(folder, "node_modules", "@herald-chat", "client"), "dir");
    const files = [];
    for (const readme of READMES) {
      typescriptBlocks(readFileSync(join(ROOT, readme), "utf8")).forEach((code, index) => {
        const file = `${readme.replace(/[^A-Za-z0-9]+/g, "-")}-${index + 1}.ts`;
        // A module each (a block without imports would otherwise share one global scope with the others).
        writeFileSync(join(folder, file), `${code}\nexport {};\n`);
        files.push(file);
      });
    }
    assert.ok(files.some((file) => file.startsWith("clients-js-README")), `clients/js/README.md has no TypeScript block: ${files}`);
    writeFileSync(join(folder, "tsconfig.json"), JSON.stringify({
      compilerOptions: {
        strict: true, noEmit: true, target: "es2022", module: "es2022", moduleResolution: "node",
        lib: ["es2022", "dom"], types: [], skipLibCheck: false,
      },
      files,
    }));
    const tsc = spawnSync("tsc", ["--strict", "--noEmit", "-p", folder], { encoding: "utf8", timeout: 120_000 });
    assert.equal(tsc.error, undefined, `tsc could not run (scripts/js-tests installs node-typescript): ${tsc.error}`);
    assert.equal(tsc.status, 0, `tsc --strict refused the READMEs' TypeScript:\n${tsc.stdout}${tsc.stderr}`);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
});
