//! Where the server's log goes: stderr, through a writer whose failed writes (a full disk
//! under a redirected log, a closed pipe) are dropped and counted
//! (`boomerang_log_writes_dropped_total`). Nothing reports them on the stderr that just
//! failed: a report there would fail the same way, and `eprintln!` panics when it does,
//! inside whatever request or delivery was logging.

use std::io::{self, Write};
use std::sync::LazyLock;

use prometheus_client::metrics::counter::Counter;
use tracing_subscriber::fmt::MakeWriter;

/// Log writes dropped since the process started (shared with the metrics registry).
pub static LOG_WRITES_DROPPED: LazyLock<Counter> = LazyLock::new(Counter::default);

/// Makes a [`DroppingStderr`] for each log line.
#[derive(Clone, Copy, Debug, Default)]
pub struct LogWriter;

impl<'a> MakeWriter<'a> for LogWriter {
    type Writer = DroppingStderr;

    fn make_writer(&'a self) -> Self::Writer {
        DroppingStderr
    }
}

/// stderr, counting each write that fails (and failing it, so the line goes no further).
pub struct DroppingStderr;

impl Write for DroppingStderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        io::stderr().write(buf).inspect_err(|_| {
            LOG_WRITES_DROPPED.inc();
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}
