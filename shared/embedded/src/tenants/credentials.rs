//! The local server's API key and signing secrets: given, or generated once and kept in the
//! data directory so that restarts (and `boomerang listen`) reuse them. A rotation
//! (`POST /v1/signing-secrets`) writes the secrets in force back to the same file.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use boomerang_core::domain::tenant::InvalidSecret;
use boomerang_core::domain::{generate_api_key, SecretSet, SigningSecret};

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

/// The file's content. `signing_secret` is the newest secret (what a reader that knows
/// no rotation takes); `signing_secrets`, once a rotation wrote it, all those in force.
#[derive(Serialize, Deserialize)]
struct Stored {
    api_key: String,
    signing_secret: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    signing_secrets: Option<SecretSet>,
}

impl Stored {
    fn secrets(&self, path: &Path) -> Result<SecretSet, CredentialsError> {
        match &self.signing_secrets {
            Some(set) => Ok(set.clone()),
            None => SigningSecret::parse(&self.signing_secret)
                .map(|secret| SecretSet::single(secret, None))
                .map_err(|e| CredentialsError::StoredSecret(path.to_path_buf(), e)),
        }
    }
}

pub struct Credentials {
    pub api_key: String,
    pub secrets: SecretSet,
    /// Whether the secret was given (`--signing-secret`): then it is the only one, and
    /// cannot be rotated through the API.
    pub secret_given: bool,
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
            secrets: SecretSet::single(secret, None),
            secret_given: true,
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
                signing_secrets: None,
            };
            let bytes = serde_json::to_vec_pretty(&stored)
                .map_err(|e| CredentialsError::Parse(path.clone(), e))?;
            write_private(&path, &bytes).map_err(|e| CredentialsError::Write(path.clone(), e))?;
            stored
        }
    };
    let (secrets, secret_given) = match given_secret {
        Some(s) => (SecretSet::single(s, None), true),
        None => (stored.secrets(&path)?, false),
    };
    Ok(Credentials {
        api_key: api_key.unwrap_or(stored.api_key),
        secrets,
        secret_given,
        file: Some(path),
    })
}

/// The newest signing secret kept in a data directory, if there is one.
pub fn stored_secret(data_dir: &Path) -> Result<Option<SigningSecret>, CredentialsError> {
    Ok(stored_secrets(data_dir)?.map(|set| set.newest().clone()))
}

/// The signing secrets kept in a data directory, if there are any.
pub fn stored_secrets(data_dir: &Path) -> Result<Option<SecretSet>, CredentialsError> {
    let path = data_dir.join(FILE);
    read(&path)?.map(|s| s.secrets(&path)).transpose()
}

/// Writes `secrets` to the credentials file at `path` in one step (a new file renamed over
/// the old), so a reader sees the old secrets or the new, never half of either.
pub fn save_secrets(path: &Path, secrets: &SecretSet) -> Result<(), CredentialsError> {
    let mut stored = read(path)?.ok_or_else(|| {
        let gone = std::io::Error::new(std::io::ErrorKind::NotFound, "the file is gone");
        CredentialsError::Read(path.to_path_buf(), gone)
    })?;
    stored.signing_secret = secrets.newest().expose();
    stored.signing_secrets = Some(secrets.clone());
    let bytes = serde_json::to_vec_pretty(&stored)
        .map_err(|e| CredentialsError::Parse(path.to_path_buf(), e))?;
    let fresh = path.with_extension(format!("json.{}", std::process::id()));
    let _ = std::fs::remove_file(&fresh);
    let write = write_private(&fresh, &bytes).and_then(|()| std::fs::rename(&fresh, path));
    write.map_err(|e| CredentialsError::Write(path.to_path_buf(), e))?;
    if let Some(dir) = path.parent() {
        // The rename itself is durable once the directory is.
        let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
    }
    Ok(())
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
