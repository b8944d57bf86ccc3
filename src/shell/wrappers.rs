//! Programs that run other programs, looked through: `env VAR=1 timeout 5 rm x` runs `rm x`;
//! `bash -c 'LITERAL'` and `eval 'LITERAL'` run the commands of their script; `find -exec`
//! runs its command; `compgen -C`, `mapfile -C` and kin run their callback. Builtins that
//! change how names resolve or run unreadable code are flagged here too.

use super::walk::Walker;
use super::{Hazard, MAX_DEPTH, SimpleCommand, Word, WordKind, Wrapper, analyze_nested};

/// Shells whose `-c 'LITERAL'` script is parsed (with Bash's grammar) and looked through.
const SHELLS: &[&str] = &["bash", "sh", "dash", "ash"];

/// Shells whose grammar is not bash's (`zsh`'s glob qualifiers run code, `fish` has its own
/// substitutions): what they run cannot be read with bash's grammar.
const OTHER_SHELLS: &[&str] = &["zsh", "ksh", "ksh93", "mksh", "pdksh", "fish", "csh", "tcsh", "yash", "elvish", "nu"];

/// `set -o`/`-O` names a `bash -c` may be given: they change no file the shell reads and
/// run nothing.
const SHELL_OPTION_NAMES: &[&str] = &[
    "errexit",
    "nounset",
    "pipefail",
    "xtrace",
    "verbose",
    "noglob",
    "noclobber",
    "noexec",
    "posix",
    "extglob",
    "globstar",
    "nullglob",
    "failglob",
    "dotglob",
    "nocaseglob",
    "lastpipe",
    "inherit_errexit",
];

/// Interpreters that read a program from stdin when given no script.
const INTERPRETERS: &[&str] =
    &["python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php", "lua", "tclsh", "Rscript", "osascript"];

/// How a wrapper's own options are written.
struct Options {
    /// Options that take no value (`-i`, `--null`).
    flags: &'static [&'static str],
    /// Options followed by a value (`-n 5`, `-n5`, `--adjustment=5`, `--adjustment 5`).
    valued: &'static [&'static str],
}

/// Where a wrapper's options end, or why they cannot be read.
enum Skipped {
    /// The operands start at this index.
    At(usize),
    /// An option the wrapper does not document, or one that is not a literal word.
    Unknown(String),
}

impl Options {
    /// Skip the options at the start of `args`, calling `seen` with each option's name and
    /// value. A lone `--` ends the options.
    fn skip(&self, args: &[Word], mut seen: impl FnMut(&str, Option<&Word>)) -> Skipped {
        let mut i = 0;
        while let Some(arg) = args.get(i) {
            if !arg.text.starts_with('-') || arg.text == "-" {
                if arg.kind != WordKind::Literal {
                    return Skipped::Unknown(arg.text.clone());
                }
                return Skipped::At(i);
            }
            if arg.kind != WordKind::Literal {
                return Skipped::Unknown(arg.text.clone());
            }
            if arg.text == "--" {
                return Skipped::At(i + 1);
            }
            if let Some(long) = arg.text.strip_prefix("--") {
                let (name, value) = match long.split_once('=') {
                    Some((name, _)) => (format!("--{name}"), true),
                    None => (arg.text.clone(), false),
                };
                if self.valued.contains(&name.as_str()) {
                    seen(&name, if value { Some(arg) } else { args.get(i + 1) });
                    i += if value { 1 } else { 2 };
                } else if self.flags.contains(&name.as_str()) {
                    seen(&name, None);
                    i += 1;
                } else {
                    return Skipped::Unknown(arg.text.clone());
                }
                continue;
            }
            let cluster = &arg.text[1..];
            let mut consumed = 1;
            for (at, c) in cluster.char_indices() {
                let opt = format!("-{c}");
                if self.valued.contains(&opt.as_str()) {
                    let attached = at + c.len_utf8() < cluster.len();
                    seen(&opt, if attached { Some(arg) } else { args.get(i + 1) });
                    if !attached {
                        consumed = 2;
                    }
                    break;
                } else if self.flags.contains(&opt.as_str()) {
                    seen(&opt, None);
                } else {
                    return Skipped::Unknown(arg.text.clone());
                }
            }
            i += consumed;
        }
        // A valued option at the end wants a value that is not there: the program
        // refuses to start, and no operand follows.
        Skipped::At(i.min(args.len()))
    }
}

