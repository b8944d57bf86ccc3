//! The Anthropic Messages API provider.
//!
//! - `sse`: a strict, incremental WHATWG event-stream framer;
//! - `decode`: event payloads into the assembler (or to owned events);
//! - `stream`: response bytes to a [`crate::model::Reply`], with the idle timeout;
//! - `request`: the request body, with prompt-cache breakpoints, assembled from each message's
//!   kept JSON ([`crate::model::encoded`]);
//! - `client`: [`AnthropicModel`], the [`crate::model::Model`] over reqwest + rustls;
//! - `redirect`: redirects followed within the server's origin only, so the credentials
//!   stay with it;
//! - `pricing`: what the reported usage costs.
//!
//! Everything after the event stream (assembly, retries, fallback) is shared with the scripted
//! model and lives outside this module.

mod client;
pub(crate) mod decode;
pub(crate) mod errors;
#[cfg(test)]
mod fixture_tests;
pub(crate) mod pricing;
pub(crate) mod redirect;
pub(crate) mod request;
pub(crate) mod sse;
pub(crate) mod stream;

pub use client::{AnthropicConfig, AnthropicModel, Auth, Secret};
pub(crate) use pricing::cost_usd;
pub use redirect::RedirectRefused;
