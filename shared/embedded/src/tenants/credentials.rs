//! The local server's API key and signing secret: given, or generated once and kept in the
//! data directory so that restarts (and `boomerang listen`) reuse them.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use boomerang_core::domain::tenant::InvalidSecret;
use boomerang_core::domain::{generate_api_key, SigningSecret};

const FILE: &str = "credentials.json";

#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    #[error("--signing-secret: {0}")]
    GivenSecret(#[source] InvalidSecret),
    #[error("signing_secret in {0}: {1}")]
    StoredSecret(PathBuf, #[source] InvalidSecret),
    #[error("reading {0}: {1}")]
    Read(PathBuf, #[source] std::io::Error),
    #[error("{0} is not a credentials file: {1}")]
    Parse(PathBuf, #[source] serde_json::Error),
    #[error("creating {0}: {1}")]
    Write(PathBuf, #[source] std::io::Error),
}

#[derive(Serialize, Deserialize)]
struct Stored {
    api_key: String,
    signing_secret: String,
}

pub struct Credentials {
    pub api_key: String,
    pub secret: SigningSecret,
    /// Where generated values were kept, if they were generated or read from disk.
    pub file: Option<PathBuf>,
}

/// Resolves the credentials: explicit values win; missing ones come from (or go to) the
/// data directory's credentials file.
pub fn load_or_create(
    data_dir: &Path,
    api_key: Option<String>,
    secret: Option<String>,
) -> Result<Credentials, CredentialsError> {
    let given_secret = secret
        .map(|s| SigningSecret::parse(&s).map_err(CredentialsError::GivenSecret))
        .transpose()?;
    if let (Some(api_key), Some(secret)) = (api_key.clone(), given_secret.clone()) {
        return Ok(Credentials {
            api_key,
            secret,
            file: None,
        });
    }
    let path = data_dir.join(FILE);
    let stored = match read(&path)? {
        Some(stored) => stored,
        None => {
            let stored = Stored {
                api_key: generate_api_key(),
                signing_secret: SigningSecret::generate().expose(),
            };
            let bytes = serde_json::to_vec_pretty(&stored)
                .map_err(|e| CredentialsError::Parse(path.clone(), e))?;
            write_private(&path, &bytes).map_err(|e| CredentialsError::Write(path.clone(), e))?;
            stored
        }
    };
    let secret = match given_secret {
        Some(s) => s,
        None => SigningSecret::parse(&stored.signing_secret)
            .map_err(|e| CredentialsError::StoredSecret(path.clone(), e))?,
    };
    Ok(Credentials {
        api_key: api_key.unwrap_or(stored.api_key),
        secret,
        file: Some(path),
    })
}

/// The signing secret kept in a data directory, if there is one.
pub fn stored_secret(data_dir: &Path) -> Result<Option<SigningSecret>, CredentialsError> {
    let path = data_dir.join(FILE);
    read(&path)?
        .map(|s| {
            SigningSecret::parse(&s.signing_secret)
                .map_err(|e| CredentialsError::StoredSecret(path.clone(), e))
        })
        .transpose()
}

/// The API key kept in a data directory, if there is one (what `serve` generated there).
pub fn stored_api_key(data_dir: &Path) -> Result<Option<String>, CredentialsError> {
    Ok(read(&data_dir.join(FILE))?.map(|s| s.api_key))
}

fn read(path: &Path) -> Result<Option<Stored>, CredentialsError> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| CredentialsError::Parse(path.to_path_buf(), e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(CredentialsError::Read(path.to_path_buf(), e)),
    }
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}
