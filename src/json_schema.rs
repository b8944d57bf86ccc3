//! A JSON Schema validator for the schemas `--json-schema` takes (the answer format of
//! structured output), written for the subset such schemas use.
//!
//! Supported assertions: `type` (a name or a list; `integer` admits `4.0`), `enum`, `const`,
//! `properties`, `required`, `additionalProperties`, `patternProperties`, `minProperties`,
//! `maxProperties`, `items` (one schema), `prefixItems`, `minItems`, `maxItems`,
//! `uniqueItems`, `minLength`, `maxLength` (in characters), `pattern`, `minimum`, `maximum`,
//! `exclusiveMinimum`, `exclusiveMaximum` (numbers), `multipleOf`, `allOf`, `anyOf`,
//! `oneOf`, `not`, boolean schemas, and `$ref` to a JSON pointer into the same document
//! (`#`, `#/$defs/Name`, `#/definitions/Name`, as pydantic writes them). Numbers compare by
//! value (`1` equals `1.0`).
//!
//! Annotations (`title`, `description`, `default`, `examples`, `format`, `$schema`, …) and
//! keywords no JSON Schema draft defines are ignored, as the specification asks. A standard
//! assertion this module does not implement (`contains`, `if`, `dependentRequired`,
//! `unevaluatedProperties`, …) makes [`Schema::compile`] fail, naming it: a schema is never
//! half-checked in silence.
//!
//! The `jsonschema` crate would cover every draft, but with its default features off it still
//! adds 31 crates to the build (a big-number stack among them) for the few keywords these
//! schemas use.

use std::collections::HashMap;
use std::fmt;

use regex::Regex;
use serde_json::{Map, Value};

/// Assertion keywords of JSON Schema that [`Schema::compile`] refuses because this module does
/// not check them.
const UNSUPPORTED: &[&str] = &[
    "contains",
    "minContains",
    "maxContains",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "if",
    "then",
    "else",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
    "$dynamicRef",
    "$recursiveRef",
];

/// The type names `type` may use.
const TYPES: &[&str] = &["null", "boolean", "object", "array", "number", "integer", "string"];

/// `$ref`s followed without descending into the instance before validation gives up (a
/// schema whose references only point at each other).
const MAX_REF_DEPTH: usize = 64;

/// Why a schema cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// A schema (or subschema) is neither an object nor a boolean.
    #[error("{at}: a schema must be an object or a boolean")]
    NotASchema {
        /// JSON pointer of the subschema in the schema.
        at: String,
    },
    /// A keyword's value has the wrong shape.
    #[error("{at}: `{keyword}` {expected}")]
    BadKeyword {
        /// JSON pointer of the subschema.
        at: String,
        /// The keyword.
        keyword: String,
        /// What its value must be.
        expected: &'static str,
    },
    /// A standard assertion keyword this validator does not check.
    #[error("{at}: the keyword `{keyword}` is not supported")]
    Unsupported {
        /// JSON pointer of the subschema.
        at: String,
        /// The keyword.
        keyword: String,
    },
    /// A `$ref` that does not point into the document.
    #[error("{at}: `$ref` {reference:?} does not resolve (only local JSON pointers such as \"#/$defs/Name\" do)")]
    BadRef {
        /// JSON pointer of the subschema.
        at: String,
        /// The reference.
        reference: String,
    },
    /// A `pattern` or `patternProperties` key that is not a valid regular expression.
    #[error("{at}: pattern {pattern:?} is not a valid regular expression: {message}")]
    BadPattern {
        /// JSON pointer of the subschema.
        at: String,
        /// The pattern.
        pattern: String,
        /// The regex error.
        message: String,
    },
}

/// One way an instance fails its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON pointer of the failing value in the instance (empty for the instance itself).
    pub path: String,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.path.is_empty() { "root" } else { &self.path };
        write!(f, "{at}: {}", self.message)
    }
}

/// A checked schema, ready to validate instances.
#[derive(Debug, Clone)]
pub struct Schema {
    root: Value,
    patterns: HashMap<String, Regex>,
}

