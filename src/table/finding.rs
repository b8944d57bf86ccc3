//! What the auditor reports: findings with a stable code, a severity, a message and a location.
//!
//! Codes are stable strings (`E_DEAD_END`, `E_TRACE_HASH`, ...) so scripts can rely on them;
//! messages are for people and may change.

use serde::Serialize;

/// How bad a finding is. Any `Error` makes `audit` exit with status 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The table or trace is wrong.
    Error,
    /// Worth a look, but the proof still holds.
    Warning,
}

/// Every finding the auditor can report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Code {
    /// A state, event, fact or counter name is declared twice.
    DuplicateName,
    /// A state names a parent that is not declared.
    UnknownParent,
    /// A state's parent is not a superstate.
    ParentNotSuperstate,
    /// The parent chain of a state loops.
    ParentCycle,
    /// `initial` names an undeclared state.
    UnknownInitial,
    /// `initial` names a superstate or the terminal state.
    InitialNotLeaf,
    /// Two edges share an id.
    DuplicateEdgeId,
    /// An edge's `from` or `to` is not a declared state.
    UnknownState,
    /// An edge's `on` is not a declared event.
    UnknownEvent,
    /// A counter name in `consumes`, `resets` or the ranking is not declared.
    UnknownCounter,
    /// A `continue` or `terminal` value is not one of the named reasons.
    UnknownReason,
    /// An edge is both a continue and a terminal edge.
    ContinueAndTerminal,
    /// The table declares something this engine cannot run: an edge id it has no effect for,
    /// an edge moved to another state or event, a state, event, fact or counter it does not
    /// know or lacks (checked for `run --table` and `audit --engine`).
    EngineMismatch,
    /// A `[[reason]]` lacks its exit code, has one it cannot have, or one the engine does not use.
    BadReason,
    /// A guard does not parse or reads something undeclared.
    BadGuard,
    /// An edge's `sets` names an undeclared fact or gives one a value it cannot have.
    BadSets,
    /// The engine's loader rejected the table for a reason the auditor has no code for.
    TableRejected,
    /// One of the engine's continue reasons has no edge.
    MissingContinueReason,
    /// One of the engine's terminal reasons has no edge.
    MissingTerminalReason,
    /// An edge targets a superstate.
    TargetNotLeaf,
    /// A terminal edge does not end in a terminal state, or another edge does.
    TerminalMismatch,
    /// An edge leaves a terminal state.
    EdgeFromTerminal,
    /// A non-terminal state has no outgoing edge.
    DeadEnd,
    /// Two edges out of one state on one event can be enabled together.
    GuardOverlap,
    /// Some facts leave no edge enabled out of a state on an event it handles.
    GuardGap,
    /// An edge is never the only enabled edge: its guard is unsatisfiable or always overlapped.
    ShadowedEdge,
    /// An edge consumes a counter its guard does not require to be left.
    ConsumeUnguarded,
    /// A state's guards read a fact that some edges into the state set and others (or the
    /// start) leave free.
    FactPartlySet,
    /// A state cannot be reached from the initial state.
    UnreachableState,
    /// An edge is never taken from the initial state.
    UnreachableEdge,
    /// A reachable state cannot reach a terminal state.
    NoPathToTerminal,
    /// A cycle of the table passes through no edge that consumes a counter.
    UnboundedCycle,
    /// An edge does not strictly decrease the termination ranking where it must.
    RankingNotDecreasing,
    /// A consumed counter is missing from the ranking, or ranked twice.
    CounterNotRanked,
    /// The exploration found a cycle in (state x counters).
    ProductCycle,
    /// The exploration found a non-terminal node with no successor.
    ProductDeadEnd,
    /// The exploration would exceed its node limit, so it was not run.
    ExplorationLimit,
    /// A trace line is not a JSON object.
    TraceJson,
    /// The trace header is missing or malformed.
    TraceHeader,
    /// The trace header's table hash is not the table's.
    TraceHash,
    /// A record's `seq` does not follow the previous one.
    TraceSeq,
    /// A record names an edge the table does not declare.
    TraceUndeclaredEdge,
    /// A record's edge does not leave the state the run was in.
    TraceWrongState,
    /// A record's `to`, `event`, `kind` or `reason` differs from the table.
    TraceEdgeMismatch,
    /// A record's guard does not hold under its recorded facts.
    TraceGuard,
    /// A record's counters are not what the edge makes of the previous ones.
    TraceCounters,
    /// A record follows the terminal record.
    TraceAfterTerminal,
    /// The trace has no terminal record.
    TraceNoTerminal,
    /// A record lacks a field or has one of the wrong type.
    TraceRecord,
}

