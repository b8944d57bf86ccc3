//! The Landlock rules of a [`Policy`]: which hierarchies get which rights. The policy's
//! paths are canonical (agentloop resolves them when it builds the policy), so nothing is
//! resolved here: this runs in the helper, once per command.
//!
//! Landlock only grants: a rule gives rights on a directory and everything below it, and
//! nothing can take a right back further down. A path the command may not read inside a
//! readable hierarchy (a `Read(…)` deny rule's `.env`) is therefore carved out: each
//! directory on the way to it keeps the rights that do not read content (listing, writing),
//! and its other entries get the content rights back one by one. What that costs is stated
//! in docs/permissions.md: names in a denied directory stay listable, and a file created in
//! a directory on the way to a denied path cannot be read back by the same command.

use std::path::{Path, PathBuf};

use super::policy::{DEVICES, Policy, Reads};

/// The rights a grant gives, in Landlock's terms but independent of the ABI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rights {
    /// Read and execute files.
    pub content: bool,
    /// List directories.
    pub list: bool,
    /// Create, write, truncate, rename and delete.
    pub write: bool,
}

impl Rights {
    /// Read and list.
    pub const READ: Rights = Rights { content: true, list: true, write: false };
    /// Everything.
    pub const ALL: Rights = Rights { content: true, list: true, write: true };

    /// Nothing.
    pub const NONE: Rights = Rights { content: false, list: false, write: false };

    fn or(self, other: Rights) -> Rights {
        Rights {
            content: self.content || other.content,
            list: self.list || other.list,
            write: self.write || other.write,
        }
    }

    fn and(self, other: Rights) -> Rights {
        Rights {
            content: self.content && other.content,
            list: self.list && other.list,
            write: self.write && other.write,
        }
    }

    fn minus(self, other: Rights) -> Rights {
        Rights {
            content: self.content && !other.content,
            list: self.list && !other.list,
            write: self.write && !other.write,
        }
    }

    fn is_empty(self) -> bool {
        !(self.content || self.list || self.write)
    }
}

/// One Landlock rule: `rights` on `path` and below.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// A directory or file.
    pub path: PathBuf,
    /// What it gives.
    pub rights: Rights,
    /// Whether `path` is a directory (file rules take file rights only).
    pub dir: bool,
}

/// The most entries a carve-out lists in one directory; past it the directory's other
/// entries do not get their rights back (the command fails closed, it never gets more).
const MAX_SIBLINGS: usize = 4096;

/// A path and the rights taken away on it and below it.
type Carve = (PathBuf, Rights);

/// The rules for `policy`, carving [`Policy::deny_read`] (content) out of every readable
/// hierarchy and, when `carve_read_only`, [`Policy::read_only`] (writes) out of the writable
/// ones. Hierarchies that do not exist are left out.
pub fn plan(policy: &Policy, carve_read_only: bool) -> Vec<Grant> {
    let mut carves: Vec<Carve> =
        policy.deny_read.iter().map(|p| (p.clone(), Rights { content: true, list: false, write: false })).collect();
    if carve_read_only {
        let write = Rights { content: false, list: false, write: true };
        carves.extend(policy.read_only.iter().filter(|p| p.exists()).map(|p| (p.clone(), write)));
    }
    let reads: Vec<PathBuf> = match &policy.read {
        Reads::Everywhere => vec![PathBuf::from("/")],
        Reads::Within(paths) => paths.clone(),
    };
    // Device files are readable only by name (DEVICES) where reads are bounded, or where a
    // deny rule is in force: a disk read as root would pass around its carve-out. (With
    // neither, the command reads every file anyway.)
    let bounded = matches!(policy.read, Reads::Within(_)) || !policy.deny_read.is_empty();
    let mut read_carves = carves.clone();
    if bounded {
        read_carves.push((PathBuf::from("/dev"), Rights { content: true, list: false, write: false }));
    }
    let mut grants = Vec::new();
    for root in reads {
        carve(&root, Rights::READ, &read_carves, &mut grants);
    }
    if bounded {
        for device in DEVICES {
            carve(Path::new(device), Rights::READ, &carves, &mut grants);
        }
    }
    for root in &policy.write {
        carve(root, Rights::ALL, &carves, &mut grants);
    }
    grants
}

/// Grant `rights` on `path` but what the `carves` take away on and below their paths.
fn carve(path: &Path, rights: Rights, carves: &[Carve], grants: &mut Vec<Grant>) {
    let Ok(meta) = std::fs::metadata(path) else { return };
    carve_known(path, meta.is_dir(), rights, carves, grants);
}

