// The dashboard in a real browser: a one-node `warden dev` cluster (secure:
// its own CA, node and client certificates; ports from :0 on 127.0.0.1),
// locks made with the `warden` CLI, and the page at /ui read by headless
// Chromium with root's client certificate (playwright-core's
// `clientCertificates`, the system's chromium: nothing is downloaded).
//
// What it defends (docs/operations.md "Dashboard"):
// - the page shows a held lock's fencing token and its holder's principal,
//   and shows it free after the release (it refreshes by itself);
// - a resource named like markup renders as text: no element is made from
//   it and no dialog fires (names are anyone's input);
// - without a client certificate the page is refused (401);
// - every answer carries `Content-Security-Policy: default-src 'self'`.
// With SCREENSHOT=1 it saves docs/images/dashboard.png (the picture in
// docs/operations.md); a plain run leaves the tree as it found it.
//
// Env: WARDEN_BIN (default ../../target/debug/warden), CHROMIUM (default
// `chromium` on PATH), SCREENSHOT.

import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, mkdirSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../..");
const wardenBin = process.env.WARDEN_BIN || path.join(repo, "target/debug/warden");
const chromiumBin = process.env.CHROMIUM || findOnPath("chromium");
const XSS_NAME = "<img src=x onerror=alert(1)>";
const WAIT_MS = 20000;

function findOnPath(name) {
  for (const dir of (process.env.PATH || "").split(":")) {
    const p = path.join(dir, name);
    if (existsSync(p)) return p;
  }
  throw new Error(`${name} is not on PATH (set CHROMIUM to its path)`);
}

// Starts `warden dev --nodes 1` and resolves with what it printed once it
// says "ready": the dashboard URL, the endpoints and the certs dir.
function startDev(dir) {
  const child = spawn(wardenBin, ["dev", "--nodes", "1", "--data-dir", dir], {
    stdio: ["ignore", "pipe", "pipe"],
    // Its client profile goes beside its data, never into the real home's
    // ~/.config (where the next CLI run would read it).
    env: { ...cleanEnv(), XDG_CONFIG_HOME: path.join(dir, "config") },
  });
  let out = "";
  let err = "";
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`warden dev not ready in 60 s:\n${out}\n${err}`)), 60000);
    child.stdout.on("data", (d) => {
      out += d;
      if (/^ready$/m.test(out)) {
        clearTimeout(timer);
        const pick = (re) => {
          const m = out.match(re);
          if (!m) reject(new Error(`no ${re} in:\n${out}`));
          return m && m[1];
        };
        resolve({
          dashboard: pick(/^dashboard: (\S+)$/m),
          endpoints: pick(/^export WARDEN_ENDPOINTS=(\S+)$/m),
          certsDir: pick(/^export WARDEN_CERTS_DIR=(\S+)$/m),
        });
      }
    });
    child.stderr.on("data", (d) => (err += d));
    child.on("exit", (code) => reject(new Error(`warden dev exited (${code}):\n${out}\n${err}`)));
  });
  return { child, ready };
}

function cleanEnv() {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith("WARDEN_")) delete env[k];
  return env;
}

function cli(cluster, args) {
  const out = execFileSync(wardenBin, [...args, "--output", "json"], {
    env: { ...cleanEnv(), WARDEN_ENDPOINTS: cluster.endpoints, WARDEN_CERTS_DIR: cluster.certsDir },
    encoding: "utf8",
  });
  return JSON.parse(out);
}

// A CLI acquire that waits in the queue (killed at the end of the test).
function waiter(cluster, resource) {
  return spawn(wardenBin, ["acquire", resource, "--ttl", "60s", "--wait", "50s"], {
    stdio: "ignore",
    env: { ...cleanEnv(), WARDEN_ENDPOINTS: cluster.endpoints, WARDEN_CERTS_DIR: cluster.certsDir },
  });
}

// The row of the locks table whose resource cell's text is `name` exactly.
async function lockRow(page, name) {
  return page.locator("#locks tbody tr").filter({ has: page.locator("td.resource", { hasText: name }) }).first();
}