impl PartialEq for Schema {
    fn eq(&self, other: &Schema) -> bool {
        self.root == other.root
    }
}

impl Schema {
    /// Check `schema` (its keywords, references and patterns) once, for many validations.
    ///
    /// # Errors
    /// [`SchemaError`] naming the first subschema that cannot be used.
    pub fn compile(schema: &Value) -> Result<Schema, SchemaError> {
        let mut patterns = HashMap::new();
        check(schema, schema, "", &mut patterns)?;
        Ok(Schema { root: schema.clone(), patterns })
    }

    /// The schema as given.
    pub fn value(&self) -> &Value {
        &self.root
    }

    /// Every way `instance` fails the schema, in document order; empty when it matches.
    pub fn validate(&self, instance: &Value) -> Vec<Violation> {
        let mut out = Vec::new();
        self.walk(&self.root, instance, &mut String::new(), 0, &mut out);
        out
    }

    fn walk(&self, schema: &Value, instance: &Value, path: &mut String, refs: usize, out: &mut Vec<Violation>) {
        let map = match schema {
            Value::Bool(true) => return,
            Value::Bool(false) => return push(out, path, "is not allowed here".into()),
            Value::Object(map) => map,
            // `compile` refused anything else.
            _ => return,
        };
        if let Some(Value::String(reference)) = map.get("$ref") {
            match (resolve(&self.root, reference), refs < MAX_REF_DEPTH) {
                (Some(target), true) => self.walk(target, instance, path, refs + 1, out),
                (Some(_), false) => push(out, path, format!("`$ref` {reference:?} nests too deeply")),
                (None, _) => push(out, path, format!("`$ref` {reference:?} does not resolve")),
            }
        }
        if let Some(types) = map.get("type")
            && !type_matches(types, instance)
        {
            push(out, path, format!("must be {}", type_names(types)));
            // The other keywords of a mismatched type say nothing more useful.
            return;
        }
        if let Some(Value::Array(options)) = map.get("enum")
            && !options.iter().any(|o| same(o, instance))
        {
            push(out, path, format!("must be one of {}", Value::Array(options.clone())));
        }
        if let Some(expected) = map.get("const")
            && !same(expected, instance)
        {
            push(out, path, format!("must be {expected}"));
        }
        self.combinators(map, instance, path, refs, out);
        match instance {
            Value::Object(object) => self.object(map, object, path, out),
            Value::Array(items) => self.array(map, items, path, out),
            Value::String(text) => self.string(map, text, path, out),
            Value::Number(_) => number(map, instance, path, out),
            Value::Null | Value::Bool(_) => {}
        }
    }

    fn combinators(
        &self,
        map: &Map<String, Value>,
        instance: &Value,
        path: &mut String,
        refs: usize,
        out: &mut Vec<Violation>,
    ) {
        if let Some(Value::Array(all)) = map.get("allOf") {
            for schema in all {
                self.walk(schema, instance, path, refs, out);
            }
        }
        let matching = |schemas: &[Value]| schemas.iter().filter(|s| self.matches(s, instance, refs)).count();
        if let Some(Value::Array(any)) = map.get("anyOf")
            && matching(any) == 0
        {
            push(out, path, "must match at least one schema of `anyOf`".into());
        }
        if let Some(Value::Array(one)) = map.get("oneOf") {
            let n = matching(one);
            if n != 1 {
                push(out, path, format!("must match exactly one schema of `oneOf` (it matches {n})"));
            }
        }
        if let Some(not) = map.get("not")
            && self.matches(not, instance, refs)
        {
            push(out, path, "must not match the schema of `not`".into());
        }
    }

    fn matches(&self, schema: &Value, instance: &Value, refs: usize) -> bool {
        let mut out = Vec::new();
        self.walk(schema, instance, &mut String::new(), refs, &mut out);
        out.is_empty()
    }

