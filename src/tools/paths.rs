//! Path resolution for file tools: relative paths resolve against the run's working
//! directory, symlinks are resolved, and a path that leaves the working directory is refused
//! unless the permission layer allowed it for this call.

use std::path::{Component, Path, PathBuf};

use super::{ToolContext, ToolOutput};

/// Resolve `path` for a tool call.
///
/// With `must_exist`, the path itself is canonicalized (symlinks resolved); otherwise its
/// nearest existing ancestor is, and the rest is appended (for files about to be created).
///
/// # Errors
/// An error result when the path does not exist (with `must_exist`), or resolves outside the
/// working directory and `ctx.allow_outside` is false.
pub fn resolve(ctx: &ToolContext, path: &str, must_exist: bool) -> Result<PathBuf, ToolOutput> {
    if path.is_empty() {
        return Err(ToolOutput::error("The path is empty."));
    }
    let joined = if Path::new(path).is_absolute() { PathBuf::from(path) } else { ctx.cwd.join(path) };
    let resolved = if must_exist {
        joined
            .canonicalize()
            .map_err(|e| ToolOutput::error(format!("File does not exist or cannot be opened: {path} ({e})")))?
    } else {
        canonicalize_partial(&joined).map_err(|e| ToolOutput::error(format!("Cannot resolve {path}: {e}")))?
    };
    let root = ctx.cwd.canonicalize().unwrap_or_else(|_| ctx.cwd.clone());
    if !ctx.allow_outside && !resolved.starts_with(&root) {
        return Err(ToolOutput::error(format!(
            "Permission denied: {path} resolves to {} which is outside the working directory {}",
            resolved.display(),
            root.display()
        )));
    }
    Ok(resolved)
}

/// Canonicalize the longest existing prefix of `path` and append the rest, normalising `.`
/// and `..` in the part that does not exist yet.
pub(crate) fn canonicalize_partial(path: &Path) -> std::io::Result<PathBuf> {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.file_name().map(|n| n.to_owned()), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => break,
        }
    }
    let mut out = existing.canonicalize()?;
    for part in rest.iter().rev() {
        match Path::new(part).components().next() {
            Some(Component::ParentDir) => {
                out.pop();
            }
            Some(Component::CurDir) => {}
            _ => out.push(part),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_inside_and_refuses_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("a.txt"), "x").unwrap();
        let ctx = ToolContext::new(&root);
        assert_eq!(resolve(&ctx, "a.txt", true).unwrap(), root.join("a.txt"));
        assert_eq!(resolve(&ctx, "new/dir/b.txt", false).unwrap(), root.join("new/dir/b.txt"));
        assert!(resolve(&ctx, "../x.txt", false).unwrap_err().content.contains("outside the working directory"));
        assert!(resolve(&ctx, "missing.txt", true).unwrap_err().content.contains("does not exist"));
        std::os::unix::fs::symlink("/etc", root.join("etc-link")).unwrap();
        assert!(resolve(&ctx, "etc-link/hostname", false).unwrap_err().content.contains("outside"));
        let open = ToolContext { allow_outside: true, ..ToolContext::new(&root) };
        assert_eq!(resolve(&open, "../x.txt", false).unwrap(), root.parent().unwrap().join("x.txt"));
    }
}
