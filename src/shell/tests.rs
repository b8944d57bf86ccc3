//! Unit tests of the command-line analysis: what commands are found, through which
//! constructs, and which hazards are reported.

use super::*;

/// The program names of every command found (wrappers' inner commands included).
fn programs(line: &str) -> Vec<String> {
    analyze(line).all_commands().map(|c| c.words.first().map(|w| w.text.clone()).unwrap_or_default()).collect()
}

#[test]
fn finds_commands_in_every_construct() {
    assert_eq!(programs("ls & touch X"), ["ls", "touch"]);
    assert_eq!(programs("a | b |& c && d || e; f"), ["a", "b", "c", "d", "e", "f"]);
    assert_eq!(programs("echo $(rm x)"), ["rm", "echo"]);
    assert_eq!(programs("(rm x)"), ["rm"]);
    assert_eq!(programs("{ rm x; }"), ["rm"]);
    assert_eq!(programs("if true; then rm x; fi"), ["true", "rm"]);
    assert_eq!(programs("for f in a b; do rm $f; done"), ["rm"]);
    assert_eq!(programs("while false; do rm x; done"), ["false", "rm"]);
    assert_eq!(programs("case $x in a) rm y;; esac"), ["rm"]);
    assert_eq!(programs("f() { rm x; }; f"), ["rm", "f"]);
    assert_eq!(programs("ls <(rm x)"), ["rm", "ls"]);
    assert_eq!(programs("echo ${X:-$(rm x)}"), ["rm", "echo"]);
    assert_eq!(programs("cat <<EOF\n$(rm x)\nEOF"), ["cat", "rm"]);
}

#[test]
fn resolves_quotes_and_escapes() {
    for line in ["\\rm x", "\"rm\" x", "r\\m x", "'r'm x", "$'\\x72m' x", "rm\tx"] {
        let a = analyze(line);
        assert_eq!(a.commands[0].program_name(), Some("rm"), "{line}");
        assert!(a.is_clean(), "{line}: {:?}", a.hazards);
    }
    assert_eq!(analyze("/bin/rm x").commands[0].program_name(), Some("rm"));
}

#[test]
fn looks_through_wrappers() {
    let cases: &[(&str, &[&str])] = &[
        ("FOO=1 rm x", &["rm"]),
        ("command rm x", &["command", "rm"]),
        ("env rm x", &["env", "rm"]),
        ("env -i A=1 B=2 rm x", &["env", "rm"]),
        ("nice -n 5 rm x", &["nice", "rm"]),
        ("nice -10 rm x", &["nice", "rm"]),
        ("timeout 5 rm x", &["timeout", "rm"]),
        ("timeout -s KILL 5 rm x", &["timeout", "rm"]),
        ("time rm x", &["time", "rm"]),
        ("exec rm x", &["exec", "rm"]),
        ("xargs rm", &["xargs", "rm"]),
        ("xargs -0 -n 1 rm -f", &["xargs", "rm"]),
        ("stdbuf -oL rm x", &["stdbuf", "rm"]),
        ("sudo -u root rm x", &["sudo", "rm"]),
        ("nohup rm x", &["nohup", "rm"]),
        ("builtin cd /", &["builtin", "cd"]),
        ("bash -c 'rm x'", &["bash", "rm"]),
        ("sh -ec 'ls; rm x'", &["sh", "ls", "rm"]),
        ("eval 'rm x'", &["eval", "rm"]),
        ("find . -exec rm {} ;", &["find", "rm"]),
        ("timeout 5 env nice rm x", &["timeout", "env", "nice", "rm"]),
    ];
    for (line, want) in cases {
        assert_eq!(programs(line), *want, "{line}");
    }
}

#[test]
fn reports_hazards() {
    let cases: &[(&str, Hazard)] = &[
        ("ls $(touch X)", Hazard::CommandSubstitution),
        ("ls `touch X`", Hazard::CommandSubstitution),
        ("ls <(touch X)", Hazard::ProcessSubstitution),
        ("ls > f", Hazard::WriteRedirect("f".into())),
        ("ls >> f", Hazard::WriteRedirect("f".into())),
        ("ls 2>f", Hazard::WriteRedirect("f".into())),
        ("ls &>f", Hazard::WriteRedirect("f".into())),
        ("ls >f 2>&1", Hazard::WriteRedirect("f".into())),
        ("echo ${X:=1}", Hazard::ExpansionSideEffect("${X:=1}".into())),
        ("echo $((x))", Hazard::Arithmetic),
        ("f() { ls; }", Hazard::FunctionDefinition("f".into())),
        ("FOO=1 ls", Hazard::Assignment("FOO".into())),
        ("$CMD x", Hazard::DynamicProgram("$CMD".into())),
        ("/bin/r? x", Hazard::DynamicProgram("/bin/r?".into())),
        ("{rm,x}", Hazard::Unparsable("a syntax error".into())),
        ("eval \"$X\"", Hazard::OpaqueCode("eval of a non-literal".into())),
        ("source x.sh", Hazard::OpaqueCode("source runs a file".into())),
        ("bash", Hazard::OpaqueCode("bash reads commands from stdin".into())),
        ("PATH=/tmp ls", Hazard::Rebinding("assigns PATH".into())),
        ("ls )", Hazard::Unparsable("a syntax error".into())),
    ];
    for (line, want) in cases {
        let a = analyze(line);
        assert!(a.hazards.contains(want), "{line}: {:?}", a.hazards);
    }
}

#[test]
fn harmless_lines_have_no_hazards() {
    for line in [
        "ls -la",
        "ls 2>/dev/null",
        "ls > /dev/null 2>&1",
        "grep -rn foo src | head -5",
        "LANG=C sort x",
        "LC_ALL=C ls",
        "git status && git log --oneline -3",
        "echo \"$HOME\"",
        "cat <<'EOF'\n$(rm x)\nEOF",
        "echo $((1 + 2))",
        "ls # a comment",
    ] {
        let a = analyze(line);
        assert!(a.is_clean(), "{line}: {:?}", a.hazards);
    }
}

#[test]
fn input_redirections_are_reads_and_cd_is_noticed() {
    let a = analyze("cat < /etc/passwd");
    assert_eq!(a.reads, [Word::literal("/etc/passwd")]);
    assert!(analyze("cd /etc && cat passwd").changes_directory);
    assert!(analyze("env -C /etc cat passwd").changes_directory);
}
