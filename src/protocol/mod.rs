//! The wire vocabulary: receipts, error codes and the params reader.
//!
//! This is the only module that knows the JSON field names of requests and receipts. Handlers
//! return plain `serde_json::Value` data and typed errors; the executor turns them into a
//! [`Receipt`] here.

pub mod envelope;
pub mod error_code;
pub mod params;
pub mod receipt;

pub use error_code::ErrorCode;
pub use params::Params;
pub use receipt::Receipt;
