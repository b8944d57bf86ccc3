//! What one sandboxed command may do: the file-system, network and process bounds that the
//! helper ([`super::helper`]) applies before it runs the command. A policy is plain data,
//! built by agentloop for each call and handed to the helper as JSON on its command line.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The bounds of one command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// What the command may read (and execute).
    pub read: Reads,
    /// Hierarchies (directories or single files) the command may create, change and delete
    /// files in. They are readable too.
    pub write: Vec<PathBuf>,
    /// Paths whose content the command may not read or execute, wherever they lie: the
    /// concrete paths of the `Read(…)` deny rules.
    pub deny_read: Vec<PathBuf>,
    /// Paths inside `write` that stay read-only (`.git/hooks`, `.claude`, …). The helper
    /// makes those that exist read-only with a bind mount in a mount namespace of the
    /// command's own, when it can make one ([`crate::sandbox::helper`]).
    pub read_only: Vec<PathBuf>,
    /// What the command may reach over the network.
    pub network: Network,
}

/// What a command may read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reads {
    /// Every file the user can read, but [`Policy::deny_read`].
    Everywhere,
    /// Only these hierarchies (and [`Policy::write`]), but [`Policy::deny_read`].
    Within(Vec<PathBuf>),
}

/// Network access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Network {
    /// Any socket, any address.
    Open,
    /// No Internet sockets.
    Closed {
        /// Unix-domain sockets may be created (`socketpair` always may).
        unix_sockets: bool,
        /// TCP sockets may be created and bound to a port, but connect nowhere.
        local_binding: bool,
    },
}

impl Network {
    /// No network at all but socket pairs.
    pub const CLOSED: Network = Network::Closed { unix_sockets: false, local_binding: false };

    /// Whether this is [`Network::Open`].
    pub fn is_open(self) -> bool {
        matches!(self, Network::Open)
    }
}

/// System locations every program needs to start and run: its binaries, libraries, locale
/// and time zone data, `/proc` and `/sys`. `/dev` is not among them: [`DEVICES`].
pub const SYSTEM_READ: &[&str] =
    &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/proc", "/sys"];

/// The device files a command may read (in every policy): the null, zero and random
/// devices. No disk, terminal or memory device: a block device read as root would pass
/// around every file rule. (`/dev/fd/N` and `/dev/stdin` lead through `/proc` to the
/// command's own descriptors, which need no rule.)
pub const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"];

/// Files in `/etc` that programs read to run (the loader's cache, locale, time zone,
/// `file`'s magic, git's system config). The rest of `/etc` stays unreadable to read-only
/// commands, the user database included (`ls -l` shows numeric owners there).
pub const SYSTEM_ETC: &[&str] = &[
    "/etc/nsswitch.conf",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ld.so.preload",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/locale.alias",
    "/etc/locale.conf",
    "/etc/default/locale",
    "/etc/alternatives",
    "/etc/magic",
    "/etc/magic.mime",
    "/etc/mime.types",
    "/etc/gitconfig",
    "/etc/gitattributes",
    "/etc/terminfo",
    "/etc/inputrc",
    "/etc/os-release",
];

/// Where a writing command may also write besides the working directory: the null device
/// and POSIX shared memory (Python's multiprocessing locks).
pub const SYSTEM_WRITE: &[&str] = &["/dev/null", "/dev/shm"];

/// Paths of the working directory that no sandboxed command may change: git's hooks and
/// configuration (they run programs later), and agentloop's and Claude Code's own settings
/// and MCP configuration.
pub const PROTECTED: &[&str] = &[".git/hooks", ".git/config", ".claude", ".agentloop", ".mcp.json"];

impl Policy {
    /// The policy of a call approved only because it was proven read-only: it reads `cwd`,
    /// the `extra` readable hierarchies and the system, writes nothing but `/dev/null`, and
    /// has no network.
    pub fn read_only(cwd: &Path, extra: &[PathBuf], deny_read: Vec<PathBuf>) -> Policy {
        let mut within: Vec<PathBuf> = system_reads().to_vec();
        within.push(canonical(cwd));
        within.extend(extra.iter().map(|p| canonical(p)));
        Policy {
            read: Reads::Within(within),
            write: vec![PathBuf::from("/dev/null")],
            deny_read: deny_read.iter().map(|p| canonical(p)).collect(),
            read_only: Vec::new(),
            network: Network::CLOSED,
        }
    }

