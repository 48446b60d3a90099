//! `warden server`'s exit codes: why the node stopped, for a supervisor
//! (systemd's `RestartPreventExitStatus=`, docs/operations.md "Server exit codes").
//! A restart cures a general failure (1) but none of the four classes
//! after it: those need an operator. The numbers are the BSD `sysexits.h`
//! ones where one fits, so they stay clear of the client commands' 1, 2, 3.

use warden_server::ServerError;

/// A clean stop (SIGTERM, SIGINT, the parent exited with `--exit-with-parent`).
pub const EXIT_CLEAN: u8 = 0;
/// Any other failure: restarting may help (e.g. a runtime that could not start).
pub const EXIT_FAILURE: u8 = 1;
/// Refused start: bad flags or config file, certificates missing or
/// unusable, an address that cannot be bound, a data dir another process
/// has open. The node will never start as configured (`EX_CONFIG`).
pub const EXIT_REFUSED_START: u8 = 78;
/// Lost or foreign data: the data dir is empty but the peers formed the
/// cluster with this node in it, or it is another node's or another
/// cluster's, or it holds data this binary cannot read (a newer format,
/// damage). Replace the node or give it its own dir (`EX_DATAERR`).
pub const EXIT_DATA: u8 = 65;
/// Storage failure: a read, write or fsync of the data dir failed, at
/// start or while serving (`EX_IOERR`).
pub const EXIT_STORAGE: u8 = 74;
/// Clock failure: the node's monotonic clock could not be read, so it
/// cannot keep lease deadlines (docs/semantics.md "Time"; `EX_OSERR`).
pub const EXIT_CLOCK: u8 = 71;

/// The one place a node's error becomes its exit code.
pub fn code(e: &ServerError) -> u8 {
    match e {
        ServerError::Config(_) => EXIT_REFUSED_START,
        ServerError::LostData { .. } | ServerError::ForeignData(_) => EXIT_DATA,
        ServerError::Storage(_) => EXIT_STORAGE,
        ServerError::Clock(_) => EXIT_CLOCK,
        ServerError::Other(_) => EXIT_FAILURE,
    }
}

/// True when `args` (the process's arguments after the program name) run
/// `warden server`: its usage errors are refused starts too.
pub fn is_server_command<I, S>(args: I) -> bool
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    args.into_iter()
        .next()
        .is_some_and(|first| first.as_ref() == "server")
}

#[cfg(test)]
mod tests {
    use super::*;

    // docs/operations.md "Server exit codes": each class of stop has its own code,
    // distinct from the others and from the client commands' 1, 2 and 3,
    // and a restart-worthy failure stays 1.
    #[test]
    fn each_server_error_maps_to_its_class() {
        let clock = warden_server::clock::ClockError {
            clock: "CLOCK_BOOTTIME",
            errno: 22,
        };
        let cases = [
            (ServerError::Config("certs-dir: x".into()), 78),
            (
                ServerError::LostData {
                    node_id: 2,
                    cluster_id: "c".into(),
                },
                65,
            ),
            (ServerError::ForeignData("belongs to node 3".into()), 65),
            (ServerError::Storage("fsync: EIO".into()), 74),
            (ServerError::Clock(clock), 71),
            (ServerError::Other("raft stopped: panicked".into()), 1),
        ];
        for (e, expected) in cases {
            assert_eq!(code(&e), expected, "{e}");
        }
        let classes = [
            EXIT_CLEAN,
            EXIT_FAILURE,
            EXIT_REFUSED_START,
            EXIT_DATA,
            EXIT_STORAGE,
            EXIT_CLOCK,
            crate::output::EXIT_NOT_GRANTED,
            crate::output::EXIT_LEASE_LOST,
        ];
        let distinct: std::collections::BTreeSet<u8> = classes.into_iter().collect();
        assert_eq!(distinct.len(), classes.len());
    }

    // What bad input gets: a usage error of `warden server` is a refused
    // start; of another command it is not.
    #[test]
    fn only_the_server_command_is_recognised() {
        assert!(is_server_command(["server", "--bogus"]));
        assert!(!is_server_command(["status", "server"]));
        assert!(!is_server_command(Vec::<String>::new()));
    }
}
