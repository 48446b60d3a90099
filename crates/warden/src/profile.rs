//! The client profile: where a client command finds its cluster when
//! neither a flag nor an environment variable says. `warden dev` writes it,
//! so a second shell needs nothing pasted (as `kind` writes a kubeconfig
//! entry, or `consul agent -dev` answers on the address the CLI defaults to).
//!
//! - **Where:** `--profile FILE` or `WARDEN_PROFILE`; else
//!   `$XDG_CONFIG_HOME/warden/profile.toml`; else
//!   `$HOME/.config/warden/profile.toml`.
//! - **What** (TOML, every key optional): `endpoints = ["HOST:PORT", ...]`,
//!   `certs_dir = "DIR"` (a relative path is taken from the profile's own
//!   directory) or `insecure = true`, and `written_by`.
//! - **Precedence, per setting:** a flag or its variable wins; the profile
//!   gives only what neither did: the endpoints, and the certs dir or
//!   `insecure` (as one setting: either flag means the profile's TLS is not
//!   read). `--user` is never read from it.
//! - **Writing:** `warden dev` writes `written_by = "warden dev"` and
//!   replaces only a profile that says so: a profile a user wrote by hand
//!   is left alone (and `warden dev` says so).
//!
//! A profile holds paths and addresses, never a key.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cli::ClientArgs;
use crate::server_config::{one_line, read_at_most};

/// Largest profile read: 64 KiB (a real one is a few hundred bytes).
pub const MAX_PROFILE_BYTES: u64 = 64 * 1024;

/// What `warden dev` writes in `written_by`.
pub const WRITTEN_BY_DEV: &str = "warden dev";

/// A client profile's settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Who wrote it (`warden dev` replaces only its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written_by: Option<String>,
    /// Cluster members to contact.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<String>,
    /// Certs dir with ca.crt and the client certificates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certs_dir: Option<PathBuf>,
    /// A cluster started with --insecure.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure: bool,
}

/// The profile's path: `given` (`--profile` / `WARDEN_PROFILE`), else the
/// default under `$XDG_CONFIG_HOME` or `$HOME/.config` (None: neither set).
pub fn path(given: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = given.filter(|p| !p.as_os_str().is_empty()) {
        return Some(p.to_path_buf());
    }
    let dir = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let config = dir("XDG_CONFIG_HOME").or_else(|| dir("HOME").map(|h| h.join(".config")))?;
    Some(config.join("warden").join("profile.toml"))
}

/// Reads the profile at `path`: None when there is no such file.
pub fn read(path: &Path) -> Result<Option<Profile>, String> {
    let name = || format!("client profile {}", path.display());
    let text = match read_at_most(path, MAX_PROFILE_BYTES) {
        Ok(Some(text)) => text,
        Ok(None) => {
            return Err(format!(
            "{}: larger than the limit of {MAX_PROFILE_BYTES} bytes (64 KiB); is it the profile?",
            name()
        ))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: cannot read: {e}", name())),
    };
    let mut profile: Profile =
        toml::from_str(&text).map_err(|e| format!("{}: {}", name(), one_line(&e.to_string())))?;
    if let (Some(dir), Some(base)) = (&profile.certs_dir, path.parent()) {
        if dir.is_relative() {
            profile.certs_dir = Some(base.join(dir));
        }
    }
    Ok(Some(profile))
}

/// `args` with what neither a flag nor a variable gave taken from the
/// profile (see the module docs). The profile is read only when something
/// is missing; a profile named by `--profile` / `WARDEN_PROFILE` must exist.
pub fn fill(args: &ClientArgs) -> Result<ClientArgs, String> {
    let has_endpoints = args.endpoints.iter().any(|e| !e.trim().is_empty());
    let has_tls = args
        .tls
        .certs_dir
        .as_ref()
        .is_some_and(|d| !d.as_os_str().is_empty())
        || args.tls.insecure;
    if has_endpoints && has_tls {
        return Ok(args.clone());
    }
    let given = args.tls.profile.as_deref();
    let Some(path) = path(given) else {
        return Ok(args.clone());
    };
    let profile = match read(&path)? {
        Some(p) => p,
        None if given.is_some_and(|p| !p.as_os_str().is_empty()) => {
            return Err(format!(
                "--profile {}: no such file (`warden dev` writes one; WARDEN_PROFILE counts too)",
                path.display()
            ))
        }
        None => return Ok(args.clone()),
    };
    let mut filled = args.clone();
    if !has_endpoints {
        filled.endpoints = profile.endpoints;
    }
    if !has_tls {
        filled.tls.certs_dir = profile.certs_dir;
        filled.tls.insecure = profile.insecure;
    }
    Ok(filled)
}

/// What [`write_dev`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Written {
    /// The profile at this path now names the dev cluster.
    Wrote(PathBuf),
    /// A profile not written by `warden dev` is there; it was left alone.
    KeptOther(PathBuf),
    /// No path: neither `WARDEN_PROFILE`, `XDG_CONFIG_HOME` nor `HOME` is set.
    NoPath,
}