/// [`carve`] of a path known to exist, a directory or not.
fn carve_known(path: &Path, dir: bool, rights: Rights, carves: &[Carve], grants: &mut Vec<Grant>) {
    let here = carves.iter().filter(|(p, _)| path.starts_with(p)).fold(Rights::NONE, |acc, (_, r)| acc.or(*r));
    let below =
        carves.iter().filter(|(p, _)| p.starts_with(path) && p != path).fold(Rights::NONE, |acc, (_, r)| acc.or(*r));
    let effective = rights.minus(here);
    let contested = effective.and(below);
    let kept = effective.minus(contested);
    if !kept.is_empty() {
        grants.push(Grant { path: path.to_path_buf(), rights: kept, dir });
    }
    if contested.is_empty() || !dir {
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else { return };
    for entry in entries.flatten().take(MAX_SIBLINGS) {
        let Ok(kind) = entry.file_type() else { continue };
        // A symlink's target is governed by where it lies, not by this directory.
        if kind.is_symlink() {
            continue;
        }
        carve_known(&entry.path(), kind.is_dir(), contested, carves, grants);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::policy::Network;

    fn grants_for(root: &Path, deny: &[&str]) -> Vec<(String, Rights)> {
        let policy = Policy {
            read: Reads::Within(vec![root.to_path_buf()]),
            write: Vec::new(),
            deny_read: deny.iter().map(|d| root.join(d)).collect(),
            read_only: Vec::new(),
            network: Network::CLOSED,
        };
        relative(&policy, &root.canonicalize().unwrap())
    }

    /// The grants of `policy` below `root`, by path relative to it, in path order.
    fn relative(policy: &Policy, root: &Path) -> Vec<(String, Rights)> {
        let mut planned: Vec<(String, Rights)> = plan(policy, true)
            .into_iter()
            .filter(|g| g.path.starts_with(root))
            .map(|g| (g.path.strip_prefix(root).unwrap().display().to_string(), g.rights))
            .collect();
        planned.sort_by(|a, b| a.0.cmp(&b.0));
        planned
    }

    const CONTENT: Rights = Rights { content: true, list: false, write: false };
    const LIST: Rights = Rights { content: false, list: true, write: false };

    #[test]
    fn a_hierarchy_without_denied_paths_is_one_rule() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), "").unwrap();
        assert_eq!(grants_for(dir.path(), &[]), vec![(String::new(), Rights::READ)]);
    }

    #[test]
    fn a_denied_file_is_carved_out_and_its_siblings_stay_readable() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::create_dir_all(root.join("secrets")).unwrap();
        std::fs::write(root.join(".env"), "k").unwrap();
        std::fs::write(root.join("README"), "").unwrap();
        std::fs::write(root.join("secrets/key"), "k").unwrap();
        std::os::unix::fs::symlink("/etc", root.join("out")).unwrap();
        let planned = grants_for(root, &[".env", "secrets"]);
        assert_eq!(planned, vec![(String::new(), LIST), ("README".into(), CONTENT), ("src".into(), CONTENT),]);
    }

    #[test]
    fn protected_paths_lose_writes_and_keep_reads() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(root.join(".git/objects")).unwrap();
        std::fs::write(root.join("a.txt"), "").unwrap();
        let policy = Policy {
            read: Reads::Within(Vec::new()),
            write: vec![root.clone()],
            deny_read: Vec::new(),
            read_only: vec![root.join(".git/hooks"), root.join(".mcp.json")],
            network: Network::CLOSED,
        };
        let planned = relative(&policy, &root);
        const WRITE: Rights = Rights { content: false, list: false, write: true };
        assert_eq!(
            planned,
            vec![(String::new(), Rights::READ), (".git/objects".into(), WRITE), ("a.txt".into(), WRITE),]
        );
        // Without the carve (a mount namespace protects them), one rule.
        assert_eq!(plan(&policy, false).iter().filter(|g| g.path.starts_with(&root)).count(), 1);
    }

    #[test]
    fn without_bounds_everything_is_one_rule() {
        let policy = Policy {
            read: Reads::Everywhere,
            write: Vec::new(),
            deny_read: Vec::new(),
            read_only: Vec::new(),
            network: Network::CLOSED,
        };
        assert_eq!(plan(&policy, false), vec![Grant { path: PathBuf::from("/"), rights: Rights::READ, dir: true }]);
    }

    #[test]
    fn devices_are_readable_by_name_only_once_a_deny_rule_is_in_force() {
        let policy = Policy {
            read: Reads::Everywhere,
            write: Vec::new(),
            deny_read: vec![PathBuf::from("/nonexistent/secret")],
            read_only: Vec::new(),
            network: Network::CLOSED,
        };
        let planned = plan(&policy, false);
        let at = |p: &str| planned.iter().find(|g| g.path == Path::new(p)).map(|g| g.rights);
        assert_eq!(at("/"), Some(LIST), "the root keeps listing; its entries get content one by one");
        assert_eq!(at("/usr"), Some(CONTENT));
        assert_eq!(at("/dev"), None);
        assert_eq!(at("/dev/null"), Some(Rights::READ));
        assert!(!planned.iter().any(|g| g.path.starts_with("/dev/")
            && g.path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("sd") || n == "mem")));
    }

    #[test]
    fn a_root_inside_a_denied_tree_gets_no_content() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("w")).unwrap();
        let policy = Policy {
            read: Reads::Within(vec![dir.path().join("w")]),
            write: Vec::new(),
            deny_read: vec![dir.path().to_path_buf()],
            read_only: Vec::new(),
            network: Network::CLOSED,
        };
        let root = dir.path().canonicalize().unwrap();
        let planned: Vec<Grant> = plan(&policy, true).into_iter().filter(|g| g.path.starts_with(&root)).collect();
        assert_eq!(planned.len(), 1);
        assert_eq!(planned[0].rights, LIST);
    }

    #[test]
    fn a_deep_denial_carves_each_level_on_the_way() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/secret"), "").unwrap();
        std::fs::write(root.join("a/b/open"), "").unwrap();
        std::fs::write(root.join("a/x"), "").unwrap();
        let planned = grants_for(root, &["a/b/secret"]);
        assert_eq!(planned, vec![(String::new(), LIST), ("a/b/open".into(), CONTENT), ("a/x".into(), CONTENT),]);
    }
}