impl Code {
    /// The stable code string.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::DuplicateName => "E_DUPLICATE_NAME",
            Code::UnknownParent => "E_UNKNOWN_PARENT",
            Code::ParentNotSuperstate => "E_PARENT_NOT_SUPERSTATE",
            Code::ParentCycle => "E_PARENT_CYCLE",
            Code::UnknownInitial => "E_UNKNOWN_INITIAL",
            Code::InitialNotLeaf => "E_INITIAL_NOT_LEAF",
            Code::DuplicateEdgeId => "E_DUPLICATE_EDGE_ID",
            Code::UnknownState => "E_UNKNOWN_STATE",
            Code::UnknownEvent => "E_UNKNOWN_EVENT",
            Code::UnknownCounter => "E_UNKNOWN_COUNTER",
            Code::UnknownReason => "E_UNKNOWN_REASON",
            Code::ContinueAndTerminal => "E_CONTINUE_AND_TERMINAL",
            Code::BadGuard => "E_BAD_GUARD",
            Code::BadSets => "E_BAD_SETS",
            Code::TableRejected => "E_TABLE_REJECTED",
            Code::BadReason => "E_BAD_REASON",
            Code::EngineMismatch => "E_ENGINE_MISMATCH",
            Code::MissingContinueReason => "E_MISSING_CONTINUE_REASON",
            Code::MissingTerminalReason => "E_MISSING_TERMINAL_REASON",
            Code::TargetNotLeaf => "E_TARGET_NOT_LEAF",
            Code::TerminalMismatch => "E_TERMINAL_MISMATCH",
            Code::EdgeFromTerminal => "E_EDGE_FROM_TERMINAL",
            Code::DeadEnd => "E_DEAD_END",
            Code::GuardOverlap => "E_GUARD_OVERLAP",
            Code::GuardGap => "E_GUARD_GAP",
            Code::ShadowedEdge => "E_SHADOWED_EDGE",
            Code::ConsumeUnguarded => "E_CONSUME_UNGUARDED",
            Code::FactPartlySet => "W_FACT_PARTLY_SET",
            Code::UnreachableState => "E_UNREACHABLE_STATE",
            Code::UnreachableEdge => "E_UNREACHABLE_EDGE",
            Code::NoPathToTerminal => "E_NO_PATH_TO_TERMINAL",
            Code::UnboundedCycle => "E_UNBOUNDED_CYCLE",
            Code::RankingNotDecreasing => "E_RANKING_NOT_DECREASING",
            Code::CounterNotRanked => "E_COUNTER_NOT_RANKED",
            Code::ProductCycle => "E_PRODUCT_CYCLE",
            Code::ProductDeadEnd => "E_PRODUCT_DEAD_END",
            Code::ExplorationLimit => "W_EXPLORATION_LIMIT",
            Code::TraceJson => "E_TRACE_JSON",
            Code::TraceHeader => "E_TRACE_HEADER",
            Code::TraceHash => "E_TRACE_HASH",
            Code::TraceSeq => "E_TRACE_SEQ",
            Code::TraceUndeclaredEdge => "E_TRACE_UNDECLARED_EDGE",
            Code::TraceWrongState => "E_TRACE_WRONG_STATE",
            Code::TraceEdgeMismatch => "E_TRACE_EDGE_MISMATCH",
            Code::TraceGuard => "E_TRACE_GUARD",
            Code::TraceCounters => "E_TRACE_COUNTERS",
            Code::TraceAfterTerminal => "E_TRACE_AFTER_TERMINAL",
            Code::TraceNoTerminal => "E_TRACE_NO_TERMINAL",
            Code::TraceRecord => "E_TRACE_RECORD",
        }
    }

    /// How bad a finding with this code is.
    pub fn severity(self) -> Severity {
        match self {
            Code::ExplorationLimit | Code::FactPartlySet => Severity::Warning,
            _ => Severity::Error,
        }
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Where a finding points: a file and line, and whichever of state, edge, event and record apply.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Location {
    /// The table or trace file.
    pub file: String,
    /// 1-based line in `file`, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// The state concerned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// The edge concerned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edge: Option<String>,
    /// The event concerned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// The trace record's `seq`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
}

impl Location {
    /// A location in `file` at `line`.
    pub fn at(file: &str, line: Option<usize>) -> Location {
        Location { file: file.to_owned(), line, ..Location::default() }
    }

    /// The same location, naming `state`.
    pub fn state(mut self, state: &str) -> Location {
        self.state = Some(state.to_owned());
        self
    }

    /// The same location, naming `edge`.
    pub fn edge(mut self, edge: &str) -> Location {
        self.edge = Some(edge.to_owned());
        self
    }

    /// The same location, naming `event`.
    pub fn event(mut self, event: &str) -> Location {
        self.event = Some(event.to_owned());
        self
    }

    /// The same location, naming the trace record `seq`.
    pub fn seq(mut self, seq: Option<u64>) -> Location {
        self.seq = seq;
        self
    }
}

/// One problem the auditor found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Error or warning.
    pub severity: Severity,
    /// Stable code.
    pub code: Code,
    /// What is wrong, for people.
    pub message: String,
    /// Where.
    pub location: Location,
    /// Edge ids from the initial state that show the problem (empty when no path applies).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub path: Vec<String>,
}

impl Finding {
    /// A finding with the code's severity and no path.
    pub fn new(code: Code, message: impl Into<String>, location: Location) -> Finding {
        Finding { severity: code.severity(), code, message: message.into(), location, path: Vec::new() }
    }

    /// The same finding, with the path that shows it.
    pub fn with_path(mut self, path: Vec<String>) -> Finding {
        self.path = path;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_serialize_as_their_stable_strings() {
        let f = Finding::new(Code::DeadEnd, "stuck", Location::at("t.toml", Some(3)).state("A"));
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(
            json,
            r#"{"severity":"error","code":"E_DEAD_END","message":"stuck","location":{"file":"t.toml","line":3,"state":"A"}}"#
        );
        assert_eq!(Code::ExplorationLimit.severity(), Severity::Warning);
    }
}
