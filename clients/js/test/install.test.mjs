// The package as an app gets it (README, "Install from the repository"): packed with `npm pack`, installed from the
// tarball into an app of its own (offline: it has no dependencies), imported by its name, its types found by tsc.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const packageFolder = join(dirname(fileURLToPath(import.meta.url)), "..");
const run = (command, args, cwd) => execFileSync(command, args, { cwd, encoding: "utf8", timeout: 60_000, stdio: ["ignore", "pipe", "pipe"] });

test("npm pack, npm install of the tarball, import by name and types by name", () => {
  const folder = mkdtempSync(join(tmpdir(), "herald-js-install-"));
  try {
    run("npm", ["pack", packageFolder, "--pack-destination", folder, "--silent"], folder);
    const [tarball] = readdirSync(folder).filter((name) => name.endsWith(".tgz"));
    assert.match(tarball, /^herald-chat-client-\d+\.\d+\.\d+\.tgz$/);
    const app = join(folder, "app");
    run("mkdir", ["-p", app], folder);
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", version: "1.0.0", type: "module", private: true }));
    run("npm", ["install", "--offline", "--no-audit", "--no-fund", "--silent", join(folder, tarball)], app);
    const installed = readdirSync(join(app, "node_modules", "@herald-chat", "client", "src")).sort();
    assert.deepEqual(installed, ["api.js", "banners.js", "client.js", "config.js", "engine.js", "index.d.ts", "index.js", "live.js", "notifier.js", "policy.js",
      "presentation.js", "pushcrypto.d.ts", "pushcrypto.js", "stream.js", "troubleshoot.d.ts", "wording.js"]);

    writeFileSync(join(app, "main.mjs"), `
      import { HeraldClient, LiveNotifications, Notifier, API } from "@herald-chat/client";
      const client = new HeraldClient({ url: "http://127.0.0.1:9", token: "t", WebSocket: class {} });
      const live = new LiveNotifications({ client, userID: "alice" });
      console.log([typeof Notifier, typeof API, live.client === client].join(" "));
    `);
    assert.equal(run("node", ["main.mjs"], app).trim(), "function function true");

    writeFileSync(join(app, "main.ts"), `
      import { HeraldClient, type Effect } from "@herald-chat/client";
      const client = new HeraldClient({ url: "https://chat.example.com", token: "t" });
      client.on("message", ({ message }) => message.seq.toFixed());
      export const shown = (effect: Effect): string => (effect.type === "show" ? effect.banner.title : "");
    `);
    writeFileSync(join(app, "tsconfig.json"), JSON.stringify({
      compilerOptions: { strict: true, noEmit: true, target: "es2022", module: "es2022", moduleResolution: "node", lib: ["es2022", "dom"], types: [] },
      files: ["main.ts"],
    }));
    run("tsc", ["-p", "."], app);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
});
