//! The loop machine and the table it is checked against.

pub mod edge;
pub mod guard;
pub mod reason;
pub mod table;
