//! Runs of the `boomerang` binary as a command line.

use std::process::Command;

use crate::binaries::binary;

/// What a run of the `boomerang` binary printed, and its exit code.
#[derive(Debug)]
pub struct CliRun {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `boomerang ARGS` with `env` added to the test's environment (and none of the
/// `BOOMERANG_*` variables a developer's shell may have set).
pub fn run_cli(args: &[&str], env: &[(&str, &str)]) -> CliRun {
    let mut cmd = Command::new(binary());
    for (name, _) in std::env::vars() {
        if name.starts_with("BOOMERANG_") {
            cmd.env_remove(name);
        }
    }
    let out = cmd
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run boomerang");
    CliRun {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs the CLI to completion; returns its stdout.
pub(crate) fn cli(args: &[&str], env: &[(String, String)]) -> String {
    let out = Command::new(binary())
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("run boomerang");
    assert!(
        out.status.success(),
        "boomerang {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}
