//! The gRPC and HTTP edge: each public service turns requests into node
//! calls and the node's typed answers and errors into wire messages
//! ([`status`] is the one place an error becomes a gRPC status).

pub mod admin;
pub mod health;
pub mod lease;
pub mod lock;
pub mod status;
pub mod watch;
