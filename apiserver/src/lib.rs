//! windlass-apiserver: an embedded, SQLite-backed, Kubernetes-compatible API server.
//!
//! ```no_run
//! # async fn run() -> Result<(), windlass_apiserver::Error> {
//! let server = windlass_apiserver::start(windlass_apiserver::Config::new().in_memory()).await?;
//! println!("kubectl --server {}", server.url());
//! server.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! See `docs/apiserver.md` for what is supported and how it is built.

mod access;
mod admission;
mod api;
mod attrs;
mod causes;
mod certificates;
mod context;
mod convert;
mod custom_lists;
mod defaults;
mod discovery;
mod durability;
mod event_ttl;
mod eviction;
mod fields;
mod files;
mod filter;
mod gc;
mod handlers;
mod health;
mod intake;
mod limits;
mod list;
mod managed;
mod nesting;
mod object;
mod openapi;
mod patch;
mod printers;
#[cfg(test)]
mod properties;
mod proto;
mod represent;
mod request;
mod resources;
mod reviews;
mod route;
mod satoken;
mod schema;
mod scope;
mod server;
mod service_alloc;
mod shared;
mod ssa;
mod state;
mod status;
mod storage;
mod subresource;
mod system;
mod table;
mod time;
mod tls;
mod token;
mod update;
mod user;
mod validate;
mod watch;
mod write;
mod yaml;

pub use durability::{Durability, ParseDurabilityError};
pub use satoken::KeyError;
pub use server::{Config, Error, RunningServer, start};
pub use storage::StorageError;
pub use tls::TlsError;
pub use token::TokenError;