    fn object(
        &self,
        map: &Map<String, Value>,
        object: &Map<String, Value>,
        path: &mut String,
        out: &mut Vec<Violation>,
    ) {
        if let Some(Value::Array(required)) = map.get("required") {
            for name in required.iter().filter_map(Value::as_str) {
                if !object.contains_key(name) {
                    push(out, path, format!("must have property '{name}'"));
                }
            }
        }
        if let Some(n) = map.get("minProperties").and_then(Value::as_u64)
            && (object.len() as u64) < n
        {
            push(out, path, format!("must have at least {n} properties"));
        }
        if let Some(n) = map.get("maxProperties").and_then(Value::as_u64)
            && (object.len() as u64) > n
        {
            push(out, path, format!("must have at most {n} properties"));
        }
        let properties = map.get("properties").and_then(Value::as_object);
        let patterned = map.get("patternProperties").and_then(Value::as_object);
        for (name, value) in object {
            let mut covered = false;
            if let Some(schema) = properties.and_then(|p| p.get(name)) {
                covered = true;
                self.descend(schema, value, path, name, out);
            }
            for (pattern, schema) in patterned.into_iter().flatten() {
                if self.patterns.get(pattern).is_some_and(|re| re.is_match(name)) {
                    covered = true;
                    self.descend(schema, value, path, name, out);
                }
            }
            match map.get("additionalProperties") {
                Some(_) if covered => {}
                Some(Value::Bool(false)) => push(out, path, format!("must not have property '{name}'")),
                Some(schema) => self.descend(schema, value, path, name, out),
                None => {}
            }
        }
    }

    fn array(&self, map: &Map<String, Value>, items: &[Value], path: &mut String, out: &mut Vec<Violation>) {
        if let Some(n) = map.get("minItems").and_then(Value::as_u64)
            && (items.len() as u64) < n
        {
            push(out, path, format!("must have at least {n} items"));
        }
        if let Some(n) = map.get("maxItems").and_then(Value::as_u64)
            && (items.len() as u64) > n
        {
            push(out, path, format!("must have at most {n} items"));
        }
        if map.get("uniqueItems") == Some(&Value::Bool(true)) {
            'pairs: for (i, a) in items.iter().enumerate() {
                for (j, b) in items.iter().enumerate().skip(i + 1) {
                    if same(a, b) {
                        push(out, path, format!("must not have equal items (items {i} and {j} are)"));
                        break 'pairs;
                    }
                }
            }
        }
        let prefix = map.get("prefixItems").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        for (i, item) in items.iter().enumerate() {
            let schema = prefix.get(i).or_else(|| map.get("items"));
            if let Some(schema) = schema {
                self.descend(schema, item, path, &i.to_string(), out);
            }
        }
    }

    fn string(&self, map: &Map<String, Value>, text: &str, path: &str, out: &mut Vec<Violation>) {
        let chars = text.chars().count() as u64;
        if let Some(n) = map.get("minLength").and_then(Value::as_u64)
            && chars < n
        {
            push(out, path, format!("must be at least {n} characters long"));
        }
        if let Some(n) = map.get("maxLength").and_then(Value::as_u64)
            && chars > n
        {
            push(out, path, format!("must be at most {n} characters long"));
        }
        if let Some(Value::String(pattern)) = map.get("pattern")
            && self.patterns.get(pattern).is_some_and(|re| !re.is_match(text))
        {
            push(out, path, format!("must match the pattern {pattern:?}"));
        }
    }

    fn descend(&self, schema: &Value, instance: &Value, path: &mut String, token: &str, out: &mut Vec<Violation>) {
        let len = path.len();
        path.push('/');
        path.push_str(&token.replace('~', "~0").replace('/', "~1"));
        self.walk(schema, instance, path, 0, out);
        path.truncate(len);
    }
}

