//! The SQL recipes of `docs/fencing.md` against a real PostgreSQL ("The
//! fencing story" in docs/semantics.md: the resource keeps the highest token it
//! accepted, in the same transaction as the write, and rejects a lower one;
//! per slot for a semaphore's permits, and in two columns for a read-write
//! lock, `docs/fencing.md` "Semaphore permits and read-write locks").
//!
//! The test starts its own throw-away server: `initdb` into a temp dir (as the
//! `postgres` user when run as root, since PostgreSQL refuses to run as
//! root), listening on a Unix socket in that dir only (no TCP). `.ci/run`
//! installs PostgreSQL; where it is missing the test prints why and returns.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The recipe: claim the fence row (insert, or raise it when not lower), and
/// do the protected write in the same transaction; a stale token claims 0
/// rows and the transaction writes nothing.
const FENCED_WRITE: &str = r#"
BEGIN;
CREATE TEMP TABLE claim ON COMMIT DROP AS
WITH c AS (
  INSERT INTO fence (resource, token) VALUES (:'resource', :token)
  ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token
  WHERE fence.token <= EXCLUDED.token
  RETURNING 1
) SELECT count(*) AS n FROM c;
UPDATE accounts SET balance = :balance, written_by = :token
WHERE id = 1 AND (SELECT n FROM claim) = 1;
SELECT n FROM claim;
COMMIT;
"#;

/// The permit recipe: claim the (resource, slot) row, and record the write
/// only if the claim matched.
const PERMIT_WRITE: &str = r#"
BEGIN;
CREATE TEMP TABLE claim ON COMMIT DROP AS
WITH c AS (
  INSERT INTO fence_slot (resource, slot, token) VALUES (:'resource', :slot, :token)
  ON CONFLICT (resource, slot) DO UPDATE SET token = EXCLUDED.token
  WHERE fence_slot.token <= EXCLUDED.token
  RETURNING 1
) SELECT count(*) AS n FROM c;
INSERT INTO writes (token) SELECT :token WHERE (SELECT n FROM claim) = 1;
SELECT n FROM claim;
COMMIT;
"#;

/// The read-write recipe's exclusive statement.
const EXCLUSIVE_WRITE: &str = r#"
BEGIN;
CREATE TEMP TABLE claim ON COMMIT DROP AS
WITH c AS (
  INSERT INTO fence_rw (resource, highest, highest_exclusive) VALUES (:'resource', :token, :token)
  ON CONFLICT (resource) DO UPDATE
  SET highest = EXCLUDED.highest, highest_exclusive = EXCLUDED.highest
  WHERE fence_rw.highest <= EXCLUDED.highest
  RETURNING 1
) SELECT count(*) AS n FROM c;
INSERT INTO writes (token) SELECT :token WHERE (SELECT n FROM claim) = 1;
SELECT n FROM claim;
COMMIT;
"#;

/// The read-write recipe's shared statement.
const SHARED_WRITE: &str = r#"
BEGIN;
CREATE TEMP TABLE claim ON COMMIT DROP AS
WITH c AS (
  INSERT INTO fence_rw (resource, highest) VALUES (:'resource', :token)
  ON CONFLICT (resource) DO UPDATE
  SET highest = GREATEST(fence_rw.highest, EXCLUDED.highest)
  WHERE fence_rw.highest_exclusive <= EXCLUDED.highest
  RETURNING 1
) SELECT count(*) AS n FROM c;
INSERT INTO writes (token) SELECT :token WHERE (SELECT n FROM claim) = 1;
SELECT n FROM claim;
COMMIT;
"#;

fn find_pg_bin() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("initdb").exists() && p.join("pg_ctl").exists())
        .collect();
    dirs.sort();
    dirs.pop()
}

fn is_root() -> bool {
    nix_uid() == 0
}

fn nix_uid() -> u32 {
    // `id -u` keeps this test free of unsafe code and extra crates.
    Command::new("id")
        .arg("-u")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(u32::MAX)
}

/// Runs a PostgreSQL program, as `postgres` when we are root.
fn pg(bin: &Path, program: &str, args: &[&str]) -> Output {
    let exe = bin.join(program);
    let mut cmd = if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(&exe);
        c
    } else {
        Command::new(&exe)
    };
    cmd.args(args).output().expect("run a PostgreSQL program")
}

struct Server {
    bin: PathBuf,
    data: PathBuf,
    tmp: tempfile::TempDir,
    /// How many scripts have been written (each gets a file of its own).
    scripts: std::cell::Cell<u32>,
}

