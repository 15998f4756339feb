//! Printing a command's answer to standard output. A reader that goes away before the end
//! (`boomerang tasks list --json | head`) ends the command quietly, as it ends any Unix
//! tool, where `println!` would panic on the closed pipe.

use std::io::{ErrorKind, Write};

/// `println!` for answers: see the module's docs.
macro_rules! say {
    () => {
        $crate::say::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::say::line(format_args!($($arg)*))
    };
}

/// Writes one line; a closed pipe ends the process with success (the reader had what it
/// wanted), any other failure with exit code 1.
pub fn line(args: std::fmt::Arguments) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.write_all(b"\n")) {
        if e.kind() == ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write the answer: {e}");
        std::process::exit(1);
    }
}
