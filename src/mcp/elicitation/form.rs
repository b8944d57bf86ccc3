//! The fields of an elicitation form: the `requestedSchema` of an `elicitation/create`
//! request read as a list of [`Field`]s, a typed answer parsed from what a person types
//! ([`Field::parse`]), and the schema's defaults filled into an answer that leaves fields out
//! ([`apply_defaults`], SEP-1034).
//!
//! The schema is MCP's restricted JSON Schema: an object whose properties are primitives —
//! a string (`minLength`, `maxLength`, `format`), a number or an integer (`minimum`,
//! `maximum`), a boolean, a single choice (`enum`, with the legacy `enumNames` labels, or
//! `oneOf` of `{const, title}`) or a multiple choice (`type: array` whose `items` hold such
//! an enum, `minItems`, `maxItems`).

use serde_json::{Map, Value};

/// One property of the form.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The property's name, the key of its value in the answer.
    pub name: String,
    /// Its `title`, else its name.
    pub label: String,
    /// Its `description`.
    pub description: Option<String>,
    /// Whether `required` lists it.
    pub required: bool,
    /// Its `default`.
    pub default: Option<Value>,
    /// What it holds.
    pub kind: Kind,
}

/// What a field holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// Text, of this many characters at least and at most, in this `format`.
    Text {
        /// `minLength`.
        min: Option<u64>,
        /// `maxLength`.
        max: Option<u64>,
        /// `format` (`email`, `uri`, `date`, `date-time`), shown as a hint.
        format: Option<String>,
    },
    /// A number; `integer` for `type: integer`.
    Number {
        /// Whether only whole numbers are allowed.
        integer: bool,
        /// `minimum`.
        min: Option<f64>,
        /// `maximum`.
        max: Option<f64>,
    },
    /// Yes or no.
    Boolean,
    /// One of these (value, label) options.
    Choice(Vec<Choice>),
    /// Some of these options, between `min` and `max` of them.
    Choices {
        /// The options.
        options: Vec<Choice>,
        /// `minItems`.
        min: Option<u64>,
        /// `maxItems`.
        max: Option<u64>,
    },
}

/// One option of a choice: the value sent and the label shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The value the answer carries.
    pub value: String,
    /// What the person reads.
    pub label: String,
}

/// The fields of `schema`: those `order` names first, in that order (the server's, as it
/// listed its `properties`), then the others by name.
pub fn fields_in(schema: &Value, order: &[String]) -> Vec<Field> {
    let mut fields = fields(schema);
    fields.sort_by_key(|f| order.iter().position(|name| *name == f.name).unwrap_or(usize::MAX));
    fields
}

/// The fields of `schema`, by name.
pub fn fields(schema: &Value) -> Vec<Field> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return Vec::new() };
    properties
        .iter()
        .map(|(name, property)| Field {
            name: name.clone(),
            label: property.get("title").and_then(Value::as_str).unwrap_or(name).to_owned(),
            description: property.get("description").and_then(Value::as_str).map(str::to_owned),
            required: required.contains(&name.as_str()),
            default: property.get("default").cloned(),
            kind: kind_of(property),
        })
        .collect()
}

/// What `property` holds; anything unknown is text.
fn kind_of(property: &Value) -> Kind {
    let number = |key: &str| property.get(key).and_then(Value::as_f64);
    let count = |key: &str| property.get(key).and_then(Value::as_u64);
    if let Some(options) = choices_of(property) {
        return Kind::Choice(options);
    }
    match property.get("type").and_then(Value::as_str) {
        Some("boolean") => Kind::Boolean,
        Some(kind @ ("number" | "integer")) => {
            Kind::Number { integer: kind == "integer", min: number("minimum"), max: number("maximum") }
        }
        Some("array") => Kind::Choices {
            options: property.get("items").and_then(choices_of).unwrap_or_default(),
            min: count("minItems"),
            max: count("maxItems"),
        },
        _ => Kind::Text {
            min: count("minLength"),
            max: count("maxLength"),
            format: property.get("format").and_then(Value::as_str).map(str::to_owned),
        },
    }
}

