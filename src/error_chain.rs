//! An error with its causes in one line, for messages a person reads: an HTTP client's own
//! message is often just "error sending request"; the cause is further down the chain.

use std::error::Error;

/// `error` and its sources, each once (a source whose text is already in the line is
/// skipped), joined by `: `.
pub(crate) fn error_chain(error: &dyn Error) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("{message}")]
    struct Layer {
        message: &'static str,
        #[source]
        source: Option<Box<Layer>>,
    }

    #[test]
    fn causes_are_joined_once_each() {
        let root = Layer { message: "connection refused", source: None };
        let middle = Layer { message: "tcp connect error: connection refused", source: Some(Box::new(root)) };
        let top = Layer { message: "error sending request", source: Some(Box::new(middle)) };
        assert_eq!(error_chain(&top), "error sending request: tcp connect error: connection refused");
    }
}
