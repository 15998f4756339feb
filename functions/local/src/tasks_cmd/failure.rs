//! Why a command did not do its work, for its exit code.

use boomerang_client::ClientError;

/// Why a command did not do its work.
#[derive(Debug)]
pub enum Failure {
    /// A flag's value cannot make a request (say, a header without a colon).
    Usage(String),
    /// A flag's value breaks the API's rule for its field: refused here, in the API's own
    /// words, as the server would refuse it.
    Refused(Box<boomerang_api::Problem>),
    Api(Box<ClientError>),
}

impl From<ClientError> for Failure {
    fn from(e: ClientError) -> Self {
        Self::Api(Box::new(e))
    }
}
