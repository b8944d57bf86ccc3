//! Applying a [`Policy`]'s file-system and network bounds with Landlock, to the calling
//! process (the helper's child, just before it runs the command).
//!
//! Every file-system right of the kernel's ABI is handled, so whatever a rule does not grant
//! is refused. Character and block devices are never created. Landlock also scopes signals
//! and abstract Unix sockets (ABI 6) to the sandbox, and refuses `ptrace` and
//! `/proc/<pid>/{mem,environ}` of any process outside it: agentloop's own process files stay
//! closed to the command.

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope,
};

use super::grants::{Grant, Rights, plan};
use super::policy::{Network, Policy};

/// The newest ABI this code knows; the kernel's own decides what is enforced.
const TARGET: ABI = ABI::V6;

/// Why the bounds could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum LandlockError {
    /// The kernel refused a step.
    #[error("landlock: {0}")]
    Ruleset(#[from] landlock::RulesetError),
    /// The kernel enforces less than the policy needs.
    #[error("landlock is {0}: the kernel cannot enforce the sandbox")]
    NotEnforced(&'static str),
}

/// Restrict the calling thread (and what it executes) to `policy`; `carve_read_only` when
/// the protected paths were not already made read-only by a mount namespace.
///
/// # Errors
/// [`LandlockError`] when the kernel has no Landlock or refuses the ruleset: the caller must
/// not run the command then.
pub fn restrict(policy: &Policy, carve_read_only: bool) -> Result<(), LandlockError> {
    let abi = TARGET;
    let handled = AccessFs::from_all(abi);
    let mut ruleset = Ruleset::default().set_compatibility(CompatLevel::BestEffort).handle_access(handled)?;
    if let Network::Closed { .. } = policy.network {
        ruleset = ruleset.handle_access(AccessNet::ConnectTcp)?;
        if !matches!(policy.network, Network::Closed { local_binding: true, .. }) {
            ruleset = ruleset.handle_access(AccessNet::BindTcp)?;
        }
    }
    ruleset = ruleset.scope(Scope::AbstractUnixSocket | Scope::Signal)?;
    let mut created = ruleset.create()?;
    for Grant { path, rights, dir } in plan(policy, carve_read_only) {
        let Ok(fd) = PathFd::new(&path) else { continue };
        let access = access_of(rights, abi, dir);
        if access.is_empty() {
            continue;
        }
        created = created.add_rule(PathBeneath::new(fd, access))?;
    }
    let status = created.restrict_self()?;
    match status.ruleset {
        RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced => Ok(()),
        RulesetStatus::NotEnforced => Err(LandlockError::NotEnforced("not enforced")),
    }
}

/// Landlock's access bits for `rights` on a directory or a file.
fn access_of(rights: Rights, abi: ABI, dir: bool) -> BitFlags<AccessFs> {
    let mut access = BitFlags::empty();
    if rights.content {
        access |= AccessFs::ReadFile | AccessFs::Execute;
    }
    if rights.list {
        access |= AccessFs::ReadDir;
    }
    if rights.write {
        access |= AccessFs::from_write(abi) & !(AccessFs::MakeChar | AccessFs::MakeBlock);
        access |= AccessFs::ReadDir;
    }
    if dir { access } else { access & AccessFs::from_file(abi) }
}

/// The Landlock ABI the running kernel offers: 0 without Landlock.
pub fn kernel_abi() -> i32 {
    // SAFETY: landlock_create_ruleset with a null attribute, size 0 and the VERSION flag
    // only returns the ABI number; it reads and writes no memory.
    let abi = unsafe {
        libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32 /* VERSION */)
    };
    i32::try_from(abi).unwrap_or(0).max(0)
}
