//! Bash command lines as a coding agent writes them, generated deterministically: git, cargo,
//! npm, python and make invocations, file viewing and searching, with the shell around them
//! (pipelines, `&&` chains, `for` loops, `$(…)`, `bash -c`, here-documents, `VAR=1` and
//! `timeout` prefixes, quoted arguments with spaces). File names, numbers and options vary, so
//! few lines repeat.

use super::Rng;

/// One generated command line.
pub struct CommandLine {
    /// The line, as the `command` of a Bash call.
    pub text: String,
    /// Whether it holds more than one simple command (a pipeline, a list, a loop, an `if`, a
    /// subshell or a `$(…)`), as opposed to one command, possibly behind `bash -c`, `timeout`,
    /// a variable assignment or with a here-document.
    pub compound: bool,
}

/// The shortest and longest line generated, in bytes.
pub const MIN_LEN: usize = 10;
/// See [`MIN_LEN`].
pub const MAX_LEN: usize = 300;

/// `count` command lines from `seed` (non-zero); about 40% of them compound, 10 to 300 bytes.
pub fn command_lines(seed: u64, count: usize) -> Vec<CommandLine> {
    let mut g = Gen(Rng(seed));
    let mut lines = Vec::with_capacity(count);
    while lines.len() < count {
        let compound = g.chance(40);
        let text = if compound { g.compound() } else { g.simple() };
        if (MIN_LEN..=MAX_LEN).contains(&text.len()) {
            lines.push(CommandLine { text, compound });
        }
    }
    lines
}

const MODULES: &[&str] = &[
    "main",
    "lib",
    "config",
    "parser",
    "engine",
    "session",
    "tools",
    "bash",
    "permissions",
    "util",
    "error",
    "client",
    "stream",
    "render",
    "cache",
    "auth",
    "model",
    "protocol",
    "walk",
    "read",
];
const DIRS: &[&str] = &[
    "src",
    "src/engine",
    "src/tools",
    "tests",
    "benches",
    "docs",
    "web/src",
    "app/components",
    "scripts",
    "crates/core",
];
const CRATES: &[&str] = &["foo", "core", "cli", "engine", "parser-utils", "agentloop", "server", "proto"];
const WORDS: &[&str] = &[
    "TODO",
    "FIXME",
    "unwrap()",
    "fn main",
    "impl Display",
    "async fn",
    "pub struct",
    "deprecated",
    "panic!",
    "timeout",
    "retry",
    "Config",
    "parse_args",
    "HashMap",
    "println!",
    "use std::",
    "error",
    "warning",
    "test_",
    "#[derive",
];
const MESSAGES: &[&str] = &[
    "Fix off-by-one in the parser",
    "Add retry with backoff to the client",
    "Handle empty input in config loader",
    "Refactor session state into its own module",
    "Update dependencies",
    "Make the walker skip ignored files",
    "wip",
];
const BRANCHES: &[&str] = &["main", "master", "develop", "feature/retry", "fix/parser-eof", "origin/main"];
const NPM_SCRIPTS: &[&str] = &["build", "test", "lint", "dev", "typecheck", "format", "test:unit", "build:prod"];
const PACKAGES: &[&str] = &["lodash", "zod", "vitest", "@types/node", "typescript", "eslint", "react", "axios"];
const PY_PACKAGES: &[&str] = &["requests", "pytest", "numpy", "pydantic", "black", "ruff"];

struct Gen(Rng);

impl Gen {
    fn below(&mut self, n: usize) -> usize {
        self.0.below(n as u64) as usize
    }