/// The options of an enum: `enum` (labelled by `enumNames` when given), or `oneOf` / `anyOf`
/// of `{const, title}`.
fn choices_of(schema: &Value) -> Option<Vec<Choice>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let names = schema.get("enumNames").and_then(Value::as_array);
        return Some(
            values
                .iter()
                .enumerate()
                .filter_map(|(i, v)| {
                    let value = v.as_str()?.to_owned();
                    let label = names.and_then(|n| n.get(i)).and_then(Value::as_str).unwrap_or(&value).to_owned();
                    Some(Choice { value, label })
                })
                .collect(),
        );
    }
    let titled = schema.get("oneOf").or_else(|| schema.get("anyOf"))?.as_array()?;
    Some(
        titled
            .iter()
            .filter_map(|option| {
                let value = option.get("const")?.as_str()?.to_owned();
                let label = option.get("title").and_then(Value::as_str).unwrap_or(&value).to_owned();
                Some(Choice { value, label })
            })
            .collect(),
    )
}

/// Every field of `schema` that `content` leaves out and that has a `default` gets it.
pub fn apply_defaults(schema: &Value, content: &mut Map<String, Value>) {
    for field in fields(schema) {
        if let (false, Some(default)) = (content.contains_key(&field.name), field.default) {
            content.insert(field.name, default);
        }
    }
}

/// What is wrong with the text typed for a field; the field is asked again.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AnswerError {
    /// Nothing typed for a required field without a default.
    #[error("this field is required")]
    Required,
    /// A text that is too short or too long.
    #[error("expected {} characters", bounds(*.min, *.max))]
    Length {
        /// The fewest characters.
        min: Option<u64>,
        /// The most characters.
        max: Option<u64>,
    },
    /// Not a number.
    #[error("`{0}` is not a number")]
    NotANumber(String),
    /// A fraction for an integer field.
    #[error("`{0}` is not a whole number")]
    NotWhole(String),
    /// A number out of the field's range.
    #[error("expected a number {}", range(*.min, *.max))]
    OutOfRange {
        /// The least.
        min: Option<f64>,
        /// The most.
        max: Option<f64>,
    },
    /// Neither yes nor no.
    #[error("answer y or n")]
    YesOrNo,
    /// Text that names no option.
    #[error("`{0}` is not one of the options")]
    NoSuchOption(String),
    /// Too few or too many options picked.
    #[error("pick {} options", bounds(*.min, *.max))]
    Count {
        /// The fewest.
        min: Option<u64>,
        /// The most.
        max: Option<u64>,
    },
}

impl Field {
    /// What to show before reading the field's value: its label, description, the hint for
    /// its kind and its default, e.g. `age — User age (a whole number) [30]`.
    pub fn prompt(&self) -> String {
        let mut text = self.label.clone();
        if let Some(description) = &self.description {
            text.push_str(" — ");
            text.push_str(description);
        }
        text.push_str(&format!(" ({})", self.hint()));
        if let Some(default) = &self.default {
            text.push_str(&format!(" [{}]", shown(default)));
        } else if !self.required {
            text.push_str(" [none]");
        }
        text
    }

