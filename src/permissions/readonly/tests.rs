//! The allow-list on real command lines: what is read-only, and which words are the files
//! read.

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
        ("echo \"$HOME\"", true),
        ("timeout 5 cat x", true),
        ("bash -c 'ls -la'", true),
        ("LANG=C sort x", true),
        ("echo hi > out.txt", false),
        ("echo hi >> out.txt", false),
        ("ls >&3", true),
        ("echo $(rm -rf x)", false),
        ("echo `id`", false),
        ("diff <(ls a) <(ls b)", false),
        ("(cd src && ls)", false),
        ("ls &", true),
        ("FOO=1 ls", false),
        ("rm -rf target", false),
        ("npm test", false),
        ("cat <<EOF\nhi\nEOF", true),
        ("cat 'unterminated", false),
        ("", false),
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
        ("sort *.txt", true),
        ("rg --pre cat foo", false),
        ("rg foo *", true),
        ("uniq in.txt out.txt", false),
        ("uniq *.txt", false),
        ("env rm x", false),
        ("date -s 2020-01-01", false),
        ("date 01010000", false),
        ("tree -o out.txt", false),
        ("file -C -m magic", false),
        ("/bin/ls", false),
        ("printf -v PATH x", false),
        ("xargs rm", false),
        ("sudo cat x", false),
        ("find . -exec cat {} ;", false),
        ("PATH=/tmp ls", false),
    ];
    let wrong: Vec<_> = cases.iter().filter(|(cmd, want)| is_read_only(cmd) != *want).collect();
    assert!(wrong.is_empty(), "misclassified: {wrong:?}");
}

/// The parallel-bash-failure demo relies on this command counting as read-only.
#[test]
fn a_long_read_only_pipeline_is_read_only() {
    assert!(is_read_only("head -c 3000000000 /dev/zero | wc -c"));
}

#[test]
fn only_listed_options_are_read_only() {
    for line in [
        "ls -la src",
        "ls -lhS --color=auto",
        "ls -R",
        "cat -n README.md",
        "head -n 3 file",
        "head -20 file",
        "tail -f log.txt",
        "tail -n +5 file",
        "wc -l src/*.rs",
        "grep -rn foo src",
        "grep -E -e a -e b file",
        "grep -C2 --include='*.rs' foo -r .",
        "egrep -i foo file",
        "rg -n 'fn main' src",
        "rg --files",
        "rg -t rust -g '!target' foo",
        "rg --hidden --no-ignore-vcs foo",
        "find . -name '*.rs' -type f",
        "find src -maxdepth 2 -newer Cargo.toml -print",
        "find . \\( -name a -o -name b \\) -prune",
        "sort -k2,2n -t, data.csv",
        "uniq -c sorted.txt",
        "cut -d: -f1 file",
        "tr a-z A-Z",
        "tr -d '\\r'",
        "diff -u a b",
        "diff --from-file=a b c",
        "cmp -l a b",
        "nl -ba file",
        "od -An -tx1 -w16 file",
        "hexdump -C file",
        "stat -c %s file",
        "du -sh src",
        "df -h .",
        "file -b --mime-type file",
        "tree -L 2 -a src",
        "basename -s .rs src/main.rs",
        "dirname src/main.rs",
        "realpath --relative-to=src README.md",
        "readlink -f link",
        "pwd -P",
        "echo -n \"$HOME\" $X",
        "printf '%s\\n' a b",
        "true x",
        "which -a cargo",
        "date -u +%Y-%m-%d",
        "date -d yesterday",
        "test -f README.md",
        "[ -d src ]",
        "[[ -n x && -f README.md ]]",
        "(( 1 + 2 ))",
        "git status -sb",
        "git status --porcelain=v1 -uno",
        "git log --oneline -5",
        "git log -n 3 --format=%H --author=me",
        "git log -p -- src",
        "git show --stat HEAD",
        "git show HEAD:src/main.rs",
        "git diff --cached --stat",
        "git diff -U5 HEAD~1",
        "git rev-parse --abbrev-ref HEAD",
        "git ls-files -z --others --exclude-standard",
        "git blame -L 1,10 src/main.rs",
    ] {
        assert!(is_read_only(line), "{line} is not read-only");
    }
    for line in [
        "ls -L",
        "ls --dereference",
        "ls --al",
        "ls --all=x",
        "cat --number-non",
        "wc --files0-from=list",
        "wc --files0=list",
        "grep -R foo .",
        "grep --dereference-recursive foo",
        "grep -d recurse foo",
        "grep --exclude-fr=x foo",
        "grep --futureflag foo",
        "rg -L foo",
        "rg --follow foo",
        "rg -z foo",
        "rg --search-zip foo",
        "rg --pre=cat foo",
        "rg --pre-glob '*' foo",
        "rg --hostname-bin=PROG --hyperlink-format=default x .",
        "rg --hyperlink-format=default x",
        "find -L . -name x",
        "find . -follow",
        "find . -xtype l",
        "find . -fprint out",
        "find . -files0-from list",
        "find . -name \"$X\"",
        "sort --files0-from=list",
        "sort --files0=list",
        "sort -T /tmp x",
        "sort --random-source=/dev/urandom x",
        "diff -r a b",
        "diff -l a b",
        "diff --from-f=a b",
        "du -L",
        "du --files0-from=x",
        "tree -l",
        "tree -R -H . -o x",
        "tree --fromfile x",
        "file -z x",
        "file -f list",
        "file -m magic x",
        "date -s now",
        "date --set=now",
        "date now",
        "printf -vx a",
        "printf \"$FMT\"",
        "printf *",
        "which \"$X\"",
        "head -n \"$N\" file",
        "cat \"$(ls)\"",
        "git -C .. status",
        "git --git-dir=x log",
        "git log --ext-diff",
        "git diff --textconv",
        "git diff --no-index a b",
        "git log --show-signature",
        "git blame --contents x y",
        "git log --onel",
        "git status --porc",
        "git stash list",
        "git $SUB",
    ] {
        assert!(!is_read_only(line), "{line} is read-only");
    }
}