async function main() {
  const started = Date.now();
  const dir = mkdtempSync(path.join(tmpdir(), "warden-ui-"));
  const { child: dev, ready } = startDev(dir);
  const waiters = [];
  let browser;
  try {
    const cluster = await ready;
    const origin = new URL(cluster.dashboard).origin;
    assert.match(cluster.dashboard, /^https:\/\/127\.0\.0\.1:\d+\/ui$/);

    const held = cli(cluster, ["acquire", "orders/42", "--ttl", "60s"]);
    const xss = cli(cluster, ["acquire", XSS_NAME, "--ttl", "60s"]);
    cli(cluster, ["acquire", "billing/run", "--ttl", "60s"]);
    cli(cluster, ["acquire", "queue/busy", "--ttl", "60s"]);
    for (let i = 0; i < 3; i++) waiters.push(waiter(cluster, "queue/busy"));

    browser = await chromium.launch({
      executablePath: chromiumBin,
      headless: true,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
    });
    const certsDir = cluster.certsDir;

    // Without a client certificate: refused, with the CSP all the same.
    const anonymous = await browser.newContext({ ignoreHTTPSErrors: true });
    const refused = await (await anonymous.newPage()).goto(cluster.dashboard);
    assert.equal(refused.status(), 401, "no certificate: 401");
    assert.equal(refused.headers()["content-security-policy"], "default-src 'self'");
    await anonymous.close();

    // The dev CA is not in the browser's store: the server's certificate is
    // accepted here as the operator's import of ca.crt would (see docs).
    const context = await browser.newContext({
      ignoreHTTPSErrors: true,
      viewport: { width: 1500, height: 900 },
      clientCertificates: [
        {
          origin,
          certPath: path.join(certsDir, "client.root.crt"),
          keyPath: path.join(certsDir, "client.root.key"),
        },
      ],
    });
    const page = await context.newPage();
    const dialogs = [];
    page.on("dialog", (d) => {
      dialogs.push(d.message());
      d.dismiss();
    });
    const consoleErrors = [];
    page.on("console", (m) => m.type() === "error" && consoleErrors.push(m.text()));
    const responses = [];
    page.on("response", (r) => responses.push(r));

    const res = await page.goto(cluster.dashboard);
    assert.equal(res.status(), 200);

    // The held lock's fencing token and principal.
    const row = await lockRow(page, "orders/42");
    await row.locator("td.token").filter({ hasText: String(held.fencing_token) }).waitFor({ timeout: WAIT_MS });
    assert.equal(await row.locator("td.token").textContent(), String(held.fencing_token));
    assert.ok((await row.textContent()).includes("root"), "the holder's principal shows");

    // The markup-like name: its text is there, no <img> was made, no dialog.
    const xssRow = await lockRow(page, XSS_NAME);
    await xssRow.waitFor({ timeout: WAIT_MS });
    assert.equal(await xssRow.locator("td.resource").textContent(), XSS_NAME);
    assert.equal(await xssRow.locator("td.token").textContent(), String(xss.fencing_token));
    assert.equal(await page.locator("img").count(), 0, "no element made from a name");

    // Hot locks: the queued resource first with its 3 waiters.
    await page
      .locator("#top tbody tr")
      .first()
      .filter({ hasText: "queue/busy" })
      .filter({ has: page.locator("td:nth-child(2)", { hasText: /^3$/ }) })
      .waitFor({ timeout: WAIT_MS });

    // The cluster: one member, the leader.
    await page.locator("#members tbody tr td", { hasText: "leader" }).waitFor({ timeout: WAIT_MS });

    // The timeline of a chosen lock: its grant with the token.
    await row.click();
    await page
      .locator("#timeline tbody tr")
      .filter({ hasText: "granted" })
      .filter({ hasText: String(held.fencing_token) })
      .waitFor({ timeout: WAIT_MS });
    if (process.env.SCREENSHOT === "1") {
      await page.screenshot({ path: path.join(repo, "docs/images/dashboard.png"), fullPage: true });
    }

    // Release: the page shows it freed by itself (no reload), and the
    // timeline shows the release with the token.
    cli(cluster, ["release", String(held.lease_id), "orders/42"]);
    await page.locator("#timeline tbody tr").first().filter({ hasText: "released" }).waitFor({ timeout: WAIT_MS });
    await page.waitForFunction(
      () => ![...document.querySelectorAll("#locks td.resource")].some((td) => td.textContent === "orders/42"),
      null,
      { timeout: WAIT_MS },
    );
    const freedTop = page.locator("#top tbody tr").filter({ has: page.locator("td.resource", { hasText: /^orders\/42$/ }) });
    assert.equal(await freedTop.locator("td:nth-child(2)").textContent(), "0", "freed: no queue");

    assert.deepEqual(dialogs, [], "no dialog fired");
    assert.equal(await page.locator("img").count(), 0);
    const failed = responses.filter((r) => r.status() >= 400).map((r) => `${r.status()} ${r.url()}`);
    assert.deepEqual(failed, [], "no request of the page failed");
    assert.deepEqual(consoleErrors, [], "no console errors (a CSP violation would be one)");
    for (const r of responses) {
      assert.equal(r.headers()["content-security-policy"], "default-src 'self'", r.url());
    }
    console.log(`dashboard browser test: ok in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  } finally {
    for (const w of waiters) w.kill("SIGTERM");
    if (browser) await browser.close();
    dev.kill("SIGTERM");
    await new Promise((r) => (dev.exitCode !== null ? r() : dev.on("exit", r)));
    rmSync(dir, { recursive: true, force: true });
  }
}

mkdirSync(path.join(repo, "docs/images"), { recursive: true });
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
