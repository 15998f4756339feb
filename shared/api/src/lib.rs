//! Boomerang's API as types, apart from any server: the request bodies clients send (read
//! into the domain's registrations in one step), the views the API answers with, the
//! problems it refuses with, and their OpenAPI schemas. The HTTP crate serves them; the
//! client, the command line and the end-to-end tests send and read them.

pub mod problem;
pub mod request;
pub mod schema;
pub mod view;

pub use problem::Problem;