fn number(map: &Map<String, Value>, instance: &Value, path: &str, out: &mut Vec<Violation>) {
    let Some(x) = instance.as_f64() else { return };
    let bound = |key: &str| map.get(key).and_then(Value::as_f64);
    type Holds = fn(f64, f64) -> bool;
    let checks: [(&str, Holds, &str); 4] = [
        ("minimum", |x, b| x >= b, ">="),
        ("maximum", |x, b| x <= b, "<="),
        ("exclusiveMinimum", |x, b| x > b, ">"),
        ("exclusiveMaximum", |x, b| x < b, "<"),
    ];
    for (key, holds, op) in checks {
        if let Some(b) = bound(key)
            && !holds(x, b)
        {
            push(out, path, format!("must be {op} {}", map[key]));
        }
    }
    if let Some(m) = bound("multipleOf") {
        let q = x / m;
        if !q.is_finite() || (q - q.round()).abs() > 1e-9 * q.abs().max(1.0) {
            push(out, path, format!("must be a multiple of {}", map["multipleOf"]));
        }
    }
}

fn push(out: &mut Vec<Violation>, path: &str, message: String) {
    out.push(Violation { path: path.to_owned(), message });
}

/// Whether `instance` has one of the types `types` names (a string or an array of them).
fn type_matches(types: &Value, instance: &Value) -> bool {
    let one = |name: &str| match (name, instance) {
        ("null", Value::Null) | ("boolean", Value::Bool(_)) | ("object", Value::Object(_)) => true,
        ("array", Value::Array(_)) | ("string", Value::String(_)) | ("number", Value::Number(_)) => true,
        ("integer", Value::Number(n)) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.is_finite() && f.fract() == 0.0)
        }
        _ => false,
    };
    match types {
        Value::String(name) => one(name),
        Value::Array(names) => names.iter().filter_map(Value::as_str).any(one),
        _ => true,
    }
}

fn type_names(types: &Value) -> String {
    match types {
        Value::String(name) => article(name),
        Value::Array(names) => {
            let names: Vec<String> = names.iter().filter_map(Value::as_str).map(article).collect();
            names.join(" or ")
        }
        other => other.to_string(),
    }
}

fn article(name: &str) -> String {
    match name {
        "null" => "null".into(),
        "array" | "object" | "integer" => format!("an {name}"),
        _ => format!("a {name}"),
    }
}

/// JSON equality with numbers compared by value, as JSON Schema compares them.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
            (Some(x), Some(y), _, _) => x == y,
            (_, _, Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// The subschema a local `$ref` points at.
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    root.pointer(pointer)
}

