//! The loop machine and the table it is checked against.
//!
//! - [`table`]: the typed view of `transitions/loop.toml`, loaded through [`crate::table`].
//! - [`machine`]: the statig machine and the per-transition table check;
//!   [`sampling`], [`acting`] and [`decide`] hold the state handlers.
//! - [`state`]: the loop's data; [`trace`]: the transition records; [`run`]: the driver.

pub mod acting;
pub mod budget;
pub mod clock;
pub mod compact;
pub mod decide;
pub mod edge;
pub mod effects;
pub mod events;
pub mod generated;
pub mod machine;
pub mod options;
pub mod reason;
pub mod reply_steps;
pub mod run;
pub mod sampling;
pub mod select;
pub mod session;
pub mod state;
pub mod table;
pub mod trace;
