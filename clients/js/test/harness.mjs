// What the package's Node tests stand on: a real `herald serve` (HERALD_EXECUTABLE), killable and restartable on the
// same port and database, tokens signed with its secret, and bounded waits that name what they waited for.

import { spawn } from "node:child_process";
import { createHmac, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { after, before } from "node:test";

export const HERALD = process.env.HERALD_EXECUTABLE;
if (!HERALD) throw new Error("HERALD_EXECUTABLE must name the herald binary (scripts/js-tests sets it)");

/** The secret every test server signs tokens with. */
export const SECRET = "node-tests-secret-of-at-least-32-bytes!!";

const base64url = (value) => Buffer.from(value).toString("base64url");

/** An HS256 token for `user`, as an app's backend mints one (docs/protocol.md, "Identity: tokens"). */
export function token(user, { name = user[0].toUpperCase() + user.slice(1), expiresIn = 3600, secret = SECRET } = {}) {
  const header = base64url(JSON.stringify({ alg: "HS256", typ: "JWT" }));
  const claims = base64url(JSON.stringify({ sub: user, name, exp: Math.floor(Date.now() / 1000) + expiresIn }));
  const signature = createHmac("sha256", secret).update(`${header}.${claims}`).digest("base64url");
  return `${header}.${claims}.${signature}`;
}

/** Waits until `condition()` holds, checking every 20 ms, for at most `within` ms; fails naming `what`. */
export async function eventually(what, condition, { within = 15_000, detail = () => "" } = {}) {
  const deadline = Date.now() + within;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`never within ${within / 1000} s: ${what}${detail() ? `; ${detail()}` : ""}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A promise bounded by `within` ms, failing with `what`. */
export function bounded(what, promise, within = 15_000) {
  let timer;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`never within ${within / 1000} s: ${what}`)), within);
    }),
  ]);
}

/** `herald serve` on a database of its own; killed, stopped and started again on the same port and file. */
export class Server {
  constructor(environment = {}) {
    this.folder = mkdtempSync(join(tmpdir(), "herald-js-"));
    this.database = join(this.folder, "herald.sqlite");
    this.environment = environment;
    this.port = 0;
    this.process = null;
  }

  static async start(environment = {}) {
    const server = new Server(environment);
    await server.start();
    return server;
  }

  get url() {
    return `http://127.0.0.1:${this.port}`;
  }

  async start() {
    const child = spawn(HERALD, ["serve", "--port", String(this.port), "--database", this.database], {
      env: {
        PATH: process.env.PATH, HOME: process.env.HOME, HERALD_JWT_SECRET: SECRET,
        HERALD_LIMIT_POSTS_PER_SECOND: "100000", HERALD_LIMIT_POST_BURST: "100000",
        HERALD_LIMIT_STREAM_OPENS_PER_MINUTE: "100000", ...this.environment,
      },
      stdio: ["ignore", "pipe", "ignore"],
    });
    this.process = child;
    const lines = createInterface({ input: child.stdout });
    const first = await bounded("herald serve saying where it listens", new Promise((resolve, reject) => {
      lines.once("line", resolve);
      child.once("exit", (code) => reject(new Error(`herald serve exited (${code}) before it listened`)));
    }), 30_000);
    const match = /127\.0\.0\.1:(\d+)/.exec(first);
    if (!match) throw new Error(`herald serve did not say where it listens: ${first}`);
    this.port = Number(match[1]);
    lines.on("line", () => {}); // keeps reading, so the server never blocks on a full pipe
  }

  /** Ends the process with `signal` and waits (at most 15 s) for it to be gone. */
  async end(signal) {
    const child = this.process;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((resolve) => child.once("exit", resolve));
    child.kill(signal);
    await bounded(`herald serve ending on ${signal}`, gone);
  }

  /** SIGKILL: no shutdown, nothing flushed. */
  kill() {
    return this.end("SIGKILL");
  }

  /** SIGTERM and the graceful exit. */
  stop() {
    return this.end("SIGTERM");
  }

  async close() {
    await this.end("SIGKILL");
    rmSync(this.folder, { recursive: true, force: true });
  }

  /** A request as `user` (a token string, or a user id to mint one for); the JSON answer, or `{status, error}`. */
  async request(user, method, path, body) {
    const bearer = user === null ? null : user.includes(".") ? user : token(user);
    const response = await fetch(this.url + path, {
      method,
      headers: { ...(bearer ? { Authorization: `Bearer ${bearer}` } : {}), ...(body ? { "Content-Type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    if (response.status === 204) return null;
    const payload = await response.json();
    if (!response.ok) throw Object.assign(new Error(`${method} ${path}: ${response.status} ${payload?.error?.code}`), { status: response.status, payload });
    return payload;
  }

  /** Users who exist (each has made a request), and a chat between them: the conversation's id. */
  async chat(kind, creator, others, title = null) {
    for (const user of [creator, ...others]) await this.request(user, "GET", "/v1/conversations");
    return (await this.request(creator, "POST", "/v1/conversations", { kind, members: others, title })).id;
  }

  /** Posts as `user`: the stored message. */
  post(user, conversation, text, extra = {}) {
    return this.request(user, "POST", `/v1/conversations/${encodeURIComponent(conversation)}/messages`, { id: randomUUID(), text, ...extra });
  }
}

/** The server of a `describe` block: started before its tests, with the variables `environment()` resolves to; after
 *  them, `cleanup` runs (closing what the tests opened) and the server is closed. */
export function suiteServer(cleanup = () => {}, environment = () => ({})) {
  const server = new Server();
  before(async () => {
    server.environment = await environment();
    await server.start();
  });
  after(async () => {
    cleanup();
    await server.close();
  });
  return server;
}

/** Collects a client's events of one kind, in order. */
export function record(client, name) {
  const seen = [];
  client.on(name, (value) => seen.push(value));
  return seen;
}

/** A local Expo push service for a server's `HERALD_EXPO_URL`: it takes every push and keeps them, in order, as
 *  Expo's message objects. Its tickets carry no id, so no receipt is asked for (and none waits in the outbox). */
export async function fakeExpo() {
  const pushes = [];
  const service = createServer((request, response) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      let body = [];
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        // not JSON: answered as Expo would, with an error
      }
      if (request.url === "/--/api/v2/push/send" && Array.isArray(body)) {
        pushes.push(...body);
        response.writeHead(200, { "Content-Type": "application/json" });
        response.end(JSON.stringify({ data: body.map(() => ({ status: "ok" })) }));
      } else {
        response.writeHead(400, { "Content-Type": "application/json" });
        response.end(JSON.stringify({ errors: [{ code: "VALIDATION_ERROR", message: "not a push" }] }));
      }
    });
  });
  await new Promise((resolve) => service.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${service.address().port}`,
    pushes,
    /** The pushes of the message `id`. */
    of: (id) => pushes.filter((push) => push.data?.messageId === id),
    close: () => new Promise((resolve) => service.close(resolve)),
  };
}

/** The server's push outbox depth, from `/metrics`. */
export async function outboxDepth(server) {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const line = text.split("\n").find((candidate) => candidate.startsWith("herald_push_outbox_depth "));
  return line ? Number(line.split(" ").pop()) : null;
}
