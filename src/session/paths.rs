//! Where sessions live: `$AGENTLOOP_HOME` (default `~/.agentloop`) and the project slug.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The environment variable naming the store's root directory.
pub const HOME_VAR: &str = "AGENTLOOP_HOME";

/// The root directory given the values of `AGENTLOOP_HOME` and `HOME`: the first when set
/// and non-empty, else `$HOME/.agentloop`, else `None`.
pub fn home_from(agentloop_home: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
    match agentloop_home.filter(|v| !v.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => home.filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".agentloop")),
    }
}

/// The directory name of a working directory's sessions: every character of the path that is
/// not an ASCII letter or digit becomes `-`, as Claude Code names its `projects/` entries
/// (`/home/user/project` → `-home-user-project`). Like Claude Code's JavaScript, a character
/// outside the Basic Multilingual Plane counts as two (two UTF-16 units, two dashes); bytes
/// that are not UTF-8 count as one character each.
pub fn slug(cwd: &Path) -> String {
    let text = cwd.to_string_lossy();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else {
            for _ in 0..c.len_utf16() {
                out.push('-');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_like_claude_code() {
        assert_eq!(slug(Path::new("/home/user/project")), "-home-user-project");
        assert_eq!(slug(Path::new("/home/user/my.project_x")), "-home-user-my-project-x");
        assert_eq!(slug(Path::new("/tmp/été 🦀")), "-tmp--t----");
    }

    #[test]
    fn home_prefers_agentloop_home_then_home() {
        let os = |s: &str| Some(OsString::from(s));
        assert_eq!(home_from(os("/srv/al"), os("/home/u")), Some(PathBuf::from("/srv/al")));
        assert_eq!(home_from(os(""), os("/home/u")), Some(PathBuf::from("/home/u/.agentloop")));
        assert_eq!(home_from(None, os("/home/u")), Some(PathBuf::from("/home/u/.agentloop")));
        assert_eq!(home_from(None, None), None);
        assert_eq!(home_from(None, os("")), None);
    }
}