/// Check one subschema at `at` and everything below it.
fn check(root: &Value, schema: &Value, at: &str, patterns: &mut HashMap<String, Regex>) -> Result<(), SchemaError> {
    let map = match schema {
        Value::Bool(_) => return Ok(()),
        Value::Object(map) => map,
        _ => return Err(SchemaError::NotASchema { at: shown(at) }),
    };
    let bad = |keyword: &str, expected: &'static str| SchemaError::BadKeyword {
        at: shown(at),
        keyword: keyword.to_owned(),
        expected,
    };
    let escape = |token: &str| token.replace('~', "~0").replace('/', "~1");
    for (keyword, value) in map {
        let below = format!("{at}/{}", escape(keyword));
        let sub = |token: &str| format!("{below}/{}", escape(token));
        match keyword.as_str() {
            k if UNSUPPORTED.contains(&k) => {
                return Err(SchemaError::Unsupported { at: shown(at), keyword: keyword.clone() });
            }
            "type" => {
                let names: Vec<&Value> = match value {
                    Value::Array(names) => names.iter().collect(),
                    one => vec![one],
                };
                if names.is_empty() || !names.iter().all(|n| n.as_str().is_some_and(|n| TYPES.contains(&n))) {
                    return Err(bad(
                        keyword,
                        "must name one of the types null, boolean, object, array, number, integer, string, or list them",
                    ));
                }
            }
            "enum" if !value.is_array() => return Err(bad(keyword, "must be an array")),
            "required" if !value.as_array().is_some_and(|names| names.iter().all(Value::is_string)) => {
                return Err(bad(keyword, "must be an array of strings"));
            }
            "properties" | "patternProperties" | "$defs" | "definitions" => {
                let Some(children) = value.as_object() else { return Err(bad(keyword, "must be an object")) };
                for (name, child) in children {
                    if keyword == "patternProperties" {
                        compile_pattern(name, at, patterns)?;
                    }
                    check(root, child, &sub(name), patterns)?;
                }
            }
            "additionalProperties" | "items" | "not" => {
                if value.is_array() {
                    return Err(bad(keyword, "must be a schema (a tuple of `items` is written `prefixItems`)"));
                }
                check(root, value, &below, patterns)?;
            }
            "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                let Some(children) = value.as_array().filter(|c| !c.is_empty()) else {
                    return Err(bad(keyword, "must be a non-empty array of schemas"));
                };
                for (i, child) in children.iter().enumerate() {
                    check(root, child, &sub(&i.to_string()), patterns)?;
                }
            }
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" if !value.is_number() => {
                return Err(bad(keyword, "must be a number"));
            }
            "multipleOf" if !value.as_f64().is_some_and(|m| m > 0.0) => {
                return Err(bad(keyword, "must be a number above 0"));
            }
            "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties" | "maxProperties"
                if value.as_u64().is_none() =>
            {
                return Err(bad(keyword, "must be a non-negative integer"));
            }
            "uniqueItems" if !value.is_boolean() => return Err(bad(keyword, "must be a boolean")),
            "pattern" => match value.as_str() {
                Some(pattern) => compile_pattern(pattern, at, patterns)?,
                None => return Err(bad(keyword, "must be a string")),
            },
            "$ref" => {
                let reference = value.as_str().ok_or_else(|| bad(keyword, "must be a string"))?;
                if resolve(root, reference).is_none() {
                    return Err(SchemaError::BadRef { at: shown(at), reference: reference.to_owned() });
                }
            }
            // Annotations, and keywords no draft defines.
            _ => {}
        }
    }
    Ok(())
}

fn compile_pattern(pattern: &str, at: &str, patterns: &mut HashMap<String, Regex>) -> Result<(), SchemaError> {
    if patterns.contains_key(pattern) {
        return Ok(());
    }
    let re = Regex::new(pattern).map_err(|e| SchemaError::BadPattern {
        at: shown(at),
        pattern: pattern.to_owned(),
        message: e.to_string(),
    })?;
    patterns.insert(pattern.to_owned(), re);
    Ok(())
}

