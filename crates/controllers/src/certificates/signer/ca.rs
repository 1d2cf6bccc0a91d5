//! The signing CA, read from its files and read again when they change.
//!
//! Mirrors `caProvider` (`pkg/controller/certificates/signer/ca_provider.go`) over kube's
//! `dynamiccertificates.DynamicCertKeyPairContent`: kube watches the files; here they are read
//! on every signature, and parsed again only when their bytes changed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use super::authority::{CertificateAuthority, LoadError};

/// Why the CA files could not be used.
#[derive(Debug, thiserror::Error)]
pub enum CaError {
    /// A file could not be read.
    #[error("error reading {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The files do not hold a usable CA.
    #[error(transparent)]
    Load(#[from] LoadError),
}

struct Loaded {
    cert: Vec<u8>,
    key: Vec<u8>,
    ca: Arc<CertificateAuthority>,
}

/// The CA of a certificate file and a key file.
pub struct CaProvider {
    cert_file: PathBuf,
    key_file: PathBuf,
    loaded: Mutex<Option<Loaded>>,
}

fn read(path: &Path) -> Result<Vec<u8>, CaError> {
    std::fs::read(path).map_err(|source| CaError::Read {
        path: path.to_path_buf(),
        source,
    })
}

impl CaProvider {
    /// Loads the CA of `cert_file` and `key_file` (`newCAProvider`: an error when they are not
    /// usable now).
    pub fn new(cert_file: PathBuf, key_file: PathBuf) -> Result<Self, CaError> {
        let provider = Self {
            cert_file,
            key_file,
            loaded: Mutex::new(None),
        };
        provider.current_ca()?;
        Ok(provider)
    }

    /// The CA as the files hold it now (`currentCA`): parsed again when either file changed.
    pub fn current_ca(&self) -> Result<Arc<CertificateAuthority>, CaError> {
        let cert = read(&self.cert_file)?;
        let key = read(&self.key_file)?;
        if let Some(loaded) = self.loaded.lock().as_ref() {
            if loaded.cert == cert && loaded.key == key {
                return Ok(Arc::clone(&loaded.ca));
            }
        }
        let ca = Arc::new(CertificateAuthority::from_pem(
            &String::from_utf8_lossy(&cert),
            &String::from_utf8_lossy(&key),
        )?);
        let mut guard = self.loaded.lock();
        if guard.is_some() {
            tracing::info!(
                cert = %self.cert_file.display(),
                key = %self.key_file.display(),
                "Loaded a new CA Bundle and Verifier"
            );
        }
        *guard = Some(Loaded {
            cert,
            key,
            ca: Arc::clone(&ca),
        });
        Ok(ca)
    }
}

#[cfg(test)]
mod tests {
    use super::super::authority::testing::ca;
    use super::*;

    #[test]
    fn the_ca_is_read_again_when_its_files_change() {
        let dir = tempfile::tempdir().expect("dir");
        let (cert, key) = (dir.path().join("ca.crt"), dir.path().join("ca.key"));
        let first: jiff::Timestamp = "2030-01-01T00:00:00Z".parse().unwrap();
        let (c, k) = ca(first);
        std::fs::write(&cert, c).unwrap();
        std::fs::write(&key, k).unwrap();
        let provider = CaProvider::new(cert.clone(), key.clone()).expect("loaded");
        let a = provider.current_ca().expect("ca");
        assert!(Arc::ptr_eq(&a, &provider.current_ca().expect("ca")));
        let second: jiff::Timestamp = "2031-01-01T00:00:00Z".parse().unwrap();
        let (c, k) = ca(second);
        std::fs::write(&cert, c).unwrap();
        std::fs::write(&key, k).unwrap();
        assert_eq!(provider.current_ca().expect("ca").not_after(), second);
        std::fs::remove_file(&key).unwrap();
        assert!(matches!(provider.current_ca(), Err(CaError::Read { .. })));
        assert!(CaProvider::new(cert, dir.path().join("missing")).is_err());
    }
}
