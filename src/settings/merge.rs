//! How settings layers combine: a later layer's objects merge into the earlier ones key by
//! key, lists are joined (an item already there is not added again), and any other value
//! replaces the earlier one.

use serde_json::Value;

/// `over` merged onto `base`.
pub fn merge(base: Value, over: Value) -> Value {
    match (base, over) {
        (Value::Object(mut base), Value::Object(over)) => {
            for (key, value) in over {
                let merged = match base.remove(&key) {
                    Some(earlier) => merge(earlier, value),
                    None => value,
                };
                base.insert(key, merged);
            }
            Value::Object(base)
        }
        (Value::Array(mut base), Value::Array(over)) => {
            for item in over {
                if !base.contains(&item) {
                    base.push(item);
                }
            }
            Value::Array(base)
        }
        (_, over) => over,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_merge_lists_join_and_scalars_are_replaced() {
        let user = json!({
            "permissions": {"allow": ["Read", "Bash(ls:*)"], "defaultMode": "default"},
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "a"}]}]},
            "outputStyle": "Explanatory",
        });
        let project = json!({
            "permissions": {"allow": ["Bash(ls:*)", "Edit"], "deny": ["Read(./.env)"], "defaultMode": "acceptEdits"},
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "b"}]}], "PreToolUse": []},
            "outputStyle": null,
        });
        assert_eq!(
            merge(user, project),
            json!({
                "permissions": {"allow": ["Read", "Bash(ls:*)", "Edit"], "deny": ["Read(./.env)"], "defaultMode": "acceptEdits"},
                "hooks": {
                    "Stop": [{"hooks": [{"type": "command", "command": "a"}]}, {"hooks": [{"type": "command", "command": "b"}]}],
                    "PreToolUse": [],
                },
                "outputStyle": null,
            })
        );
        assert_eq!(merge(Value::Null, json!({"a": 1})), json!({"a": 1}));
        assert_eq!(merge(json!({"a": [1]}), json!({"a": {"b": 2}})), json!({"a": {"b": 2}}));
    }
}
