//! Which Bash commands are provably read-only, so they may run at the same time as other
//! read-only calls. Conservative by design: anything this small lexer does not fully
//! understand (substitutions, subshells, backgrounding, redirections to files, variables,
//! comments, unknown commands, options that write or run programs) counts as "may write".

/// Whether `command` only reads: every simple command in it (split on `|`, `||`, `&&`, `;`
/// and newlines) is on the read-only list, with arguments that neither write nor run programs.
pub fn is_read_only(command: &str) -> bool {
    let Some(commands) = lex(command) else { return false };
    let mut nonempty = commands.iter().filter(|c| !c.is_empty()).peekable();
    nonempty.peek().is_some() && nonempty.all(|c| simple_command_is_read_only(c))
}

/// One shell word after quote removal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Word {
    text: String,
    /// Some character was quoted or escaped.
    quoted: bool,
    /// An unquoted `*`, `?` or `[`: the shell may expand it into file names, and a file
    /// named like an option (`--pre=sh`, `-delete`) would then become an option.
    glob: bool,
}

/// Splits a command line into simple commands of words, or `None` for anything refused.
struct Lexer<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    commands: Vec<Vec<Word>>,
    word: Option<Word>,
}

fn lex(src: &str) -> Option<Vec<Vec<Word>>> {
    let mut lx = Lexer { chars: src.chars().peekable(), commands: vec![Vec::new()], word: None };
    while let Some(c) = lx.chars.next() {
        match c {
            ' ' | '\t' => lx.end_word(),
            '\n' | ';' => lx.separate(),
            '|' if lx.chars.peek() == Some(&'&') => return None,
            '|' => {
                lx.chars.next_if_eq(&'|');
                lx.separate();
            }
            '&' if lx.chars.next_if_eq(&'&').is_some() => lx.separate(),
            '&' if lx.chars.next_if_eq(&'>').is_some() => {
                lx.end_word();
                lx.chars.next_if_eq(&'>');
                lx.dev_null_target()?;
            }
            '&' => return None,
            '>' => {
                lx.take_fd();
                lx.redirect_out()?;
            }
            '<' => {
                lx.take_fd();
                lx.redirect_in()?;
            }
            '\'' => lx.single_quoted()?,
            '"' => lx.double_quoted()?,
            '\\' => match lx.chars.next()? {
                '\n' => {}
                c => lx.push_quoted(c),
            },
            '$' if !matches!(lx.chars.peek(), None | Some(' ' | '\t' | '\n')) => return None,
            '`' | '(' | ')' | '{' | '}' | '#' => return None,
            '*' | '?' | '[' => {
                lx.push(c);
                lx.current().glob = true;
            }
            c => lx.push(c),
        }
    }
    lx.end_word();
    Some(lx.commands)
}

impl Lexer<'_> {
    fn current(&mut self) -> &mut Word {
        self.word.get_or_insert_with(Word::default)
    }

    fn push(&mut self, c: char) {
        self.current().text.push(c);
    }

    fn push_quoted(&mut self, c: char) {
        let word = self.current();
        word.text.push(c);
        word.quoted = true;
    }

    fn end_word(&mut self) {
        if let Some(word) = self.word.take() {
            self.commands.last_mut().expect("there is always a current command").push(word);
        }
    }

    fn separate(&mut self) {
        self.end_word();
        self.commands.push(Vec::new());
    }

    /// Before a redirection operator: an unquoted all-digit word right before it is the file
    /// descriptor (`2>`), anything else is an ordinary word.
    fn take_fd(&mut self) {
        match &self.word {
            Some(w) if !w.quoted && w.text.bytes().all(|b| b.is_ascii_digit()) => self.word = None,
            _ => self.end_word(),
        }
    }

    /// After `>`: only `>&1`, `>&2` and `/dev/null` as the target (also with `>>`).
    fn redirect_out(&mut self) -> Option<()> {
        if self.chars.next_if_eq(&'&').is_some() {
            self.chars.next_if(|c| matches!(c, '1' | '2'))?;
            return self.at_delimiter().then_some(());
        }
        self.chars.next_if_eq(&'>');
        self.dev_null_target()
    }

    /// After `<`: a plain file name (no here-documents, process substitution or fd games).
    fn redirect_in(&mut self) -> Option<()> {
        if matches!(self.chars.peek(), Some('(' | '<' | '&' | '>')) {
            return None;
        }
        let target = self.plain_target();
        (!target.is_empty()).then_some(())
    }

    fn dev_null_target(&mut self) -> Option<()> {
        (self.plain_target() == "/dev/null").then_some(())
    }

    /// A redirection target made only of ordinary characters, after optional blanks.
    fn plain_target(&mut self) -> String {
        while self.chars.next_if(|c| matches!(c, ' ' | '\t')).is_some() {}
        let mut target = String::new();
        while let Some(c) = self.chars.next_if(|c| !is_special(*c)) {
            target.push(c);
        }
        if self.at_delimiter() { target } else { String::new() }
    }

    fn at_delimiter(&mut self) -> bool {
        matches!(self.chars.peek(), None | Some(' ' | '\t' | '\n' | ';' | '|' | '&'))
    }

    fn single_quoted(&mut self) -> Option<()> {
        self.current().quoted = true;
        loop {
            match self.chars.next()? {
                '\'' => return Some(()),
                c => self.push(c),
            }
        }
    }

    fn double_quoted(&mut self) -> Option<()> {
        self.current().quoted = true;
        loop {
            match self.chars.next()? {
                '"' => return Some(()),
                '\\' => match self.chars.next()? {
                    c @ ('$' | '`' | '"' | '\\') => self.push(c),
                    '\n' => {}
                    c => {
                        self.push('\\');
                        self.push(c);
                    }
                },
                '`' => return None,
                '$' if !matches!(self.chars.peek(), Some('"' | ' ' | '\t' | '\n')) => return None,
                c => self.push(c),
            }
        }
    }
}

