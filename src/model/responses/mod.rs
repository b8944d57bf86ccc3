//! The OpenAI Responses protocol (`--model responses:NAME`), spoken by
//! [`crate::model::chat::ChatModel`] with [`crate::model::chat::Wire::Responses`]:
//!
//! - `request`: a [`crate::model::ModelRequest`] as a Responses body;
//! - `stream`: the streamed events as Messages API events.

pub mod request;
pub mod stream;
