//! Loading [`ClientOptions::tls`](crate::ClientOptions::tls): the user's
//! certificate, key and CA bundle, checked by warden-tls before anything is
//! sent, and the [`ClientError::Tls`] that names the file at fault.

use std::path::PathBuf;
use std::sync::Arc;

use warden_tls::{ClientTls, LoadError};

use crate::error::ClientError;
use crate::transport::Connector;
use crate::types::TlsOptions;

/// The connector for `options`: warden-tls' client config for the user's
/// certificate in the certs dir.
pub(crate) fn connector(options: &TlsOptions) -> Result<Arc<dyn Connector>, ClientError> {
    let tls = ClientTls::load_client(&options.certs_dir, &options.user).map_err(|e| {
        ClientError::Tls {
            file: file_at_fault(&e),
            message: e.to_string(),
        }
    })?;
    Ok(Arc::new(tls))
}

/// The file a load error is about: the certificate, or the key when the
/// key is what is wrong; `None` for a refused user name.
fn file_at_fault(e: &LoadError) -> Option<PathBuf> {
    let file = match e {
        LoadError::Missing { file }
        | LoadError::Unreadable { file, .. }
        | LoadError::NotPem { file, .. }
        | LoadError::NoCertificate { file }
        | LoadError::NoKey { file }
        | LoadError::BadCertificate { file, .. }
        | LoadError::BadKey { file, .. }
        | LoadError::NotSignedByCa { file, .. }
        | LoadError::Expired { file, .. }
        | LoadError::NotYetValid { file, .. }
        | LoadError::Rejected { file, .. }
        | LoadError::NoNodeId { file }
        | LoadError::ClientHasNodeUri { file }
        | LoadError::BadIdentity { file, .. }
        | LoadError::WrongNode { file, .. }
        | LoadError::DenyFile { file, .. } => file,
        LoadError::KeyMismatch { key, .. } => key,
        LoadError::Config { dir, .. } => dir,
        LoadError::BadUser(_) => return None,
    };
    Some(file.clone())
}