    /// The kind of answer the field takes, in words.
    fn hint(&self) -> String {
        let list = |options: &[Choice]| {
            options
                .iter()
                .enumerate()
                .map(|(i, o)| {
                    if o.label == o.value {
                        format!("{} {}", i + 1, o.value)
                    } else {
                        format!("{} {} ({})", i + 1, o.label, o.value)
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        match &self.kind {
            Kind::Text { format: Some(format), .. } => format!("text, {format}"),
            Kind::Text { format: None, .. } => "text".into(),
            Kind::Number { integer: true, .. } => "a whole number".into(),
            Kind::Number { integer: false, .. } => "a number".into(),
            Kind::Boolean => "y or n".into(),
            Kind::Choice(options) => format!("one of: {}", list(options)),
            Kind::Choices { options, .. } => format!("some of, comma-separated: {}", list(options)),
        }
    }

    /// The value `text` gives the field: `Ok(None)` leaves it out (nothing typed, no
    /// default, not required); nothing typed takes the default.
    ///
    /// # Errors
    /// What is wrong with the text, to be asked again.
    pub fn parse(&self, text: &str) -> Result<Option<Value>, AnswerError> {
        let text = text.trim();
        if text.is_empty() {
            return match (&self.default, self.required) {
                (Some(default), _) => Ok(Some(default.clone())),
                (None, true) => Err(AnswerError::Required),
                (None, false) => Ok(None),
            };
        }
        match &self.kind {
            Kind::Text { min, max, .. } => {
                let length = text.chars().count() as u64;
                if min.is_some_and(|m| length < m) || max.is_some_and(|m| length > m) {
                    return Err(AnswerError::Length { min: *min, max: *max });
                }
                Ok(Some(Value::String(text.to_owned())))
            }
            Kind::Number { integer, min, max } => {
                let number: f64 = text.parse().map_err(|_| AnswerError::NotANumber(text.to_owned()))?;
                if *integer && number.fract() != 0.0 {
                    return Err(AnswerError::NotWhole(text.to_owned()));
                }
                if min.is_some_and(|m| number < m) || max.is_some_and(|m| number > m) {
                    return Err(AnswerError::OutOfRange { min: *min, max: *max });
                }
                if *integer {
                    // A whole number within i64's range was just checked to have no fraction.
                    #[allow(clippy::cast_possible_truncation)]
                    return Ok(Some(Value::from(number as i64)));
                }
                Ok(Some(serde_json::Number::from_f64(number).map_or(Value::Null, Value::Number)))
            }
            Kind::Boolean => match text.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Ok(Some(Value::Bool(true))),
                "n" | "no" | "false" => Ok(Some(Value::Bool(false))),
                _ => Err(AnswerError::YesOrNo),
            },
            Kind::Choice(options) => pick(options, text).map(|c| Some(Value::String(c.value.clone()))),
            Kind::Choices { options, min, max } => {
                let picked: Vec<Value> = text
                    .split(',')
                    .map(str::trim)
                    .filter(|part| !part.is_empty())
                    .map(|part| pick(options, part).map(|c| Value::String(c.value.clone())))
                    .collect::<Result<_, _>>()?;
                let count = picked.len() as u64;
                if min.is_some_and(|m| count < m) || max.is_some_and(|m| count > m) {
                    return Err(AnswerError::Count { min: *min, max: *max });
                }
                Ok(Some(Value::Array(picked)))
            }
        }
    }
}

/// The option `text` names: its number in the list, its value or its label.
fn pick<'a>(options: &'a [Choice], text: &str) -> Result<&'a Choice, AnswerError> {
    if let Some(choice) = text.parse::<usize>().ok().and_then(|n| n.checked_sub(1)).and_then(|i| options.get(i)) {
        return Ok(choice);
    }
    options
        .iter()
        .find(|o| o.value == text || o.label.eq_ignore_ascii_case(text))
        .ok_or_else(|| AnswerError::NoSuchOption(text.to_owned()))
}

/// `at least 2`, `at most 5`, `2 to 5`.
fn bounds(min: Option<u64>, max: Option<u64>) -> String {
    match (min, max) {
        (Some(min), Some(max)) => format!("{min} to {max}"),
        (Some(min), None) => format!("at least {min}"),
        (None, Some(max)) => format!("at most {max}"),
        (None, None) => "any number of".into(),
    }
}

/// `from 1 to 10`, `of at least 1`, `of at most 10`.
fn range(min: Option<f64>, max: Option<f64>) -> String {
    match (min, max) {
        (Some(min), Some(max)) => format!("from {min} to {max}"),
        (Some(min), None) => format!("of at least {min}"),
        (None, Some(max)) => format!("of at most {max}"),
        (None, None) => String::new(),
    }
}

/// A default as shown in a prompt: a string without quotes, anything else as JSON.
fn shown(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Array(items) => items.iter().map(shown).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The schema of the conformance suite's SEP-1034 scenario, plus a required field.
    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30, "minimum": 0},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive"], "enumNames": ["Active", "Inactive"], "default": "active"},
                "verified": {"type": "boolean", "default": true},
                "email": {"type": "string", "title": "E-mail", "format": "email"},
                "tags": {"type": "array", "items": {"anyOf": [{"const": "a", "title": "Alpha"}, {"const": "b", "title": "Beta"}]}, "maxItems": 1}
            },
            "required": ["email"]
        })
    }

    #[test]
    fn omitted_fields_get_their_defaults_and_given_ones_stay() {
        let mut content = Map::new();
        content.insert("age".into(), json!(41));
        apply_defaults(&schema(), &mut content);
        assert_eq!(
            Value::Object(content),
            json!({"name": "John Doe", "age": 41, "score": 95.5, "status": "active", "verified": true})
        );
    }

    #[test]
    fn fields_come_with_their_kind_label_and_prompt() {
        let fields = fields(&schema());
        let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["age", "email", "name", "score", "status", "tags", "verified"]);
        let prompts: Vec<String> = fields.iter().map(Field::prompt).collect();
        assert_eq!(
            prompts,
            [
                "age — User age (a whole number) [30]",
                "E-mail (text, email)",
                "name — User name (text) [John Doe]",
                "score (a number) [95.5]",
                "status (one of: 1 Active (active), 2 Inactive (inactive)) [active]",
                "tags (some of, comma-separated: 1 Alpha (a), 2 Beta (b)) [none]",
                "verified (y or n) [true]",
            ]
        );
    }

    #[test]
    fn the_servers_order_comes_first() {
        let order = ["verified".to_owned(), "name".to_owned()];
        let names: Vec<String> = fields_in(&schema(), &order).into_iter().map(|f| f.name).collect();
        assert_eq!(names, ["verified", "name", "age", "email", "score", "status", "tags"]);
    }

    #[test]
    fn typed_answers_are_parsed_by_kind() {
        let fields = fields(&schema());
        let field = |name: &str| fields.iter().find(|f| f.name == name).unwrap();
        assert_eq!(field("age").parse(""), Ok(Some(json!(30))));
        assert_eq!(field("age").parse("42"), Ok(Some(json!(42))));
        assert_eq!(field("age").parse("4.5").map_err(|e| e.to_string()), Err("`4.5` is not a whole number".to_owned()));
        assert_eq!(
            field("age").parse("-1").map_err(|e| e.to_string()),
            Err("expected a number of at least 0".to_owned())
        );
        assert_eq!(field("score").parse("7.25"), Ok(Some(json!(7.25))));
        assert_eq!(field("score").parse("x").map_err(|e| e.to_string()), Err("`x` is not a number".to_owned()));
        assert_eq!(field("verified").parse("n"), Ok(Some(json!(false))));
        assert_eq!(field("verified").parse("maybe").map_err(|e| e.to_string()), Err("answer y or n".to_owned()));
        assert_eq!(field("status").parse("2"), Ok(Some(json!("inactive"))));
        assert_eq!(field("status").parse("Inactive"), Ok(Some(json!("inactive"))));
        assert_eq!(
            field("status").parse("gone").map_err(|e| e.to_string()),
            Err("`gone` is not one of the options".to_owned())
        );
        assert_eq!(field("email").parse("").map_err(|e| e.to_string()), Err("this field is required".to_owned()));
        assert_eq!(field("email").parse(" a@b.c "), Ok(Some(json!("a@b.c"))));
        assert_eq!(field("tags").parse(""), Ok(None));
        assert_eq!(field("tags").parse("beta"), Ok(Some(json!(["b"]))));
        assert_eq!(field("tags").parse("1, 2").map_err(|e| e.to_string()), Err("pick at most 1 options".to_owned()));
    }
}
