//! `StructuredOutput`: the tool a run with `--json-schema` offers the model for its final
//! answer. Its input schema is the user's schema; a call is checked against it
//! ([`crate::json_schema`]). A match is the run's answer: the call's output carries it as
//! [`Answer::Valid`] and the table ends the run (`checkpoint.structured_output`). A mismatch is
//! an `is_error` result naming every violation, which goes back to the model, and
//! [`Answer::Invalid`]: the table counts those attempts (`structured_output_retries`).

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use super::{Tool, ToolContext, ToolOutput};
use crate::json_schema::Schema;

/// The tool's name, as Claude Code offers it.
pub const NAME: &str = "StructuredOutput";

/// What the model reads after a call that matched the schema.
pub const ACCEPTED: &str = "Structured output accepted: it is the final result of this request.";

/// Violations named in one error result; more are counted, not listed.
const SHOWN_VIOLATIONS: usize = 10;

/// What a `StructuredOutput` call came to.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Answer {
    /// The input matched the schema: the run's structured result.
    Valid(Value),
    /// It did not; the message says how (the text of the error result).
    Invalid(String),
}

/// The `StructuredOutput` tool for one schema.
#[derive(Debug, Clone)]
pub struct StructuredOutput {
    schema: Arc<Schema>,
}

impl StructuredOutput {
    /// The tool answering in `schema`'s format.
    pub fn new(schema: Arc<Schema>) -> Self {
        StructuredOutput { schema }
    }
}

/// The error result of an input that does not match: every violation, in document order.
pub fn mismatch(violations: &[crate::json_schema::Violation]) -> String {
    let mut shown: Vec<String> = violations.iter().take(SHOWN_VIOLATIONS).map(ToString::to_string).collect();
    if violations.len() > SHOWN_VIOLATIONS {
        shown.push(format!("and {} more", violations.len() - SHOWN_VIOLATIONS));
    }
    format!("Output does not match the required schema: {}", shown.join("; "))
}

impl Tool for StructuredOutput {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        "Returns your final answer in the format this request requires; the input schema is \
         that format. Call it once, when you are done, with the whole answer as its input: the \
         request is finished by it."
    }

    fn input_schema(&self) -> Value {
        self.schema.value().clone()
    }

    /// It ends the run: it waits for the reply to end, so a reply that is cut and sent again
    /// never leaves an answer behind.
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        false
    }

    /// It changes nothing outside the run: no rule is needed for it, in plan mode neither.
    fn is_read_only(&self, _input: &Value) -> bool {
        true
    }

    fn call(&self, input: Value, _ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let violations = self.schema.validate(&input);
        let output = if violations.is_empty() {
            ToolOutput { structured: Some(Answer::Valid(input)), ..ToolOutput::ok(ACCEPTED) }
        } else {
            let message = mismatch(&violations);
            ToolOutput { structured: Some(Answer::Invalid(message.clone())), ..ToolOutput::error(message) }
        };
        Box::pin(async move { output })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn a_call_is_checked_against_the_schema() {
        let schema = json!({"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]});
        let tool = StructuredOutput::new(Arc::new(Schema::compile(&schema).unwrap()));
        assert_eq!(tool.input_schema(), schema);
        let ctx = ToolContext::new("/");
        let good = tool.call(json!({"answer": 4}), ctx.clone()).await;
        assert_eq!((good.content.as_str(), good.is_error), (ACCEPTED, false));
        assert_eq!(good.structured, Some(Answer::Valid(json!({"answer": 4}))));
        let bad = tool.call(json!({"answer": "four", "n": 1}), ctx).await;
        let message = "Output does not match the required schema: /answer: must be an integer";
        assert_eq!((bad.content.as_str(), bad.is_error), (message, true));
        assert_eq!(bad.structured, Some(Answer::Invalid(message.into())));
    }
}