/// Look through `cmd` if its program runs other programs (at nesting `level`); flag
/// builtins that hide what runs.
pub(super) fn look_through(w: &mut Walker, cmd: &mut SimpleCommand, level: usize) {
    if level + w.depth > MAX_DEPTH {
        w.hazard(Hazard::Unparsable("wrappers nested too deep".into()));
        return;
    }
    let Some(name) = cmd.program_name().map(str::to_owned) else { return };
    let args = cmd.args().to_vec();
    let opaque = |w: &mut Walker, why: String| w.hazard(Hazard::OpaqueCode(why));
    let operands_from = |w: &mut Walker, options: &Options, args: &[Word]| -> Option<usize> {
        match options.skip(args, |_, _| {}) {
            Skipped::At(i) => Some(i),
            Skipped::Unknown(opt) => {
                w.hazard(Hazard::OpaqueCode(format!("{name} with the option `{opt}`")));
                None
            }
        }
    };
    match name.as_str() {
        "eval" if args.is_empty() => {}
        "eval" => {
            if args.iter().all(Word::is_literal) {
                let script = args.iter().map(|a| a.text.as_str()).collect::<Vec<_>>().join(" ");
                cmd.runs = analyze_nested(&script, w.depth + level + 1, w.out);
                cmd.wrapper = Wrapper::Transparent;
            } else {
                opaque(w, "eval of a non-literal".into());
            }
        }
        "source" | "." => opaque(w, format!("{name} runs a file")),
        "alias" if !args.is_empty() => w.hazard(Hazard::Rebinding("alias".into())),
        "hash" if args.iter().any(|a| a.text.starts_with("-p") || !a.is_literal()) => {
            w.hazard(Hazard::Rebinding("hash -p".into()))
        }
        "enable" if !args.is_empty() => w.hazard(Hazard::Rebinding("enable".into())),
        "trap" if args.iter().any(|a| !a.text.starts_with('-')) => opaque(w, "trap runs code on a signal".into()),
        "coproc" => opaque(w, "coproc runs a command the parser cannot delimit".into()),
        "fc" => opaque(w, "fc runs commands from the history".into()),
        "bind" if args.iter().any(|a| !a.is_literal() || (a.text.starts_with('-') && a.text[1..].contains('x'))) => {
            opaque(w, "bind -x runs a command on a key".into())
        }
        "compgen" | "complete" => callbacks(w, cmd, &args, &COMPGEN, level),
        "mapfile" | "readarray" => callbacks(w, cmd, &args, &MAPFILE, level),
        "cd" | "pushd" | "popd" => w.out.changes_directory = true,
        shell if SHELLS.contains(&shell) => shell_script(w, cmd, &args, level),
        shell if OTHER_SHELLS.contains(&shell) => opaque(w, format!("{shell}'s grammar is not bash's")),
        interpreter if INTERPRETERS.contains(&interpreter) || interpreter.starts_with("python3.") => {
            let code_flag = args.iter().any(|a| matches!(a.text.as_str(), "-c" | "-e" | "-E" | "-m" | "-r" | "-p"));
            let operand = args.iter().any(|a| !a.text.starts_with('-'));
            let stdin = args.iter().any(|a| a.text == "-");
            if stdin || !(code_flag || operand) {
                opaque(w, format!("{name} reads a program from stdin"));
            }
        }
        "env" => env(w, cmd, &args, level),
        "sudo" | "doas" => {
            let options = if name == "sudo" { &SUDO } else { &DOAS };
            if let Some(at) = operands_from(w, options, &args) {
                let rest = take_assignments(w, &args[at..]);
                wrap(w, cmd, rest.1, rest.0, Wrapper::Privileged, level);
            }
        }
        "find" => find_exec(w, cmd, &args, level),
        "xargs" => {
            if let Some(at) = operands_from(w, &XARGS, &args) {
                let mut words = args[at..].to_vec();
                if !words.is_empty() {
                    words.push(Word::dynamic("<xargs input>"));
                }
                wrap(w, cmd, words, Vec::new(), Wrapper::Transparent, level);
            }
        }
        "command" if args.first().is_some_and(|a| a.text == "-v" || a.text == "-V") => {}
        "time" => {
            let mut output = None;
            let skipped = TIME.skip(&args, |opt, value| {
                if matches!(opt, "-o" | "--output") {
                    output = Some(value.map_or_else(String::new, |v| v.text.clone()));
                }
            });
            if let Some(target) = output {
                w.hazard(Hazard::WriteRedirect(target));
            }
            match skipped {
                Skipped::At(at) => wrap(w, cmd, args[at..].to_vec(), Vec::new(), Wrapper::Transparent, level),
                Skipped::Unknown(opt) => opaque(w, format!("time with the option `{opt}`")),
            }
        }
        "timeout" => {
            if let Some(at) = operands_from(w, &TIMEOUT, &args) {
                // The first operand is the duration.
                let rest = args.get(at + 1..).unwrap_or_default().to_vec();
                wrap(w, cmd, rest, Vec::new(), Wrapper::Transparent, level);
            }
        }
        "busybox" if args.first().is_some_and(|a| !a.text.starts_with('-')) => {
            wrap(w, cmd, args.clone(), Vec::new(), Wrapper::Transparent, level)
        }
        "nice" | "nohup" | "command" | "builtin" | "exec" | "stdbuf" | "setsid" | "ionice" => {
            let options = match name.as_str() {
                "nice" => &NICE,
                "command" => &COMMAND,
                "exec" => &EXEC,
                "stdbuf" => &STDBUF,
                "setsid" => &SETSID,
                "ionice" => &IONICE,
                _ => &NONE,
            };
            let numeric_nice =
                |a: &Word| name == "nice" && a.text.len() > 1 && a.text[1..].bytes().all(|b| b.is_ascii_digit());
            let skip_first = args.first().is_some_and(|a| a.text.starts_with('-') && numeric_nice(a));
            let from = usize::from(skip_first);
            if let Some(at) = operands_from(w, options, &args[from..]) {
                wrap(w, cmd, args[from + at..].to_vec(), Vec::new(), Wrapper::Transparent, level);
            }
        }
        _ => {}
    }
}

