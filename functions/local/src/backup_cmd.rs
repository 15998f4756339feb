//! `boomerang backup`: a copy of the embedded server's data directory, taken while `serve`
//! runs on it, that `serve --data-dir` starts from as it is.

use std::path::PathBuf;

use anyhow::Result;
use boomerang_embedded::backup::{self, BackupError, Copied, CREDENTIALS_FILE};
use boomerang_embedded::DB_FILE;

#[derive(clap::Args)]
pub struct BackupArgs {
    /// The data directory to copy; `serve` may be running on it (it is neither stopped
    /// nor locked out).
    #[arg(long, env = "BOOMERANG_DATA_DIR", default_value = "./.boomerang")]
    data_dir: PathBuf,
    /// Where the copy goes: a directory that does not exist yet (it is created) or is
    /// empty.
    #[arg(long)]
    to: PathBuf,
}

pub fn run(args: BackupArgs) -> Result<()> {
    let copied = backup::backup(&args.data_dir, &args.to).map_err(named_by_flag)?;
    print_copied(&args, &copied);
    Ok(())
}

/// The error, under the flag whose value it is about.
fn named_by_flag(error: BackupError) -> anyhow::Error {
    let flag = if error.is_destination() {
        "--to"
    } else {
        "--data-dir"
    };
    anyhow::Error::new(error).context(flag)
}

fn print_copied(args: &BackupArgs, copied: &Copied) {
    let (from, to) = (args.data_dir.display(), args.to.display());
    say!("Copied {from} to {to}");
    let unfinished = match copied.unfinished {
        Some(n) => format!(", {n} unfinished"),
        None => String::new(),
    };
    say!(
        "  {DB_FILE}:     {} tasks{unfinished} ({})",
        copied.tasks,
        size(copied.store_bytes)
    );
    if copied.credentials {
        say!("  {CREDENTIALS_FILE}: the API key and signing secrets");
    } else {
        say!(
            "  {CREDENTIALS_FILE}: none in {from} (serve was given --api-key and --signing-secret)"
        );
    }
    // The backup itself stays as taken: a server started on it would write to it.
    say!("To restore: stop serve, copy {to} in place of {from}, start serve again");
}

/// A byte count as people read it.
fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_read_as_people_say_them() {
        assert_eq!(super::size(512), "512 bytes");
        assert_eq!(super::size(4096), "4.0 KiB");
        assert_eq!(super::size(3 * 1024 * 1024 / 2), "1.5 MiB");
    }
}