    /// The policy of a call a rule allowed or a person approved: it reads everything but
    /// `deny_read`, writes in `cwd` and `temp` but the `PROTECTED` paths, and reaches the
    /// network as `network` says.
    pub fn writing(cwd: &Path, temp: &Path, deny_read: Vec<PathBuf>, network: Network) -> Policy {
        let cwd = canonical(cwd);
        let mut write: Vec<PathBuf> = vec![cwd.clone(), canonical(temp)];
        write.extend(SYSTEM_WRITE.iter().map(PathBuf::from));
        Policy {
            read: Reads::Everywhere,
            write,
            deny_read: deny_read.iter().map(|p| canonical(p)).collect(),
            read_only: PROTECTED.iter().map(|p| cwd.join(p)).collect(),
            network,
        }
    }
}

/// `path` with its symlinks resolved where it exists: the helper compares and opens the
/// policy's paths as they are, once per command, so agentloop resolves them.
fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// What every read-only command reads besides its working directory (system locations,
/// `/etc` files, program directories, the user's git configuration), resolved once.
fn system_reads() -> &'static [PathBuf] {
    static READS: std::sync::OnceLock<Vec<PathBuf>> = std::sync::OnceLock::new();
    READS.get_or_init(|| {
        let mut reads: Vec<PathBuf> = SYSTEM_READ.iter().chain(SYSTEM_ETC).map(PathBuf::from).collect();
        reads.extend(program_dirs());
        reads.extend(user_git_config());
        let mut resolved: Vec<PathBuf> = reads.iter().filter(|p| p.exists()).map(|p| canonical(p)).collect();
        resolved.sort();
        resolved.dedup();
        // One rule covers a hierarchy: `/usr/bin` (where `/bin` leads) goes with `/usr`.
        let covered = |p: &PathBuf| resolved.iter().any(|q| q != p && p.starts_with(q));
        resolved.iter().filter(|p| !covered(p)).cloned().collect()
    })
}

/// The user's own git configuration, which git refuses to run without when it exists but
/// cannot be read: `~/.gitconfig` and git's files under `$XDG_CONFIG_HOME/git` (or
/// `~/.config/git`).
fn user_git_config() -> Vec<PathBuf> {
    let Some(home) = std::env::var_os("HOME").map(PathBuf::from) else { return Vec::new() };
    let xdg = std::env::var_os("XDG_CONFIG_HOME").map_or_else(|| home.join(".config"), PathBuf::from);
    let git = xdg.join("git");
    vec![home.join(".gitconfig"), git.join("config"), git.join("ignore"), git.join("attributes")]
}

/// The directories of `PATH` that hold programs (not `/`, not the home directory or one of
/// its ancestors, not relative entries), so a read-only command finds `rg` in
/// `~/.cargo/bin` without the home directory becoming readable.
fn program_dirs() -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let Some(path) = std::env::var_os("PATH") else { return Vec::new() };
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute() && dir.components().count() > 1)
        .filter(|dir| home.as_ref().is_none_or(|home| !home.starts_with(dir)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_travels_as_json_unchanged() {
        let policy = Policy::writing(
            Path::new("/w"),
            Path::new("/t"),
            vec![PathBuf::from("/w/.env")],
            Network::Closed { unix_sockets: true, local_binding: false },
        );
        let json = serde_json::to_string(&policy).unwrap();
        assert_eq!(serde_json::from_str::<Policy>(&json).unwrap(), policy);
        assert!(json.contains(r#""network":{"closed":{"unix_sockets":true,"local_binding":false}}"#), "{json}");
    }

    #[test]
    fn read_only_writes_only_the_null_device() {
        let policy = Policy::read_only(Path::new("/w"), &[PathBuf::from("/spill")], Vec::new());
        assert_eq!(policy.write, vec![PathBuf::from("/dev/null")]);
        assert_eq!(policy.network, Network::CLOSED);
        let Reads::Within(within) = &policy.read else { panic!("reads are bounded") };
        for p in ["/w", "/spill", "/usr"] {
            assert!(within.contains(&PathBuf::from(p)), "{p} readable");
        }
        for p in ["/etc", "/etc/passwd", "/dev"] {
            assert!(!within.contains(&PathBuf::from(p)), "{p} not readable");
        }
        assert!(!within.iter().any(|p| p == Path::new("/")));
    }

    #[test]
    fn writing_protects_git_hooks_and_settings_inside_the_working_directory() {
        let policy = Policy::writing(Path::new("/w"), Path::new("/t"), Vec::new(), Network::CLOSED);
        assert_eq!(policy.write[..2], [PathBuf::from("/w"), PathBuf::from("/t")]);
        for p in ["/w/.git/hooks", "/w/.git/config", "/w/.claude", "/w/.mcp.json"] {
            assert!(policy.read_only.contains(&PathBuf::from(p)), "{p} protected");
        }
    }
}