/// Make `words` (with prefix `assignments`) the command `cmd` runs, checked like any
/// command and looked through in turn.
fn wrap(
    w: &mut Walker,
    cmd: &mut SimpleCommand,
    words: Vec<Word>,
    assignments: Vec<String>,
    wrapper: Wrapper,
    level: usize,
) {
    cmd.wrapper = wrapper;
    if words.is_empty() {
        return;
    }
    let mut inner = SimpleCommand { assignments, words, ..SimpleCommand::default() };
    w.reserved_program(&inner);
    w.check_command(&mut inner, level + 1);
    cmd.runs.push(inner);
}

/// Leading `NAME=value` words (as `env` and `sudo` accept them): their names, and the rest.
fn take_assignments(w: &mut Walker, words: &[Word]) -> (Vec<String>, Vec<Word>) {
    let mut names = Vec::new();
    let mut at = 0;
    for word in words {
        match assignment_name(&word.text) {
            Some(name) => {
                if assigns_data(word) {
                    w.data_in_variable(|| format!("`{}`", word.text));
                }
                names.push(name.to_owned());
                at += 1;
            }
            None => break,
        }
    }
    (names, words[at..].to_vec())
}

/// Whether an `env`/`sudo` assignment word gives its variable data: a value that is not known
/// text, or holds a `[`.
fn assigns_data(word: &Word) -> bool {
    !word.is_literal() || word.text.split_once('=').is_some_and(|(_, value)| value.contains('['))
}