/// The words of the first command that are files it reads.
fn paths(line: &str) -> Vec<String> {
    let a = shell::analyze(line);
    let parsed = parse(&a.commands[0]).expect("listed").expect("read-only");
    parsed.iter().map(|p| p.word.text[p.suffix.unwrap_or(0)..].to_owned()).collect()
}

#[test]
fn option_values_that_are_files_are_paths() {
    assert_eq!(paths("grep -n foo a.txt b.txt"), ["a.txt", "b.txt"]);
    assert_eq!(paths("grep -e foo -e bar a.txt"), ["a.txt"]);
    assert_eq!(paths("grep -f .env src"), [".env", "src"]);
    assert_eq!(paths("grep -f.env -r"), [".env", ""]);
    assert_eq!(paths("grep -rn foo"), [""]);
    assert_eq!(paths("grep foo"), Vec::<String>::new());
    assert_eq!(paths("diff --from-file=.env a b"), [".env", "a", "b"]);
    assert_eq!(paths("diff --to-file .env a"), [".env", "a"]);
    assert_eq!(paths("date -f .env"), [".env"]);
    assert_eq!(paths("date -r.env +%s"), [".env"]);
    assert_eq!(paths("date --reference=x"), ["x"]);
    assert_eq!(paths("rg --ignore-file=ign -f pats"), ["ign", "pats", ""]);
    assert_eq!(paths("rg foo src"), ["src"]);
    assert_eq!(paths("echo /etc/passwd"), Vec::<String>::new());
    assert_eq!(paths("ls"), [""]);
    assert_eq!(paths("cat - x"), ["x"]);
    assert_eq!(paths("find src -newer Cargo.toml"), ["src", "Cargo.toml"]);
    assert_eq!(paths("find -name x"), [""]);
    assert_eq!(paths("[ -f a -a b = c ]"), ["a"]);
    assert_eq!(paths("[[ a -nt b ]]"), ["a", "b"]);
    assert_eq!(paths("test -e x"), ["x"]);
    assert_eq!(paths("git show HEAD:src/main.rs"), ["HEAD:src/main.rs"]);
    assert_eq!(paths("git ls-files -X .gitignore"), [".gitignore"]);
    let a = shell::analyze("ls *");
    let parsed = parse(&a.commands[0]).unwrap().unwrap();
    assert!(parsed[0].may_be_option);
    let a = shell::analyze("ls -- *");
    let parsed = parse(&a.commands[0]).unwrap().unwrap();
    assert!(!parsed[0].may_be_option);
}

#[test]
fn xargs_reads_its_argument_file() {
    let files = |line: &str| -> Vec<String> {
        let a = shell::analyze(line);
        wrapper_reads(&a.commands[0]).iter().map(|p| p.word.text[p.suffix.unwrap_or(0)..].to_owned()).collect()
    };
    assert_eq!(files("xargs -a list echo"), ["list"]);
    assert_eq!(files("xargs -0alist echo"), ["list"]);
    assert_eq!(files("xargs --arg-file=list echo"), ["list"]);
    assert_eq!(files("xargs -n 1 --arg-file list echo"), ["list"]);
    assert_eq!(files("xargs -n1 echo -a x"), Vec::<String>::new());
    assert_eq!(files("timeout 5 cat x"), Vec::<String>::new());
}
