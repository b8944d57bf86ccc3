//! The `WWW-Authenticate` header of a 401 or 403 (RFC 6750 §3, RFC 9728 §5.1): where the
//! server's protected-resource metadata is (`resource_metadata`), the scopes it wants
//! (`scope`), and why it refused (`error`, e.g. `insufficient_scope`).

/// What a server's challenge says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    /// `resource_metadata`: the URL of the protected-resource metadata.
    pub resource_metadata: Option<String>,
    /// `scope`: the scopes the request needs, space-separated.
    pub scope: Option<String>,
    /// `error`: `invalid_token`, `insufficient_scope`, ….
    pub error: Option<String>,
}

impl Challenge {
    /// The challenge of the header `value`: the parameters of its `Bearer` challenge (the
    /// first of each name when several are given), or of the whole header when it names
    /// no scheme.
    pub fn parse(value: &str) -> Challenge {
        let params = params(bearer_part(value));
        let get = |name: &str| params.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone());
        Challenge {
            resource_metadata: get("resource_metadata").filter(|v| !v.is_empty()),
            scope: get("scope").filter(|v| !v.trim().is_empty()),
            error: get("error").filter(|v| !v.is_empty()),
        }
    }

    /// The scopes the challenge names.
    pub fn scopes(&self) -> Vec<String> {
        self.scope.as_deref().map(split_scopes).unwrap_or_default()
    }
}

/// The scopes of a space-separated `scope` value.
pub fn split_scopes(scope: &str) -> Vec<String> {
    scope.split_whitespace().map(str::to_owned).collect()
}

/// The part of `value` after its `Bearer` scheme; all of it without one.
fn bearer_part(value: &str) -> &str {
    let lower = value.to_ascii_lowercase();
    let mut from = 0;
    while let Some(found) = lower[from..].find("bearer") {
        let at = from + found;
        let before_ok = at == 0 || matches!(value.as_bytes()[at - 1], b' ' | b',');
        let after = at + "bearer".len();
        let after_ok = after == value.len() || value.as_bytes()[after] == b' ';
        if before_ok && after_ok {
            return &value[after..];
        }
        from = after;
    }
    value
}

/// The `name=value` and `name="quoted value"` parameters of `text`, in order.
fn params(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let mut name = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c == ',' || c.is_whitespace() {
                break;
            }
            name.push(c);
            chars.next();
        }
        if name.is_empty() && chars.peek().is_none() {
            return out;
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek() != Some(&'=') {
            // A scheme name (a second challenge) or a token68: not a parameter.
            if chars.peek().is_none() {
                return out;
            }
            continue;
        }
        chars.next();
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '"' => break,
                    other => value.push(other),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                value.push(c);
                chars.next();
            }
            value = value.trim().to_owned();
        }
        out.push((name, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bearer_challenges_parameters_are_read() {
        let challenge = Challenge::parse(
            r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp", error_description="a \"quoted\" reason""#,
        );
        assert_eq!(
            challenge,
            Challenge {
                resource_metadata: Some("http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp".into()),
                scope: Some("mcp:basic mcp:write".into()),
                error: Some("insufficient_scope".into()),
            }
        );
        assert_eq!(challenge.scopes(), ["mcp:basic", "mcp:write"]);
    }

    #[test]
    fn unquoted_values_other_schemes_and_nothing_at_all() {
        let challenge = Challenge::parse(r#"Basic realm="x", Bearer error=invalid_token, scope=read"#);
        assert_eq!(challenge.error.as_deref(), Some("invalid_token"));
        assert_eq!(challenge.scope.as_deref(), Some("read"));
        assert_eq!(Challenge::parse("Bearer"), Challenge::default());
        assert_eq!(Challenge::parse(r#"bearer scope="""#), Challenge::default());
        assert_eq!(Challenge::parse("Bearer realm=\"a,b\", scope=\"s\"").scope.as_deref(), Some("s"));
    }
}