/// `NAME` of a `NAME=value` word.
fn assignment_name(text: &str) -> Option<&str> {
    let (name, _) = text.split_once('=')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    ((first.is_ascii_alphabetic() || first == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then_some(name)
}

fn env(w: &mut Walker, cmd: &mut SimpleCommand, args: &[Word], level: usize) {
    let mut split = false;
    let mut chdir = false;
    let skipped = ENV.skip(args, |opt, _| match opt {
        "-S" | "--split-string" => split = true,
        "-C" | "--chdir" => chdir = true,
        _ => {}
    });
    if split {
        w.hazard(Hazard::OpaqueCode("env -S splits a string into a command".into()));
    }
    if chdir {
        w.out.changes_directory = true;
    }
    match skipped {
        Skipped::At(at) => {
            // `env -` is `env -i`.
            let at = if args.get(at).is_some_and(|a| a.text == "-") { at + 1 } else { at };
            let (names, rest) = take_assignments(w, &args[at..]);
            wrap(w, cmd, rest, names, Wrapper::Transparent, level);
        }
        Skipped::Unknown(opt) => w.hazard(Hazard::OpaqueCode(format!("env with the option `{opt}`"))),
    }
}

/// `bash [options] -c 'SCRIPT' [name args…]`: the script is analysed. A shell that reads
/// other files first (`--rcfile`, `--init-file`, `-i`, `-l`/`--login`), reads its commands
/// from a file, stdin or a non-literal, or gets an option this list does not know, is opaque.
fn shell_script(w: &mut Walker, cmd: &mut SimpleCommand, args: &[Word], level: usize) {
    let name = cmd.program_name().unwrap_or_default().to_owned();
    let bash = name == "bash";
    let mut has_c = false;
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let t = arg.text.as_str();
        if arg.kind != WordKind::Literal {
            if t.starts_with(['-', '+']) || !t.starts_with(|c: char| c.is_ascii_alphanumeric() || "./_".contains(c)) {
                w.hazard(Hazard::OpaqueCode(format!("{name} with the option `{t}`")));
                return;
            }
            break;
        }
        if t == "--" || t == "-" {
            i += 1;
            break;
        }
        if bash && matches!(t, "--version" | "--help") {
            return;
        }
        if bash && matches!(t, "--norc" | "--noprofile" | "--posix" | "--noediting" | "--restricted" | "--verbose") {
            i += 1;
            continue;
        }
        if matches!(t, "-o" | "+o" | "-O" | "+O") && (bash || t.ends_with('o')) {
            match args.get(i + 1) {
                Some(value) if value.is_literal() && SHELL_OPTION_NAMES.contains(&value.text.as_str()) => {}
                value => {
                    let value = value.map_or_else(String::new, |v| v.text.clone());
                    w.hazard(Hazard::OpaqueCode(format!("{name} with the option `{t} {value}`")));
                    return;
                }
            }
            i += 2;
            continue;
        }
        let cluster = t.strip_prefix('-').or_else(|| t.strip_prefix('+'));
        match cluster {
            Some(cluster)
                if !t.starts_with("--") && !cluster.is_empty() && cluster.chars().all(|c| "ceuxvfnaCB".contains(c)) =>
            {
                has_c |= t.starts_with('-') && cluster.contains('c');
                i += 1;
            }
            Some(_) => {
                w.hazard(Hazard::OpaqueCode(format!("{name} with the option `{t}`")));
                return;
            }
            None => break,
        }
    }
    let operand = args.get(i);
    match (has_c, operand) {
        (true, Some(script)) if script.is_literal() => {
            cmd.runs = analyze_nested(&script.text, w.depth + level + 1, w.out);
            cmd.wrapper = Wrapper::Transparent;
            if args.len() > i + 2 {
                w.data_in_variable(|| format!("the arguments of `{name} -c`"));
            }
        }
        (true, Some(_)) => w.hazard(Hazard::OpaqueCode(format!("{name} -c with a non-literal script"))),
        (true, None) => {}
        (false, Some(file)) => w.hazard(Hazard::OpaqueCode(format!("{name} runs the script `{}`", file.text))),
        (false, None) => w.hazard(Hazard::OpaqueCode(format!("{name} reads commands from stdin"))),
    }
}

/// `compgen`/`complete` (`-C COMMAND`, `-F FUNCTION`, `-W WORDLIST`) and `mapfile`/`readarray`
/// (`-C CALLBACK`): the command or function they run is analysed as a script the command
/// runs; a word list is expanded when they run, so one holding `$` or a backquote is opaque,
/// as is an option they do not have or a non-literal callback.
fn callbacks(w: &mut Walker, cmd: &mut SimpleCommand, args: &[Word], options: &Options, level: usize) {
    let name = cmd.program_name().unwrap_or_default().to_owned();
    let mut scripts = Vec::new();
    let mut hidden = None;
    let skipped = options.skip(args, |opt, value| {
        let Some(value) = value else { return };
        let text = match value.text.strip_prefix(opt) {
            Some(attached) if !attached.is_empty() => attached.to_owned(),
            _ if value.text.starts_with('-') => {
                hidden = Some(format!("{name} {opt} with the value `{}`", value.text));
                return;
            }
            _ => value.text.clone(),
        };
        match opt {
            "-C" | "-F" if value.is_literal() => scripts.push(text),
            "-C" | "-F" => hidden = Some(format!("{name} {opt} with a non-literal command")),
            "-W" if !value.is_literal() || text.contains(['$', '`']) => {
                hidden = Some(format!("{name} -W expands `{text}` when it runs"));
            }
            _ => {}
        }
    });
    if let Skipped::Unknown(opt) = skipped {
        hidden = Some(format!("{name} with the option `{opt}`"));
    }
    if let Some(why) = hidden {
        w.hazard(Hazard::OpaqueCode(why));
    }
    for script in scripts {
        let inner = analyze_nested(&script, w.depth + level + 1, w.out);
        cmd.runs.extend(inner);
        cmd.wrapper = Wrapper::Privileged;
    }
}

/// `find … -exec CMD … ;` (and `-execdir`, `-ok`, `-okdir`): each CMD is a command find runs.
fn find_exec(w: &mut Walker, cmd: &mut SimpleCommand, args: &[Word], level: usize) {
    let mut i = 0;
    while i < args.len() {
        let is_exec = matches!(args[i].text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir");
        i += 1;
        if !is_exec {
            continue;
        }
        let start = i;
        while i < args.len() && !(args[i].is_literal() && matches!(args[i].text.as_str(), ";" | "+")) {
            i += 1;
        }
        wrap(w, cmd, args[start..i].to_vec(), Vec::new(), Wrapper::Privileged, level);
    }
}

const NONE: Options = Options { flags: &[], valued: &[] };
const COMPGEN: Options = Options {
    flags: &["-a", "-b", "-c", "-d", "-e", "-f", "-g", "-j", "-k", "-s", "-u", "-v", "-p", "-r", "-D", "-E", "-I"],
    valued: &["-o", "-A", "-G", "-W", "-F", "-C", "-X", "-P", "-S"],
};
const MAPFILE: Options = Options { flags: &["-t"], valued: &["-d", "-n", "-O", "-s", "-u", "-C", "-c"] };
const ENV: Options = Options {
    flags: &[
        "-i",
        "--ignore-environment",
        "-0",
        "--null",
        "-v",
        "--debug",
        "--default-signal",
        "--ignore-signal",
        "--block-signal",
        "--list-signal-handling",
    ],
    valued: &["-u", "--unset", "-C", "--chdir", "-S", "--split-string"],
};
const NICE: Options = Options { flags: &[], valued: &["-n", "--adjustment"] };
const COMMAND: Options = Options { flags: &["-p"], valued: &[] };
const EXEC: Options = Options { flags: &["-c", "-l"], valued: &["-a"] };
const STDBUF: Options = Options { flags: &[], valued: &["-i", "-o", "-e", "--input", "--output", "--error"] };
const SETSID: Options = Options { flags: &["-c", "-f", "-w", "--ctty", "--fork", "--wait"], valued: &[] };
const IONICE: Options = Options { flags: &["-t", "--ignore"], valued: &["-c", "-n", "--class", "--classdata"] };
const TIMEOUT: Options = Options {
    flags: &["--preserve-status", "--foreground", "-v", "--verbose", "-f", "-p"],
    valued: &["-s", "--signal", "-k", "--kill-after"],
};
const TIME: Options = Options {
    flags: &["-p", "-a", "-v", "-q", "--append", "--verbose", "--portability", "--quiet"],
    valued: &["-f", "--format", "-o", "--output"],
};
const XARGS: Options = Options {
    flags: &[
        "-0",
        "-p",
        "-r",
        "-t",
        "-x",
        "--null",
        "--interactive",
        "--no-run-if-empty",
        "--verbose",
        "--exit",
        "--open-tty",
        "-o",
        "--show-limits",
    ],
    valued: &[
        "-a",
        "-d",
        "-E",
        "-I",
        "-L",
        "-n",
        "-P",
        "-s",
        "--arg-file",
        "--delimiter",
        "--eof",
        "--replace",
        "--max-lines",
        "--max-args",
        "--max-procs",
        "--max-chars",
        "--process-slot-var",
    ],
};
const SUDO: Options = Options {
    flags: &[
        "-A",
        "-b",
        "-E",
        "-e",
        "-H",
        "-i",
        "-K",
        "-k",
        "-l",
        "-n",
        "-P",
        "-S",
        "-s",
        "-V",
        "-v",
        "-B",
        "-N",
        "--askpass",
        "--background",
        "--preserve-env",
        "--edit",
        "--set-home",
        "--login",
        "--remove-timestamp",
        "--reset-timestamp",
        "--list",
        "--non-interactive",
        "--preserve-groups",
        "--stdin",
        "--shell",
        "--validate",
    ],
    valued: &[
        "-u",
        "-g",
        "-h",
        "-p",
        "-C",
        "-D",
        "-r",
        "-t",
        "-U",
        "-T",
        "-R",
        "--user",
        "--group",
        "--host",
        "--prompt",
        "--close-from",
        "--chdir",
        "--role",
        "--type",
        "--other-user",
        "--command-timeout",
        "--chroot",
    ],
};
const DOAS: Options = Options { flags: &["-n", "-s"], valued: &["-u", "-C"] };
