//! The names the model calls MCP tools by: `mcp__<server>__<tool>`, valid for the Messages
//! API (`^[a-zA-Z0-9_-]{1,64}$`) and distinct. Characters the API refuses become `_`
//! ([`clean`]). Beyond that, every change is a [`Named::warning`] naming the server and the
//! original name: an empty name is replaced ([`UNNAMED`]), a server part longer than
//! [`MAX_SERVER_PART`] or a whole name longer than [`MAX_TOOL_NAME`] is shortened, and a name
//! already taken (two names that clean alike) gets a short stable hash of the original
//! ([`hash`]). A call still reaches the tool by its own name ([`super::tool::McpTool`]
//! keeps it).

use std::collections::BTreeSet;

/// The longest tool name the Messages API takes.
pub const MAX_TOOL_NAME: usize = 64;

/// The longest server part of a tool name, so that every server leaves its tools at least
/// 33 characters.
pub const MAX_SERVER_PART: usize = 24;

/// What an empty server or tool name is called.
pub const UNNAMED: &str = "unnamed";

/// `mcp__`, `__`: the characters of a tool name around its two parts.
const FRAME: usize = "mcp__".len() + "__".len();

/// A name to offer, and why it is not simply the cleaned original.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// The name (a server part, or a full `mcp__…` tool name).
    pub name: String,
    /// A warning for stderr when the name had to change beyond [`clean`].
    pub warning: Option<String>,
}

/// `name` with every character the Messages API refuses in a tool name (anything but ASCII
/// letters, digits, `_` and `-`) replaced by `_`.
pub fn clean(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}

/// The server parts of `servers`' tool names, in the same order: cleaned, an empty one
/// [`UNNAMED`], at most [`MAX_SERVER_PART`] characters, and distinct.
pub fn server_parts(servers: &[&str]) -> Vec<Named> {
    let mut taken = BTreeSet::new();
    exact_first(servers, MAX_SERVER_PART, |server| {
        let (name, reason) = fitted(server, MAX_SERVER_PART, "server", &mut taken, &|part| part.to_owned());
        let warning = reason.map(|reason| {
            format!("agentloop: warning: MCP server `{server}`: its tools are named mcp__{name}__…: {reason}")
        });
        Named { name, warning }
    })
}

/// `name` applied to each of `originals`, those that are valid as they are (and fit `room`)
/// first, so that such a name is never changed for another that cleans into it; the
/// results in the order of `originals`.
fn exact_first(originals: &[&str], room: usize, mut name: impl FnMut(&str) -> Named) -> Vec<Named> {
    let exact = |s: &str| !s.is_empty() && s.len() <= room && clean(s) == s;
    let mut order: Vec<usize> = (0..originals.len()).collect();
    order.sort_by_key(|&i| !exact(originals[i]));
    let mut named: Vec<(usize, Named)> = order.into_iter().map(|i| (i, name(originals[i]))).collect();
    named.sort_by_key(|(i, _)| *i);
    named.into_iter().map(|(_, n)| n).collect()
}

/// The full names of the tools `tools` of the server `server` whose part is `part` (from
/// [`server_parts`]), in the same order: `mcp__<part>__<tool>`, at most [`MAX_TOOL_NAME`]
/// characters, distinct.
pub fn tool_names(server: &str, part: &str, tools: &[&str]) -> Vec<Named> {
    let room = MAX_TOOL_NAME.saturating_sub(FRAME + part.len());
    let mut taken = BTreeSet::new();
    exact_first(tools, room, |tool| {
        let full = |tool_part: &str| format!("mcp__{part}__{tool_part}");
        let (name, reason) = fitted(tool, room, "tool", &mut taken, &full);
        let name = full(&name);
        let warning = reason.map(|reason| {
            format!("agentloop: warning: MCP server `{server}`: tool `{tool}` is offered as {name}: {reason}")
        });
        Named { name, warning }
    })
}

/// `original` cleaned, made non-empty, at most `room` characters and, once `full` makes
/// it a whole name, not in `taken` (to which it is added; another `what` has a name in it);
/// with why it changed beyond cleaning.
fn fitted(
    original: &str,
    room: usize,
    what: &str,
    taken: &mut BTreeSet<String>,
    full: &dyn Fn(&str) -> String,
) -> (String, Option<String>) {
    let cleaned = clean(original);
    let base = if cleaned.is_empty() { UNNAMED } else { cleaned.as_str() };
    let mut reasons = Vec::new();
    let mut name = if cleaned.is_empty() {
        reasons.push("its name is empty".to_owned());
        UNNAMED.to_owned()
    } else if cleaned.len() > room {
        reasons.push(format!("its name is longer than {room} characters"));
        shortened(&cleaned, original, room)
    } else {
        cleaned.clone()
    };
    if taken.contains(&full(&name)) {
        reasons.push(format!("the name {} is taken by another {what}", full(&name)));
        let mut attempt = 1_u32;
        while taken.contains(&full(&name)) {
            let seed = if attempt == 1 { original.to_owned() } else { format!("{original}#{attempt}") };
            name = shortened(base, &seed, room);
            attempt += 1;
        }
    }
    taken.insert(full(&name));
    (name, (!reasons.is_empty()).then(|| reasons.join(", and ")))
}

