//! The CLI's connection to the API: the typed client, with the key from a flag or from the
//! local server's data directory.

use std::path::Path;

use boomerang_client::Client;

/// The API at `url`, with `api_key`, or else the key the local server keeps in
/// `data_dir`. Refuses (with what to do about it) a bad URL or no key at all.
pub fn connect(url: &str, api_key: Option<String>, data_dir: &Path) -> Result<Client, String> {
    let key = match api_key {
        Some(key) => key,
        None => boomerang_embedded::tenants::credentials::stored_api_key(data_dir)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| {
                format!(
                    "no API key: pass --api-key (or BOOMERANG_API_KEY), or --data-dir of \
                     the local server ({} has none)",
                    data_dir.display()
                )
            })?,
    };
    Client::new(url, key).map_err(|e| format!("--url {e}"))
}
