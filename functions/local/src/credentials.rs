//! The local server's API key and signing secret: given, or generated once and kept in the
//! data directory so that restarts (and `boomerang listen`) reuse them.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use boomerang::domain::{generate_api_key, SigningSecret};
use serde::{Deserialize, Serialize};

const FILE: &str = "credentials.json";

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
) -> Result<Credentials> {
    let given_secret = secret
        .map(|s| SigningSecret::parse(&s).context("--signing-secret"))
        .transpose()?;
    if let (Some(api_key), Some(secret)) = (api_key.clone(), given_secret.clone()) {
        return Ok(Credentials {
            api_key,
            secret,
            file: None,
        });
    }
    let path = data_dir.join(FILE);
    let stored = match read(data_dir)? {
        Some(stored) => stored,
        None => {
            let stored = Stored {
                api_key: generate_api_key(),
                signing_secret: SigningSecret::generate().expose(),
            };
            write_private(&path, &serde_json::to_vec_pretty(&stored)?)?;
            stored
        }
    };
    Ok(Credentials {
        api_key: api_key.unwrap_or(stored.api_key),
        secret: match given_secret {
            Some(s) => s,
            None => SigningSecret::parse(&stored.signing_secret)
                .with_context(|| format!("signing_secret in {}", path.display()))?,
        },
        file: Some(path),
    })
}

/// The signing secret kept in a data directory, if there is one.
pub fn stored_secret(data_dir: &Path) -> Result<Option<SigningSecret>> {
    read(data_dir)?
        .map(|s| SigningSecret::parse(&s.signing_secret).context("stored signing secret"))
        .transpose()
}

fn read(data_dir: &Path) -> Result<Option<Stored>> {
    let path = data_dir.join(FILE);
    match std::fs::read(&path) {
        Ok(bytes) => Ok(Some(
            serde_json::from_slice(&bytes)
                .with_context(|| format!("reading {}", path.display()))?,
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    file.write_all(bytes)?;
    file.sync_all()?;
    Ok(())
}
