//! A small source tree for the search tools' tests: nested directories, a `.gitignore`d
//! directory and file, hidden files, a binary file, several languages, and fixed modification
//! times so that "newest first" orders are exact.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// Files of the tree: path, contents, modification time in seconds after 2001-09-09.
pub const FILES: &[(&str, &[u8], u64)] = &[
    (".gitignore", b"target/\n*.log\n", 1),
    (".hidden.rs", b"fn hidden() {} // TODO\n", 2),
    (".config/settings.rs", b"// TODO hidden dir\n", 3),
    ("README.md", b"# Demo\nA todo list\n", 4),
    ("src/main.rs", b"fn main() {\n    println!(\"hello\");\n    // TODO: greet\n}\n", 8),
    ("src/lib.rs", b"pub mod util;\n\npub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n", 6),
    ("src/util/mod.rs", b"// TODO: more helpers\npub fn helper() -> &'static str {\n    \"Helper\"\n}\n", 7),
    ("web/app.js", b"function main() {\n  return 1; // TODO\n}\n", 5),
    ("web/app.ts", b"const x: number = 1;\n", 9),
    ("scripts/build.py", b"def main():\n    print('TODO')\n", 10),
    ("target/debug/out.rs", b"fn generated() {} // TODO\n", 11),
    ("debug.log", b"TODO in a log\n", 12),
    ("assets/logo.bin", b"TODO\0\x01\x02binary TODO\n", 13),
];

/// The tree written into a fresh temporary directory; the path is canonical.
pub fn tree() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for (path, contents, secs) in FILES {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, contents).unwrap();
        let when = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000 + secs);
        std::fs::File::options().write(true).open(&p).unwrap().set_modified(when).unwrap();
    }
    (dir, root)
}