/// Characters that end or change the meaning of an unquoted word.
fn is_special(c: char) -> bool {
    c.is_whitespace() || "|&;<>()$`\\'\"{}#*?[".contains(c)
}

/// Commands that only read whatever their arguments.
const ALWAYS_READ_ONLY: &[&str] = &[
    "ls", "cat", "head", "tail", "wc", "grep", "pwd", "echo", "printf", "which", "stat", "du", "df", "cut", "tr",
    "diff", "cmp", "basename", "dirname", "realpath", "true", "false",
];

fn simple_command_is_read_only(words: &[Word]) -> bool {
    let Some((name, args)) = words.split_first() else { return true };
    let name = name.text.as_str();
    if ALWAYS_READ_ONLY.contains(&name) {
        return true;
    }
    // The rest have options that write or run programs: a glob could smuggle one in.
    if args.iter().any(|w| w.glob) {
        return false;
    }
    let args: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
    let any = |bad: &dyn Fn(&str) -> bool| args.iter().any(|a| bad(a));
    match name {
        "rg" => !any(&|a| a.starts_with("--pre") || long_abbrev(a, &["pre"])),
        "find" => !any(&|a| ["-exec", "-ok", "-delete", "-fprint", "-fls"].iter().any(|p| a.starts_with(p))),
        "sort" => !any(&|a| short_cluster_has(a, 'o') || long_abbrev(a, &["output", "compress-program"])),
        "tree" => !any(&|a| short_cluster_has(a, 'o')),
        "file" => !any(&|a| short_cluster_has(a, 'C') || long_abbrev(a, &["compile"])),
        "uniq" => args.iter().filter(|a| !a.starts_with('-') || **a == "-").count() <= 1,
        "env" => args.is_empty(),
        "date" => date_is_read_only(&args),
        "git" => git_is_read_only(&args),
        _ => false,
    }
}

/// `-xyz` (not `--…`) containing `letter`.
fn short_cluster_has(arg: &str, letter: char) -> bool {
    arg.starts_with('-') && !arg.starts_with("--") && arg[1..].contains(letter)
}

/// `--name[=…]` where `name` is one of `long` or an abbreviation of it (getopt accepts those).
fn long_abbrev(arg: &str, long: &[&str]) -> bool {
    let Some(rest) = arg.strip_prefix("--") else { return false };
    let name = rest.split('=').next().unwrap_or_default();
    !name.is_empty() && long.iter().any(|l| l.starts_with(name))
}

/// `date` reads unless it sets the clock (`-s`, `--set`, or a bare `MMDDhhmm` operand).
fn date_is_read_only(args: &[&str]) -> bool {
    let mut args = args.iter();
    while let Some(a) = args.next() {
        if matches!(*a, "-d" | "--date" | "-r" | "--reference" | "-f" | "--file") {
            args.next();
        } else if short_cluster_has(a, 's') || long_abbrev(a, &["set"]) || !(a.starts_with('-') || a.starts_with('+')) {
            return false;
        }
    }
    true
}

