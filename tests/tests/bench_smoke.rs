//! The benchmark measures and asserts nothing, so this only keeps it working: each mode
//! runs to the end on a handful of tasks and prints its figures.

use std::process::Command;

fn bench(args: &[&str], expect: &[&str]) {
    bench_with(args, &[], expect)
}

/// [`bench`] with extra environment variables.
fn bench_with(args: &[&str], env: &[(&str, &str)], expect: &[&str]) {
    // The bench starts the `boomerang` binary beside its own.
    boomerang_e2e::binary();
    let out = Command::new(boomerang_e2e::bench_binary())
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bench {args:?} failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in expect {
        assert!(
            stdout.contains(line),
            "bench {args:?} printed no `{line}`: {stdout}"
        );
    }
}

#[test]
fn burst_runs_and_prints_its_figures() {
    bench(
        &["burst", "--tasks", "40", "--clients", "4"],
        &[
            "registration:",
            "deliveries:",
            "lateness (ms):",
            "(40 samples)",
            "server CPU:",
        ],
    );
}

#[test]
fn a_stored_burst_spread_over_a_second_runs_and_prints_its_figures() {
    // Due past the server's load-ahead (5 s): loaded back from the store before its time.
    bench(
        &[
            "burst",
            "--tasks",
            "40",
            "--clients",
            "4",
            "--ahead",
            "7s",
            "--spread",
            "1s",
        ],
        &[
            "due 7s ahead, spread over 1s",
            "(40 samples)",
            "40 succeeded, 0 failed",
        ],
    );
}

#[test]
fn backlog_runs_and_prints_its_figures() {
    bench(
        &[
            "backlog",
            "--tasks",
            "40",
            "--clients",
            "4",
            "--down",
            "2s",
            "--fresh-rate",
            "5",
        ],
        &[
            "restart ready in:",
            "drain:",
            "order:",
            "new callbacks:",
            " 0 failed",
        ],
    );
}

#[test]
fn slow_receiver_runs_and_prints_its_figures() {
    bench(
        &[
            "slow-receiver",
            "--tasks",
            "40",
            "--slots",
            "2",
            "--serve-ms",
            "20",
            "--clients",
            "4",
        ],
        &["drain:", "connections:", "40 succeeded, 0 failed"],
    );
}

#[test]
fn slow_receiver_with_a_small_backlog_runs_and_prints_its_figures() {
    bench(
        &[
            "slow-receiver",
            "--tasks",
            "40",
            "--slots",
            "2",
            "--serve-ms",
            "20",
            "--backlog",
            "1",
            "--clients",
            "4",
        ],
        &[
            "listen backlog 1",
            "SYN-SENT included",
            "40 succeeded, 0 failed",
        ],
    );
}

#[test]
fn hanging_runs_and_prints_its_figures() {
    bench(
        &[
            "hanging",
            "--hanging",
            "4",
            "--healthy",
            "10",
            "--clients",
            "2",
        ],
        &[
            "healthy lateness (ms):",
            "(10 samples)",
            "hanging receiver:",
        ],
    );
}

#[test]
fn flow_runs_and_prints_its_figures() {
    bench(
        &[
            "flow",
            "--tasks",
            "30",
            "--rate",
            "10",
            "--window-s",
            "1",
            "--clients",
            "2",
        ],
        &["rate:", "parallelism:", "30 succeeded, 0 failed"],
    );
}

#[test]
fn retry_runs_and_prints_its_figures() {
    bench(
        &["retry", "--tasks", "10", "--clients", "2"],
        &[
            "retry gap (ms):",
            "(20 samples)",
            "final success lateness (ms):",
        ],
    );
}

#[test]
fn pending_runs_and_prints_its_figures() {
    bench(
        &["pending", "--tasks", "200", "--clients", "4"],
        &["first 10 %", "data dir:", "restart ready in:"],
    );
}

#[test]
fn crash_runs_and_prints_its_figure() {
    bench(&["crash"], &["in-flight attempt re-run"]);
}

/// The cost meter on moto, with this build's function binaries under cargo-lambda's
/// runtime emulator: the API function registers through its function-URL emulation and
/// the delivery function delivers every callback, end to end on the AWS path.
#[test]
fn cost_runs_the_real_functions_and_prints_the_table() {
    let endpoint = boomerang_e2e::aws::moto_endpoint();
    let functions = boomerang_e2e::binary()
        .parent()
        .expect("target dir")
        .display()
        .to_string();
    bench_with(
        &["cost", "--tasks", "3", "--functions", &functions],
        &[("AWS_ENDPOINT_URL", &endpoint), ("RUST_LOG", "warn")],
        &[
            "under cargo-lambda's runtime emulator",
            "1 KiB body, first-attempt success",
            "due in 2 hours (a minute's bucket)",
            "due in 30 days (a minute's bucket)",
            "registered in batches of 100",
            "a bulk retry, $ per 100,000 tasks",
            "write units (table",
            "ms API +",
            "CloudWatch Logs",
        ],
    );
}

/// Work read back from storage on the AWS path, on moto: a small minute's bucket read and
/// queued by its fire, a few tasks without a timer re-armed by the sweeper, their timers
/// handed back from the system-failures queue, and everything armed again by `aws rearm`.
/// (Without `--lambda-mb`: a CPU quota needs root.)
#[test]
fn aws_drain_runs_and_prints_its_figures() {
    let endpoint = boomerang_e2e::aws::moto_endpoint();
    bench_with(
        &["aws-drain", "--entries", "150", "--call-ms", "10"],
        &[
            ("AWS_ENDPOINT_URL", &endpoint),
            ("RUST_LOG", "warn,boomerang_core::engine=off"),
        ],
        &[
            "150 registered into the minute",
            "bucket fire (BucketFire::run",
            "150 entries in 1 invocation,",
            "calls per 1,000:",
            "the minute's own fire:",
            "a minute of 1,000,000:",
            "150 registered without a timer",
            "sweeper repair (lambda::handle_sweep",
            "the largest run:",
            "1,000,000 unarmed:",
            "CPU (measured):",
            "150 timer messages put in the system-failures queue",
            "system-failures redrive (SystemFailures::redrive",
            "150 registered on the timer queue (no index entry)",
            "aws rearm (rearm::rearm",
            "450 armed in",
            "armed/s in one process",
        ],
    );
}