    /// True `percent` times in a hundred.
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }

    fn num(&mut self, low: usize, high: usize) -> usize {
        low + self.below(high - low + 1)
    }

    fn module(&mut self) -> &'static str {
        self.pick(MODULES)
    }

    fn dir(&mut self) -> &'static str {
        self.pick(DIRS)
    }

    /// A source file in the project.
    fn file(&mut self) -> String {
        match self.below(10) {
            0..=4 => {
                format!("{}/{}.rs", self.pick(&["src", "src/engine", "src/tools", "crates/core/src"]), self.module())
            }
            5 => format!("tests/test_{}.py", self.module()),
            6 => format!("web/src/{}.ts", self.module()),
            7 => format!("app/components/{}View.tsx", capitalised(self.module())),
            8 => {
                self.pick(&["Cargo.toml", "package.json", "README.md", "Makefile", "pyproject.toml", ".env"]).to_owned()
            }
            _ => format!("docs/{}.md", self.module()),
        }
    }

    /// A file name with a space in it, quoted.
    fn spaced_file(&mut self) -> String {
        let name = self.pick(&["release notes.md", "My Report.txt", "design doc v2.md", "old tests/fixture 1.json"]);
        if self.chance(50) { format!("\"{name}\"") } else { format!("'{name}'") }
    }

    fn word(&mut self) -> &'static str {
        self.pick(WORDS)
    }

    fn git(&mut self) -> String {
        match self.below(16) {
            0 | 1 => {
                let path = if self.chance(30) { format!(" -- {}", self.dir()) } else { String::new() };
                format!("git status{}{path}", self.pick(&["", "", " --short", " -sb", " --porcelain"]))
            }
            2 | 3 => {
                let what = self.pick(&["", " --stat", " --cached", " --name-only", " -U1"]);
                let rev = match self.below(4) {
                    0 => format!(" HEAD~{}", self.num(1, 5)),
                    1 => format!(" {}...HEAD", self.pick(BRANCHES)),
                    _ => String::new(),
                };
                let path = if self.chance(30) { format!(" -- {}", self.file()) } else { String::new() };
                format!("git diff{what}{rev}{path}")
            }
            4 | 5 => match self.below(3) {
                0 => format!("git log --oneline -{}", self.num(5, 50)),
                1 => format!("git log -p -{} -- {}", self.num(1, 5), self.file()),
                _ => format!("git log --format='%h %an %s' --since=\"{} days ago\"", self.num(1, 30)),
            },
            6 => format!("git show HEAD~{} --stat", self.num(0, 9)),
            7 => format!("git show {}:{}", self.pick(BRANCHES), self.file()),
            8 => format!("git add {}", if self.chance(30) { "-A".to_owned() } else { self.file() }),
            9 => format!("git commit -m \"{}\"", self.pick(MESSAGES)),
            10 => format!("git checkout -b fix/{}-{}", self.module(), self.num(1, 999)),
            11 => self
                .pick(&["git branch -a", "git stash", "git stash pop", "git fetch origin", "git remote -v"])
                .to_owned(),
            12 => format!("git push origin {}", self.pick(BRANCHES)),
            13 => format!("git blame -L {},+{} {}", self.num(1, 400), self.num(5, 40), self.file()),
            14 => format!("git grep -n '{}'", self.word()),
            _ => format!("git rev-parse {}", self.pick(&["HEAD", "--show-toplevel", "--abbrev-ref HEAD"])),
        }
    }

    /// A git command worth piping into a filter.
    fn git_that_prints(&mut self) -> String {
        loop {
            let git = self.git();
            if ["git diff", "git log", "git show", "git blame", "git grep"].iter().any(|p| git.starts_with(p)) {
                return git;
            }
        }
    }

    fn cargo(&mut self) -> String {
        match self.below(8) {
            0..=2 => {
                let package = if self.chance(40) { format!(" -p {}", self.pick(CRATES)) } else { String::new() };
                let filter =
                    if self.chance(50) { format!(" {}_{}", self.module(), self.word_ident()) } else { String::new() };
                let tail = self.pick(&["", "", " -- --nocapture", " -- --test-threads=1", " --release"]);
                format!("cargo test{package}{filter}{tail}")
            }
            3 => format!("cargo build{}", self.pick(&["", " --release", " --all-targets", " --features full"])),
            4 => {
                let package = if self.chance(40) { format!(" -p {}", self.pick(CRATES)) } else { String::new() };
                let what = self.pick(&[" --all-targets", " --all-targets --all-features", " --tests", ""]);
                format!("cargo clippy{package}{what} -- -D warnings")
            }
            5 => format!("cargo {}", self.pick(&["fmt", "fmt --check", "check", "check --tests", "doc --no-deps"])),
            6 => format!("cargo run --example {} -- --input {}", self.module(), self.file()),
            _ => format!(
                "cargo add {}@{}.{}",
                self.pick(&["serde", "anyhow", "regex", "tokio"]),
                self.num(0, 1),
                self.num(0, 40)
            ),
        }
    }

    fn word_ident(&mut self) -> &'static str {
        self.pick(&["parses", "rejects_empty", "roundtrip", "handles_eof", "retries", "works"])
    }

    fn npm(&mut self) -> String {
        match self.below(6) {
            0 | 1 => format!("npm run {}", self.pick(NPM_SCRIPTS)),
            2 => match self.below(3) {
                0 => "npm test".to_owned(),
                1 => format!("npm test -- --watch=false --testNamePattern=\"{}\"", self.word_ident()),
                _ => format!("npm test -- web/src/{}.test.ts", self.module()),
            },
            3 => format!("npm install {}{}", if self.chance(50) { "--save-dev " } else { "" }, self.pick(PACKAGES)),
            4 => format!(
                "npx {}",
                self.pick(&["tsc --noEmit", "eslint . --fix", "prettier --check web/src", "vitest run"])
            ),
            _ => format!("node scripts/{}.js --verbose", self.module()),
        }
    }

    fn python(&mut self) -> String {
        match self.below(4) {
            0 | 1 => {
                let k = if self.chance(40) { format!(" -k {}", self.word_ident()) } else { String::new() };
                format!("python3 -m pytest tests/test_{}.py -q{k}", self.module())
            }
            2 => format!("pip install {}", self.pick(PY_PACKAGES)),
            _ => format!("python3 scripts/{}.py --limit {}", self.module(), self.num(1, 1000)),
        }
    }

    fn view(&mut self) -> String {
        match self.below(9) {
            0 | 1 => format!("ls {}{}", self.pick(&["-la ", "-l ", "", "-1 "]), self.dir()),
            2 => format!("cat {}", self.file()),
            3 => format!("head -n {} {}", self.num(10, 200), self.file()),
            4 => format!("tail -{} {}", self.num(10, 100), self.file()),
            5 => format!("wc -l {} {}", self.file(), self.file()),
            6 => {
                let start = self.num(1, 500);
                format!("sed -n '{start},{}p' {}", start + self.num(10, 80), self.file())
            }
            7 => format!("cat {}", self.spaced_file()),
            _ => format!("tree -L {} {}", self.num(1, 3), self.dir()),
        }
    }

    fn search(&mut self) -> String {
        match self.below(6) {
            0 | 1 => {
                format!("grep -rn \"{}\" {} --include=*.{}", self.word(), self.dir(), self.pick(&["rs", "ts", "py"]))
            }
            2 => format!("rg -n '{}' {}", self.word(), self.dir()),
            3 => format!("rg -l \"{}\" -t {}", self.word(), self.pick(&["rust", "ts", "py"])),
            4 => format!(
                "find {} -name '*.{}' -type f",
                self.pick(&[".", "src", "tests"]),
                self.pick(&["rs", "ts", "py", "md"])
            ),
            _ => format!("grep -c '{}' {}", self.word(), self.file()),
        }
    }

    fn change(&mut self) -> String {
        match self.below(9) {
            0 => format!("mkdir -p {}/{}", self.dir(), self.module()),
            1 => format!("touch {}", self.file()),
            2 => format!("cp {} {}.bak", self.file(), self.module()),
            3 => format!("mv {} {}/{}.rs", self.file(), self.dir(), self.module()),
            4 => format!("rm -rf {}", self.pick(&["target", "node_modules", "build", "dist", "/tmp/agent-scratch"])),
            5 => format!("rm {}", self.file()),
            6 => format!("sed -i 's/{}/{}_v2/g' {}", self.module(), self.module(), self.file()),
            7 => format!("chmod +x scripts/{}.sh", self.module()),
            _ => format!(
                "echo \"{}\" >> {}",
                self.pick(MESSAGES),
                self.pick(&["NOTES.md", "CHANGELOG.md", "/tmp/log.txt"])
            ),
        }
    }

    fn misc(&mut self) -> String {
        match self.below(10) {
            0 => format!(
                "echo \"{}\"",
                self.pick(&["$HOME", "$PATH", "done: $?", "build ok", "${CARGO_TARGET_DIR:-target}"])
            ),
            1 => {
                self.pick(&["uname -a", "which cargo", "node --version", "printenv PATH", "rustc --version"]).to_owned()
            }
            2 => format!("make{}", self.pick(&["", " test", " -j4", " clean", " install PREFIX=/tmp/inst"])),
            3 => format!("curl -sSL https://example.com/api/v{}/status", self.num(1, 3)),
            4 => {
                format!("docker {}", self.pick(&["ps -a", "build -t app:dev .", "compose up -d", "logs --tail 50 web"]))
            }
            5 => format!("go test ./{}/...", self.pick(&["pkg", "internal", "cmd"])),
            6 => format!("jq '.{}' {}", self.pick(&["version", "scripts", "dependencies | keys"]), "package.json"),
            7 => format!("diff -u {} {}", self.file(), self.file()),
            8 => format!("du -sh {}", self.pick(&["target", "node_modules", ".git", "build"])),
            _ => format!("sleep {}", self.num(1, 5)),
        }
    }

    /// One command, without shell structure.
    fn plain(&mut self) -> String {
        match self.below(20) {
            0..=4 => self.git(),
            5..=7 => self.cargo(),
            8 | 9 => self.npm(),
            10 => self.python(),
            11..=13 => self.view(),
            14 | 15 => self.search(),
            16 | 17 => self.change(),
            _ => self.misc(),
        }
    }

    /// One command, sometimes behind a wrapper or an assignment, or with a here-document.
    fn simple(&mut self) -> String {
        match self.below(20) {
            0 => format!("timeout {} {}", self.pick(&["30", "60", "120", "300s", "10m"]), self.plain()),
            1 => {
                let var = self.pick(&["FOO=1", "RUST_BACKTRACE=1", "NODE_ENV=test", "CI=true", "RUST_LOG=debug"]);
                format!("{var} {}", self.plain())
            }
            2 => self.bash_c(),
            3 => self.here_doc(),
            _ => self.plain(),
        }
    }

    /// `bash -c` or `sh -c` around a command, in whichever quotes it does not use.
    fn bash_c(&mut self) -> String {
        let shell = self.pick(&["bash -c", "bash -c", "sh -c", "bash -lc"]);
        let inner = match self.below(4) {
            0 => self.view(),
            1 => self.git(),
            2 => format!("cd {} && {}", self.dir(), self.plain()),
            _ => self.plain(),
        };
        if !inner.contains('\'') {
            format!("{shell} '{inner}'")
        } else if !inner.contains(['"', '$', '`', '\\']) {
            format!("{shell} \"{inner}\"")
        } else {
            format!("{shell} 'ls -la {}'", self.dir())
        }
    }

    fn here_doc(&mut self) -> String {
        let body_lines = self.num(1, 6);
        match self.below(3) {
            0 => {
                let mut body = format!("// {} ({})\n", self.pick(MESSAGES), self.module());
                for _ in 0..body_lines {
                    body.push_str(&format!(
                        "pub fn {}_{}() -> u32 {{ {} }}\n",
                        self.module(),
                        self.num(0, 99),
                        self.num(0, 9999)
                    ));
                }
                format!("cat > src/{}_{}.rs <<'EOF'\n{body}EOF", self.module(), self.num(1, 99))
            }
            1 => {
                let mut body = format!("import json\nwith open('{}') as f:\n    text = f.read()\n", self.file());
                for _ in 0..body_lines.min(3) {
                    body.push_str(&format!("print(text.count('{}'))\n", self.word()));
                }
                format!("python3 - <<'EOF'\n{body}EOF")
            }
            _ => {
                let mut body = format!("{}\n\n", self.pick(MESSAGES));
                for _ in 0..body_lines.min(4) {
                    body.push_str(&format!("- {} in {}\n", self.pick(MESSAGES), self.file()));
                }
                format!("git commit -F - <<EOF\n{body}Refs #{}\nEOF", self.num(1, 400))
            }
        }
    }

    /// A filter at the end of a pipeline.
    fn filter(&mut self) -> String {
        match self.below(9) {
            0 | 1 => format!("head -{}", self.num(5, 100)),
            2 | 3 => format!("tail -{}", self.num(5, 100)),
            4 => format!("grep {}", if self.chance(50) { "-v warning" } else { "-i error" }),
            5 => "wc -l".to_owned(),
            6 => "sort | uniq -c | sort -rn".to_owned(),
            7 => format!("cut -d: -f{} | sort -u", self.num(1, 3)),
            _ => format!("grep -n \"{}\"", self.word()),
        }
    }

    /// A command, or a command piped into a filter.
    fn stage(&mut self) -> String {
        if !self.chance(25) {
            return self.plain();
        }
        let first = match self.below(4) {
            0 => self.view(),
            1 => self.search(),
            2 => self.cargo(),
            _ => self.git_that_prints(),
        };
        format!("{first} | {}", self.filter())
    }

    fn compound(&mut self) -> String {
        match self.below(20) {
            // Output cut short: `cmd 2>&1 | tail -20`.
            0..=3 => {
                let cmd = match self.below(4) {
                    0 => self.cargo(),
                    1 => self.npm(),
                    2 => self.python(),
                    _ => format!("make {}", self.pick(&["test", "all", "-j2", "check V=1"])),
                };
                let redirect = if self.chance(60) { " 2>&1" } else { "" };
                format!("{cmd}{redirect} | {}", self.filter())
            }
            // Viewing and searching piped into filters.
            4..=6 => {
                let first = if self.chance(50) { self.view() } else { self.search() };
                let mut line = format!("{first} | {}", self.filter());
                if self.chance(30) {
                    line = format!("{line} | {}", self.filter());
                }
                line
            }
            7 => format!(
                "find {} -name '*.{}' -type f | xargs {} | sort -n | tail -{}",
                self.pick(&[".", "src", "tests", "web/src"]),
                self.pick(&["rs", "ts", "py"]),
                self.pick(&["wc -l", "grep -l TODO", "ls -la"]),
                self.num(5, 30)
            ),
            // A chain of two to six commands, some of them pipelines.
            8..=11 => {
                let n = if self.chance(80) { self.num(2, 3) } else { self.num(4, 6) };
                let mut line = self.stage();
                for _ in 1..n {
                    let sep = self.pick(&[" && ", " && ", " && ", "; ", " || "]);
                    line = format!("{line}{sep}{}", self.stage());
                }
                line
            }
            12 => {
                let dir = self.pick(&["sub", "web", "crates/core", "build", "app", "docs", "scripts"]);
                let then = match self.below(3) {
                    0 => self.pick(&["make test", "npm run build", "ls -la", "git status"]).to_owned(),
                    1 => self.cargo(),
                    _ => self.npm(),
                };
                format!("cd {dir} && {then}")
            }
            13 => format!(
                "mkdir -p {build} && cd {build} && cmake ..{} && make -j{}",
                self.pick(&["", " -DCMAKE_BUILD_TYPE=Release", " -DCMAKE_BUILD_TYPE=Debug", " -G Ninja"]),
                self.num(2, 8),
                build = self.pick(&["build", "build-release", "out", "_build"])
            ),
            14 => {
                let var = self.pick(&["f", "file", "t"]);
                let glob = format!("{}/*.{}", self.dir(), self.pick(&["rs", "py", "ts", "md"]));
                let body = match self.below(4) {
                    0 => format!("wc -l \"${var}\""),
                    1 => format!("echo \"== ${var}\"; head -{} \"${var}\"", self.num(3, 20)),
                    2 => format!("grep -c '{}' \"${var}\"", self.word()),
                    _ => format!("python3 -m pytest \"${var}\" -q"),
                };
                format!("for {var} in {glob}; do {body}; done")
            }
            15 => match self.below(5) {
                0 => format!("echo \"$(git rev-parse --short HEAD~{})\"", self.num(0, 9)),
                1 => format!("wc -l $(git ls-files '{}/*.{}')", self.dir(), self.pick(&["rs", "py", "ts"])),
                2 => format!("cd \"$(git rev-parse --show-toplevel)\" && {}", self.cargo()),
                3 => format!("kill $(cat /tmp/{}.pid) 2>/dev/null; echo stopped", self.module()),
                _ => format!("grep -n \"{}\" $(find {} -name '*.rs')", self.word(), self.dir()),
            },
            16 => format!("(cd {} && {})", self.pick(&["web", "app", "sub"]), self.npm()),
            17 => format!("if [ -f {} ]; then {}; else echo missing; fi", self.file(), self.plain()),
            18 => {
                let dir = self.dir();
                format!("test -d {dir} || mkdir -p {dir}")
            }
            // A long pipeline.
            _ => format!(
                "git log --format='%an' --since=\"{} weeks ago\" -- {} | sort | uniq -c | sort -rn \
                 | head -{} | awk '{{print $2, $1}}'",
                self.num(1, 52),
                self.dir(),
                self.num(3, 20)
            ),
        }
    }
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map(|c| c.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
}
