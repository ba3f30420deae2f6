//! Test support: the fixture server and the harness.

pub mod harness;
pub mod http;
pub mod load;
pub mod proxy;
pub mod server;
pub mod synthetic;
pub mod terminal;