fn shown(at: &str) -> String {
    if at.is_empty() { "the schema".into() } else { format!("the schema at {at}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errors(schema: Value, instance: Value) -> Vec<String> {
        Schema::compile(&schema).unwrap().validate(&instance).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn types_and_required_properties() {
        let schema = json!({"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]});
        assert_eq!(errors(schema.clone(), json!({"answer": 4})), Vec::<String>::new());
        assert_eq!(errors(schema.clone(), json!({"answer": 4.0})), Vec::<String>::new());
        assert_eq!(errors(schema.clone(), json!({"answer": "four"})), vec!["/answer: must be an integer"]);
        assert_eq!(errors(schema.clone(), json!({"answer": 4.5})), vec!["/answer: must be an integer"]);
        assert_eq!(errors(schema.clone(), json!({})), vec!["root: must have property 'answer'"]);
        assert_eq!(errors(schema, json!([4])), vec!["root: must be an object"]);
        assert_eq!(errors(json!({"type": ["string", "null"]}), json!(1)), vec!["root: must be a string or null"]);
    }

    /// The shapes of the Agent SDK's structured-output examples: nested objects, arrays, enums.
    #[test]
    fn nested_objects_arrays_and_enums() {
        let schema = json!({
            "type": "object",
            "properties": {
                "analysis": {"type": "object", "properties": {"word_count": {"type": "number"}},
                             "required": ["word_count"]},
                "words": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "framework": {"type": "string", "enum": ["pytest", "unittest"]},
            },
            "required": ["analysis", "words"],
            "additionalProperties": false,
        });
        let good = json!({"analysis": {"word_count": 2}, "words": ["Hello", "world"], "framework": "pytest"});
        assert_eq!(errors(schema.clone(), good), Vec::<String>::new());
        let bad = json!({"analysis": {}, "words": ["Hello", 3], "framework": "nose", "extra": 1});
        assert_eq!(
            errors(schema, bad),
            vec![
                "/analysis: must have property 'word_count'",
                "root: must not have property 'extra'",
                "/framework: must be one of [\"pytest\",\"unittest\"]",
                "/words/1: must be a string",
            ]
        );
    }

    #[test]
    fn numbers_strings_and_combinators() {
        let range = json!({"type": "number", "minimum": 1, "exclusiveMaximum": 10, "multipleOf": 0.5});
        assert_eq!(errors(range.clone(), json!(9.5)), Vec::<String>::new());
        assert_eq!(errors(range.clone(), json!(10)), vec!["root: must be < 10"]);
        assert_eq!(errors(range, json!(0.7)), vec!["root: must be >= 1", "root: must be a multiple of 0.5"]);
        let text = json!({"type": "string", "minLength": 2, "maxLength": 3, "pattern": "^[a-z]+$"});
        assert_eq!(errors(text.clone(), json!("éé")), vec!["root: must match the pattern \"^[a-z]+$\""]);
        assert_eq!(errors(text, json!("abcd")), vec!["root: must be at most 3 characters long"]);
        let either = json!({"anyOf": [{"type": "string"}, {"type": "integer"}], "not": {"const": 0}});
        assert_eq!(errors(either.clone(), json!(3)), Vec::<String>::new());
        assert_eq!(errors(either.clone(), json!(0.0)), vec!["root: must not match the schema of `not`"]);
        assert_eq!(errors(either, json!(true)), vec!["root: must match at least one schema of `anyOf`"]);
        let one = json!({"oneOf": [{"type": "number"}, {"type": "integer"}]});
        assert_eq!(errors(one, json!(2)), vec!["root: must match exactly one schema of `oneOf` (it matches 2)"]);
        assert_eq!(
            errors(json!({"type": "array", "uniqueItems": true}), json!([1, 2, 1.0])),
            vec!["root: must not have equal items (items 0 and 2 are)"]
        );
    }

    /// pydantic's `model_json_schema()` puts nested models under `$defs` and refers to them.
    #[test]
    fn local_references_resolve() {
        let schema = json!({
            "$defs": {"Item": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
            "type": "object",
            "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Item"}}},
        });
        assert_eq!(errors(schema.clone(), json!({"items": [{"n": 1}]})), Vec::<String>::new());
        assert_eq!(errors(schema, json!({"items": [{"n": "x"}]})), vec!["/items/0/n: must be an integer"]);
        let looping = json!({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"});
        assert_eq!(errors(looping, json!(1)), vec!["root: `$ref` \"#/$defs/a\" nests too deeply"]);
    }

    #[test]
    fn unusable_schemas_are_refused_by_name() {
        let err = |schema: Value| Schema::compile(&schema).unwrap_err().to_string();
        assert_eq!(
            err(json!({"type": "object", "properties": {"a": {"if": {"type": "string"}}}})),
            "the schema at /properties/a: the keyword `if` is not supported"
        );
        assert_eq!(
            err(json!({"$ref": "#/$defs/Missing"})),
            "the schema: `$ref` \"#/$defs/Missing\" does not resolve (only local JSON pointers such as \"#/$defs/Name\" do)"
        );
        assert_eq!(err(json!({"type": "text"})).split(':').next(), Some("the schema"));
        assert_eq!(
            err(json!({"properties": {"a": 3}})),
            "the schema at /properties/a: a schema must be an object or a boolean"
        );
        assert!(
            err(json!({"pattern": "("})).starts_with("the schema: pattern \"(\" is not a valid regular expression")
        );
        // Annotations and unknown keywords are not assertions.
        let annotated = json!({"title": "T", "description": "d", "format": "email", "x-extra": {"if": 1}});
        assert_eq!(errors(annotated, json!("not an email")), Vec::<String>::new());
    }
}