/// Writes the dev cluster's profile at [`path`]`(given)`: its endpoints and
/// its certs dir (made absolute), or `insecure`. Replaces only a profile
/// `warden dev` wrote (an unreadable or hand-written one is kept); the
/// file is written whole, then renamed into place.
pub fn write_dev(
    given: Option<&Path>,
    endpoints: Vec<String>,
    certs_dir: Option<&Path>,
) -> Result<Written, String> {
    let Some(path) = path(given) else {
        return Ok(Written::NoPath);
    };
    let ours = |p: &Profile| p.written_by.as_deref() == Some(WRITTEN_BY_DEV);
    match read(&path) {
        Ok(None) => {}
        Ok(Some(p)) if ours(&p) => {}
        Ok(Some(_)) | Err(_) => return Ok(Written::KeptOther(path)),
    }
    let certs_dir = match certs_dir {
        Some(d) => {
            Some(std::path::absolute(d).map_err(|e| format!("certs dir {}: {e}", d.display()))?)
        }
        None => None,
    };
    let profile = Profile {
        written_by: Some(WRITTEN_BY_DEV.to_string()),
        endpoints,
        insecure: certs_dir.is_none(),
        certs_dir,
    };
    let text = format!(
        "# The client profile: client commands read it when no flag or variable names\n\
         # the cluster (docs/operations.md, \"Client profile\"). Written by `warden dev`,\n\
         # which replaces it on each start; remove `written_by` to keep it as it is.\n{}",
        toml::to_string(&profile).map_err(|e| format!("client profile: {e}"))?
    );
    let cannot =
        |e: std::io::Error| format!("client profile {}: cannot write: {e}", path.display());
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(cannot)?;
    }
    let tmp = path.with_extension("toml.tmp");
    std::fs::write(&tmp, text).map_err(cannot)?;
    std::fs::rename(&tmp, &path).map_err(cannot)?;
    Ok(Written::Wrote(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{OutputFormat, TlsArgs};

    fn args(
        endpoints: &[&str],
        certs_dir: Option<&str>,
        insecure: bool,
        profile: &Path,
    ) -> ClientArgs {
        ClientArgs {
            endpoints: endpoints.iter().map(|e| e.to_string()).collect(),
            tls: TlsArgs {
                certs_dir: certs_dir.map(Into::into),
                insecure,
                profile: Some(profile.to_path_buf()),
                ..TlsArgs::default()
            },
            output: OutputFormat::Text,
        }
    }

    // A second shell needs nothing pasted: what `warden dev` writes is what
    // a client command without flags or variables uses; a flag or variable
    // still wins, setting by setting.
    #[test]
    fn the_dev_profile_fills_only_what_flags_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("warden/profile.toml");
        let certs = dir.path().join("certs");
        let endpoints = vec!["127.0.0.1:7001".to_string(), "127.0.0.1:7002".to_string()];
        assert_eq!(
            write_dev(Some(file.as_path()), endpoints.clone(), Some(&certs)).unwrap(),
            Written::Wrote(file.clone())
        );
        let filled = fill(&args(&[], None, false, &file)).unwrap();
        assert_eq!(filled.endpoints, endpoints);
        assert_eq!(filled.tls.certs_dir.as_deref(), Some(certs.as_path()));
        assert!(!filled.tls.insecure);

        let flags = fill(&args(&["10.0.0.1:1"], None, true, &file)).unwrap();
        assert_eq!(flags.endpoints, vec!["10.0.0.1:1"]);
        assert_eq!(
            flags.tls.certs_dir, None,
            "--insecure keeps the profile's certs out"
        );
        let tls_only = fill(&args(&[], Some("/elsewhere"), false, &file)).unwrap();
        assert_eq!(tls_only.endpoints, endpoints);
        assert_eq!(
            tls_only.tls.certs_dir.as_deref(),
            Some(Path::new("/elsewhere"))
        );

        // An insecure dev cluster's profile says so.
        write_dev(Some(file.as_path()), endpoints.clone(), None).unwrap();
        let insecure = fill(&args(&[], None, false, &file)).unwrap();
        assert!(insecure.tls.insecure && insecure.tls.certs_dir.is_none());
    }

    // `warden dev` never replaces a profile a user wrote; a named profile
    // must exist; a bad one is refused with its path and the problem.
    #[test]
    fn hand_written_missing_and_bad_profiles() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("profile.toml");
        std::fs::write(
            &file,
            "endpoints = [\"prod:7001\"]\ncerts_dir = \"certs\"\n",
        )
        .unwrap();
        assert_eq!(
            write_dev(Some(file.as_path()), vec!["127.0.0.1:1".into()], None).unwrap(),
            Written::KeptOther(file.clone())
        );
        let filled = fill(&args(&[], None, false, &file)).unwrap();
        assert_eq!(filled.endpoints, vec!["prod:7001"]);
        assert_eq!(
            filled.tls.certs_dir,
            Some(dir.path().join("certs")),
            "relative to the profile's directory"
        );

        let missing = dir.path().join("none.toml");
        let err = fill(&args(&[], None, false, &missing)).unwrap_err();
        assert!(
            err.starts_with("--profile ") && err.contains("no such file"),
            "{err}"
        );

        std::fs::write(&file, "endpoint = [\"x:1\"]\n").unwrap();
        let err = fill(&args(&[], None, false, &file)).unwrap_err();
        assert!(
            err.contains(&file.display().to_string()) && err.contains("endpoint"),
            "{err}"
        );
        std::fs::write(&file, vec![b'#'; MAX_PROFILE_BYTES as usize + 1]).unwrap();
        let err = fill(&args(&[], None, false, &file)).unwrap_err();
        assert!(err.contains("65536 bytes"), "{err}");
        // With every setting given, the profile is not even read.
        assert!(fill(&args(&["a:1"], None, true, &file)).is_ok());
    }
}
