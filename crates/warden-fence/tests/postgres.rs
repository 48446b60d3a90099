//! The SQL recipe of `docs/fencing.md` against a real PostgreSQL ("The
//! fencing story" in docs/semantics.md: the resource keeps the highest token it
//! accepted, in the same transaction as the write, and rejects a lower one).
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
        // psql -c runs one string as one multi-statement request; variables
        // need the script form, so feed it through -f on a temp file.
        let script = self.tmp.path().join(format!("write-{token}-{balance}.sql"));
        std::fs::write(&script, FENCED_WRITE).expect("script");
        make_readable(&script);
        let out = pg(
            &self.bin,
            "psql",
            &[
                "-h",
                &self.data.display().to_string(),
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
                "-v",
                "resource=ledger",
                "-v",
                &format!("token={token}"),
                "-v",
                &format!("balance={balance}"),
                "-f",
                &script.display().to_string(),
            ],
        );
        assert!(
            out.status.success(),
            "psql failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim() == "1"
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
    Some(Server { bin, data, tmp })
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
