//! Every edge of the table as a Rust value, generated from `transitions/loop.toml`
//! (see [`crate::engine::generated`]), with what it means to the front ends that show a run:
//! the table's `status` and `abandons_reply` columns ([`Edge::status`],
//! [`Edge::abandons_attempt`]), so an edge added to the table says what it shows where it is
//! declared.

pub use crate::engine::generated::Edge;

impl Edge {
    /// Whether a trace record names an edge that drops the reply attempt (see
    /// [`Edge::abandons_attempt`]); an id the engine does not know (an edited table's) does not.
    pub fn id_abandons_attempt(id: &str) -> bool {
        Edge::from_id(id).is_some_and(Edge::abandons_attempt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_retry_and_a_new_stream_drop_the_attempt() {
        let dropping: Vec<&str> = Edge::ALL.into_iter().filter(|e| e.abandons_attempt()).map(Edge::id).collect();
        assert_eq!(dropping, ["request.stream_opened", "consume.retry"]);
        assert!(Edge::id_abandons_attempt("consume.retry"));
        assert!(!Edge::id_abandons_attempt("consume.unknown"));
    }
}
