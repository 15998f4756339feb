//! An error and its causes as one line, for logs and problem bodies: many libraries'
//! own message hides the interesting part in a source ("db error", "client error
//! (Connect)"), and a cause that only repeats what is already said is left out.

use std::error::Error;

/// "outer: cause: root cause", on one line: a message of several lines (PostgreSQL's
/// `DETAIL:` and `HINT:`) has its lines joined with "; ", so that a log entry stays one
/// line.
pub fn error_chain(e: &dyn Error) -> String {
    let mut text = one_line(&e.to_string());
    let mut source = e.source();
    while let Some(cause) = source {
        let said = one_line(&cause.to_string());
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}

fn one_line(message: &str) -> String {
    (message.lines())
        .map(str::trim_end)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::error_chain;

    #[derive(Debug, thiserror::Error)]
    #[error("{0}")]
    struct Layer(&'static str, #[source] Option<Box<Layer>>);

    fn layers(messages: &[&'static str]) -> Layer {
        let mut error: Option<Box<Layer>> = None;
        for message in messages.iter().rev() {
            error = Some(Box::new(Layer(message, error)));
        }
        *error.unwrap()
    }

    #[test]
    fn every_cause_follows_the_error_once() {
        let e = layers(&[
            "db error",
            "could not extend file",
            "No space left on device",
        ]);
        assert_eq!(
            error_chain(&e),
            "db error: could not extend file: No space left on device"
        );
        let repeated = layers(&["connect: refused", "refused"]);
        assert_eq!(error_chain(&repeated), "connect: refused");
    }

    #[test]
    fn a_message_of_several_lines_is_told_on_one() {
        let e = layers(&[
            "db error",
            "ERROR: could not extend file\nHINT: Check free disk space.\r\n",
        ]);
        assert_eq!(
            error_chain(&e),
            "db error: ERROR: could not extend file; HINT: Check free disk space."
        );
        // A wrapper that already tells its source on one line is not followed by it.
        let told = layers(&[
            "ERROR: full; HINT: free some",
            "ERROR: full\nHINT: free some",
        ]);
        assert_eq!(error_chain(&told), "ERROR: full; HINT: free some");
    }
}
