//! The workspace's binaries under test, built on first use if missing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The `boomerang` binary of this workspace, built on first use if it is missing.
pub fn binary() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| built_binary("boomerang-local", "boomerang"))
        .clone()
}

/// The `boomerang-bench` binary of this workspace, built on first use if it is missing.
pub fn bench_binary() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| built_binary("boomerang-bench", "boomerang-bench"))
        .clone()
}

/// The binary `name` of `package` in this test's target dir, built if it is missing.
fn built_binary(package: &str, name: &str) -> PathBuf {
    // target/<profile>/deps/<test> → target/<profile>/<name>
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let bin = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    if !bin.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-p", package, "--bin", name])
            .status()
            .expect("cargo build");
        assert!(status.success(), "building the {name} binary failed");
    }
    bin
}