impl Server {
    fn psql(&self, sql: &str, vars: &[(&str, String)]) -> String {
        let mut args = vec![
            "-h".to_string(),
            self.data.display().to_string(),
            "-p".into(),
            "5499".into(),
            "-d".into(),
            "postgres".into(),
            "-U".into(),
            "postgres".into(),
            "-X".into(),
            "-q".into(),
            "-t".into(),
            "-A".into(),
            "-v".into(),
            "ON_ERROR_STOP=1".into(),
        ];
        for (k, v) in vars {
            args.push("-v".into());
            args.push(format!("{k}={v}"));
        }
        args.push("-c".into());
        args.push(sql.into());
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = pg(&self.bin, "psql", &refs);
        assert!(
            out.status.success(),
            "psql failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// One fenced write; true when it was accepted.
    fn fenced_write(&self, token: u64, balance: i64) -> bool {
        self.script(
            FENCED_WRITE,
            &[
                ("resource", "ledger".into()),
                ("token", token.to_string()),
                ("balance", balance.to_string()),
            ],
        ) == "1"
    }

    /// Runs `sql` as a script with psql variables `vars`; its output.
    fn script(&self, sql: &str, vars: &[(&str, String)]) -> String {
        // psql -c runs one string as one multi-statement request; variables
        // need the script form, so feed it through -f on a temp file.
        let script = self
            .tmp
            .path()
            .join(format!("script-{}.sql", self.scripts.get()));
        self.scripts.set(self.scripts.get() + 1);
        std::fs::write(&script, sql).expect("script");
        make_readable(&script);
        let data = self.data.display().to_string();
        let path = script.display().to_string();
        let mut args = vec![
            "-h",
            &data,
            "-p",
            "5499",
            "-d",
            "postgres",
            "-U",
            "postgres",
            "-X",
            "-q",
            "-t",
            "-A",
            "-v",
            "ON_ERROR_STOP=1",
        ];
        let vars: Vec<String> = vars.iter().map(|(k, v)| format!("{k}={v}")).collect();
        for v in &vars {
            args.extend(["-v", v.as_str()]);
        }
        args.extend(["-f", path.as_str()]);
        let out = pg(&self.bin, "psql", &args);
        assert!(
            out.status.success(),
            "psql failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// One write by the permit recipe; true when it was accepted.
    fn permit_write(&self, slot: u32, token: u64) -> bool {
        let vars = [
            ("resource", "pool".to_string()),
            ("slot", slot.to_string()),
            ("token", token.to_string()),
        ];
        self.script(PERMIT_WRITE, &vars) == "1"
    }

    /// One write by the read-write recipe; true when it was accepted.
    fn rw_write(&self, shared: bool, token: u64) -> bool {
        let vars = [
            ("resource", "doc".to_string()),
            ("token", token.to_string()),
        ];
        let sql = if shared {
            SHARED_WRITE
        } else {
            EXCLUSIVE_WRITE
        };
        self.script(sql, &vars) == "1"
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let data = self.data.display().to_string();
        let _ = pg(
            &self.bin,
            "pg_ctl",
            &["-D", &data, "-m", "immediate", "-w", "stop"],
        );
    }
}

fn make_readable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mode = if path.is_dir() { 0o777 } else { 0o644 };
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
}

fn start() -> Option<Server> {
    let Some(bin) = find_pg_bin() else {
        eprintln!("skipped: PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb); .ci/run installs it");
        return None;
    };
    if is_root()
        && Command::new("id")
            .arg("postgres")
            .output()
            .map(|o| !o.status.success())
            .unwrap_or(true)
    {
        eprintln!("skipped: running as root and there is no `postgres` user to run PostgreSQL as");
        return None;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    make_readable(tmp.path());
    let data = tmp.path().join("pgdata");
    std::fs::create_dir(&data).expect("pgdata");
    if is_root() {
        let ok = Command::new("chown")
            .args(["postgres:postgres"])
            .arg(&data)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(ok, "chown the data dir to postgres");
    }
    let d = data.display().to_string();
    let init = pg(
        &bin,
        "initdb",
        &["-D", &d, "-U", "postgres", "--auth=trust", "-E", "UTF8"],
    );
    assert!(
        init.status.success(),
        "initdb: {}",
        String::from_utf8_lossy(&init.stderr)
    );
    let opts = format!("-c listen_addresses='' -k {d} -p 5499 -c fsync=on");
    let log = format!("{d}/server.log");
    let run = pg(
        &bin,
        "pg_ctl",
        &["-D", &d, "-o", &opts, "-l", &log, "-w", "-t", "60", "start"],
    );
    assert!(
        run.status.success(),
        "pg_ctl start: {} {}",
        String::from_utf8_lossy(&run.stderr),
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    Some(Server {
        bin,
        data,
        tmp,
        scripts: std::cell::Cell::new(0),
    })
}

/// "The fencing story" on PostgreSQL: a write with token 7 is accepted, the
/// same holder (7) continues, a stale holder (5) is rejected and writes
/// nothing, a newer holder (9) is accepted; the fence ends at 9 and the value
/// is the last accepted writer's.
#[test]
fn sql_recipe_rejects_a_stale_token_on_postgres() {
    let Some(server) = start() else { return };
    server.psql(
        "CREATE TABLE fence (resource text PRIMARY KEY, token bigint NOT NULL);
         CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL, written_by bigint);
         INSERT INTO accounts VALUES (1, 0, NULL);",
        &[],
    );
    assert!(server.fenced_write(7, 100), "first holder, token 7");
    assert!(
        server.fenced_write(7, 110),
        "the same grant continues (equal token)"
    );
    assert!(
        !server.fenced_write(5, 999),
        "a stale holder (token 5) is rejected"
    );
    assert_eq!(
        server.psql(
            "SELECT balance || ',' || written_by FROM accounts WHERE id = 1",
            &[]
        ),
        "110,7"
    );
    assert!(server.fenced_write(9, 200), "a newer holder, token 9");
    assert!(
        !server.fenced_write(7, 300),
        "the old holder wakes up: rejected"
    );
    assert_eq!(
        server.psql("SELECT token FROM fence WHERE resource = 'ledger'", &[]),
        "9"
    );
    assert_eq!(
        server.psql(
            "SELECT balance || ',' || written_by FROM accounts WHERE id = 1",
            &[]
        ),
        "200,9"
    );
}

/// docs/fencing.md "Semaphore permits and read-write locks" on PostgreSQL.
/// Permits: ten holders in ten slots never fence each other, a stale slot-3
/// holder is refused after a newer slot-3 token. Read-write: readers never
/// fence each other, a stale writer is refused after a later reader, a
/// reader after a newer writer. A refused write writes nothing.
#[test]
fn sql_recipes_for_permits_and_read_write_on_postgres() {
    let Some(server) = start() else { return };
    server.psql(
        "CREATE TABLE fence_slot (resource text NOT NULL, slot bigint NOT NULL,
                                  token bigint NOT NULL, PRIMARY KEY (resource, slot));
         CREATE TABLE fence_rw (resource text PRIMARY KEY, highest bigint NOT NULL,
                                highest_exclusive bigint NOT NULL DEFAULT 0);
         CREATE TABLE writes (id serial PRIMARY KEY, token bigint NOT NULL);",
        &[],
    );
    for slot in (0..10u32).rev() {
        assert!(
            server.permit_write(slot, 11 + u64::from(slot)),
            "slot {slot}"
        );
    }
    for slot in 0..10u32 {
        assert!(
            server.permit_write(slot, 11 + u64::from(slot)),
            "slot {slot} again"
        );
    }
    assert!(server.permit_write(3, 30), "a newer holder of slot 3");
    assert!(!server.permit_write(3, 14), "the stale holder of slot 3");
    assert!(
        server.permit_write(4, 15),
        "slot 4's holder is not fenced by slot 3's"
    );
    assert_eq!(
        server.psql(
            "SELECT token FROM fence_slot WHERE resource = 'pool' AND slot = 3",
            &[]
        ),
        "30"
    );

    server.psql("TRUNCATE writes", &[]);
    assert!(server.rw_write(false, 40), "writer 40");
    for reader in [49, 46, 47, 49] {
        assert!(server.rw_write(true, reader), "reader {reader}");
    }
    assert!(
        !server.rw_write(false, 40),
        "the stale writer after a later reader"
    );
    assert!(server.rw_write(false, 50), "a newer writer");
    assert!(!server.rw_write(true, 49), "a reader after a newer writer");
    assert_eq!(
        server.psql(
            "SELECT highest || ',' || highest_exclusive FROM fence_rw WHERE resource = 'doc'",
            &[]
        ),
        "50,50"
    );
    assert_eq!(
        server.psql(
            "SELECT string_agg(token::text, ',' ORDER BY id) FROM writes",
            &[]
        ),
        "40,49,46,47,49,50"
    );
}