/// `git` with `--no-pager` at most before a read-only subcommand, never writing `--output`.
fn git_is_read_only(args: &[&str]) -> bool {
    let Some(at) = args.iter().position(|a| *a != "--no-pager") else { return false };
    let (sub, rest) = (args[at], &args[at + 1..]);
    if rest.iter().any(|a| long_abbrev(a, &["output", "ext-diff"])) {
        return false;
    }
    match sub {
        "status" | "log" | "diff" | "show" | "rev-parse" | "ls-files" | "blame" => true,
        "branch" => branch_lists(rest),
        _ => false,
    }
}

/// `git branch` only lists: known listing flags, and operands only in list mode.
fn branch_lists(args: &[&str]) -> bool {
    const LIST_MODE: &[&str] = &[
        "-l",
        "--list",
        "-v",
        "-vv",
        "--verbose",
        "--contains",
        "--no-contains",
        "--merged",
        "--no-merged",
        "--points-at",
    ];
    const FLAGS: &[&str] =
        &["-a", "--all", "-r", "--remotes", "--show-current", "--color", "--no-color", "-i", "--ignore-case"];
    let list_mode = args.iter().any(|a| LIST_MODE.contains(a));
    args.iter().all(|a| {
        LIST_MODE.contains(a)
            || FLAGS.contains(a)
            || a.starts_with("--sort=")
            || a.starts_with("--format=")
            || (list_mode && !a.starts_with('-'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_commands() {
        let cases: &[(&str, bool)] = &[
            ("ls -la", true),
            ("cat README.md | grep -n foo", true),
            ("git status && git log --oneline -5", true),
            ("git --no-pager diff HEAD~1 -- src", true),
            ("find . -name '*.rs' -type f", true),
            ("grep -r foo . 2>/dev/null", true),
            ("ls 2>&1 | head -n 3", true),
            ("ls > /dev/null; pwd", true),
            ("cat < input.txt", true),
            ("wc -l src/*.rs", true),
            ("grep \"foo$\" x.txt", true),
            ("cat a\\ b.txt", true),
            ("rg -n 'fn main' src", true),
            ("sort -u names.txt | uniq -c", true),
            ("git branch", true),
            ("git branch -a", true),
            ("git branch --list 'feat*'", true),
            ("date +%s", true),
            ("env", true),
            ("ls;", true),
            ("echo hi > out.txt", false),
            ("echo hi >> out.txt", false),
            ("ls >&3", false),
            ("echo $(rm -rf x)", false),
            ("echo `id`", false),
            ("echo \"$HOME\"", false),
            ("diff <(ls a) <(ls b)", false),
            ("(cd src && ls)", false),
            ("ls &", false),
            ("ls |& cat", false),
            ("FOO=1 ls", false),
            ("rm -rf target", false),
            ("npm test", false),
            ("ls # rm", false),
            ("cat <<EOF", false),
            ("cat 'unterminated", false),
            ("", false),
            (" ; ", false),
            ("find . -name '*.tmp' -delete", false),
            ("find . -type f -execdir wc -l '{}' +", false),
            ("find . -name *.rs", false),
            ("git push", false),
            ("git -c core.pager=sh log", false),
            ("git diff --output=patch.txt", false),
            ("git log --out=x", false),
            ("git branch new-feature", false),
            ("git branch -D old", false),
            ("sort -o out.txt in.txt", false),
            ("sort --out=x in.txt", false),
            ("sort --compress-program=sh in.txt", false),
            ("sort *.txt", false),
            ("rg --pre cat foo", false),
            ("rg foo *", false),
            ("uniq in.txt out.txt", false),
            ("env rm x", false),
            ("date -s 2020-01-01", false),
            ("date 01010000", false),
            ("tree -o out.txt", false),
            ("file -C -m magic", false),
            ("/bin/ls", false),
        ];
        let wrong: Vec<_> = cases.iter().filter(|(cmd, want)| is_read_only(cmd) != *want).collect();
        assert!(wrong.is_empty(), "misclassified: {wrong:?}");
    }

    #[test]
    fn lexes_quotes_and_escapes() {
        let words = |s: &str| -> Vec<String> { lex(s).unwrap().into_iter().flatten().map(|w| w.text).collect() };
        assert_eq!(words(r#"grep 'a b' "c \"d\" \x" e\ f"#), ["grep", "a b", r#"c "d" \x"#, "e f"]);
        assert_eq!(lex("a | b && c; d").unwrap().len(), 4);
    }
}

#[cfg(test)]
mod slow_reader_tests {
    use super::is_read_only;

    /// The parallel-bash-failure demo relies on this command counting as read-only.
    #[test]
    fn a_long_read_only_pipeline_is_read_only() {
        assert!(is_read_only("head -c 3000000000 /dev/zero | wc -c"));
    }
}