/// `cleaned` (ASCII) cut to fit `room` with `_` and the [`hash`] of `seed` after it.
fn shortened(cleaned: &str, seed: &str, room: usize) -> String {
    let suffix = format!("_{:08x}", hash(seed));
    // `cleaned` is ASCII, so every byte index is a character boundary.
    let keep = room.saturating_sub(suffix.len()).min(cleaned.len());
    format!("{}{suffix}", &cleaned[..keep])
}

/// FNV-1a (32 bits) of `text`: short, and the same in every run and on every machine.
pub fn hash(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5, |h: u32, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(name: &str) -> bool {
        (1..=MAX_TOOL_NAME).contains(&name.len())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn plain_names_are_cleaned_without_a_warning() {
        let parts = server_parts(&["everything", "my.srv"]);
        assert_eq!(parts[0], Named { name: "everything".into(), warning: None });
        assert_eq!(parts[1], Named { name: "my_srv".into(), warning: None });
        let names = tool_names("everything", "everything", &["echo", "get.file/x"]);
        assert_eq!(names[0], Named { name: "mcp__everything__echo".into(), warning: None });
        assert_eq!(names[1], Named { name: "mcp__everything__get_file_x".into(), warning: None });
    }

    #[test]
    fn long_empty_and_colliding_names_are_bounded_replaced_and_de_collided_with_a_warning() {
        let long = "t".repeat(300);
        let names = tool_names("bad", "bad", &[&long, "", "a.b", "a_b", "a_b"]);
        for named in &names {
            assert!(valid(&named.name), "{}", named.name);
        }
        let distinct: BTreeSet<&str> = names.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(distinct.len(), names.len());
        assert_eq!(names[0].name, format!("mcp__bad__{}_{:08x}", "t".repeat(45), hash(&long)));
        assert_eq!(names[0].name.len(), MAX_TOOL_NAME);
        assert_eq!(
            names[0].warning.as_deref(),
            Some(
                format!(
                    "agentloop: warning: MCP server `bad`: tool `{long}` is offered as {}: its name is longer than 54 characters",
                    names[0].name
                )
                .as_str()
            )
        );
        assert_eq!(
            names[1],
            Named {
                name: "mcp__bad__unnamed".into(),
                warning: Some(
                    "agentloop: warning: MCP server `bad`: tool `` is offered as mcp__bad__unnamed: its name is empty"
                        .into()
                ),
            }
        );
        // The name valid as it is keeps it; the one that cleans into it is changed.
        assert_eq!(names[3], Named { name: "mcp__bad__a_b".into(), warning: None });
        let changed = format!("mcp__bad__a_b_{:08x}", hash("a.b"));
        assert_eq!(
            names[2],
            Named {
                name: changed.clone(),
                warning: Some(format!(
                    "agentloop: warning: MCP server `bad`: tool `a.b` is offered as {changed}: the name \
                     mcp__bad__a_b is taken by another tool"
                )),
            }
        );
        // A name listed twice: the second is changed too.
        assert_eq!(names[4].name, format!("mcp__bad__a_b_{:08x}", hash("a_b")));
    }

    #[test]
    fn server_parts_are_bounded_and_distinct() {
        let long = "s".repeat(40);
        let parts = server_parts(&[&long, "", "x.y", "x_y"]);
        assert_eq!(parts[0].name, format!("{}_{:08x}", "s".repeat(15), hash(&long)));
        assert_eq!(
            parts[0].warning.as_deref(),
            Some(
                format!(
                    "agentloop: warning: MCP server `{long}`: its tools are named mcp__{}__…: its name is longer than 24 characters",
                    parts[0].name
                )
                .as_str()
            )
        );
        assert_eq!(parts[1].name, "unnamed");
        assert_eq!(parts[3], Named { name: "x_y".into(), warning: None });
        assert_eq!(parts[2].name, format!("x_y_{:08x}", hash("x.y")));
        assert_eq!(
            parts[2].warning.as_deref(),
            Some(
                format!(
                    "agentloop: warning: MCP server `x.y`: its tools are named mcp__{}__…: the name x_y is taken by another server",
                    parts[2].name
                )
                .as_str()
            )
        );
        // The longest server part still leaves room for its tools.
        let tools = tool_names(&long, &parts[0].name, &["t".repeat(100).as_str()]);
        assert!(valid(&tools[0].name), "{}", tools[0].name);
    }
}
