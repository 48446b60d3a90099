// Regenerates what this package takes from the server's protos:
//
// - proto/warden/*.proto: byte-for-byte copies of crates/warden-proto/proto
//   (warden, lease, watch, admin; peer.proto is the nodes' internal service),
//   loaded at run time by @grpc/proto-loader (src/proto.ts);
// - src/generated/: TypeScript types of those messages and services, written
//   by proto-loader-gen-types (shipped in @grpc/proto-loader, the version
//   package-lock.json pins), with the options src/proto.ts loads with, and
//   `.js` added to relative imports (Node's ESM resolution needs them).
//
//   node scripts/gen.mjs           regenerate in place
//   node scripts/gen.mjs --check   regenerate into a temp dir; exit 1 with the
//                                  differing files when the committed ones differ
//
// No protoc: proto-loader-gen-types parses the protos with protobufjs.
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const pkg = join(here, "..");
const serverProtos = join(pkg, "..", "..", "crates", "warden-proto", "proto");
const files = ["warden.proto", "lease.proto", "watch.proto", "admin.proto"];
const check = process.argv.includes("--check");

function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...walk(path));
    else out.push(path);
  }
  return out;
}

function generate(out) {
  const protoOut = join(out, "proto", "warden");
  mkdirSync(protoOut, { recursive: true });
  for (const f of files) cpSync(join(serverProtos, f), join(protoOut, f));
  const typesOut = join(out, "src", "generated");
  mkdirSync(typesOut, { recursive: true });
  const bin = join(pkg, "node_modules", ".bin", "proto-loader-gen-types");
  execFileSync(
    bin,
    ["--longs", "Number", "--enums", "String", "--defaults", "--oneofs", "--grpcLib", "@grpc/grpc-js",
      "-I", protoOut, "-O", typesOut, ...files],
    { cwd: protoOut, stdio: ["ignore", "ignore", "inherit"] },
  );
  for (const path of walk(typesOut)) {
    const text = readFileSync(path, "utf8")
      .replace(/^\/\/ Original file: .*$/m, `// Generated from crates/warden-proto/proto by scripts/gen.mjs; do not edit.`)
      .replace(/from '(\.{1,2}\/[^']+)'/g, (_m, p) => `from '${p}.js'`);
    writeFileSync(path, text);
  }
}

const scratch = mkdtempSync(join(tmpdir(), "warden-node-gen-"));
try {
  generate(scratch);
  const targets = [join("proto", "warden"), join("src", "generated")];
  if (check) {
    const differ = [];
    for (const t of targets) {
      const fresh = walk(join(scratch, t)).map((p) => relative(scratch, p));
      let committed = [];
      try {
        committed = walk(join(pkg, t)).map((p) => relative(pkg, p));
      } catch {
        // missing: every fresh file differs
      }
      for (const p of new Set([...fresh, ...committed])) {
        let a = null;
        let b = null;
        try { a = readFileSync(join(scratch, p)); } catch { /* absent */ }
        try { b = readFileSync(join(pkg, p)); } catch { /* absent */ }
        if (a === null || b === null || !a.equals(b)) differ.push(p);
      }
    }
    if (differ.length) {
      console.error(`gen --check: these differ from what crates/warden-proto/proto generates (run npm run gen and commit):\n  ${differ.join("\n  ")}`);
      process.exit(1);
    }
    console.log("gen --check: proto/warden and src/generated are up to date");
  } else {
    for (const t of targets) {
      rmSync(join(pkg, t), { recursive: true, force: true });
      cpSync(join(scratch, t), join(pkg, t), { recursive: true });
    }
    console.log(`gen: regenerated ${walk(join(pkg, "src", "generated")).length} type files and ${files.length} protos`);
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
