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

/// A valued option at the end of a wrapper's words has no value and no command after
/// it (the fuzzer found `xargs -n` reading past the end of the words).
#[test]
fn a_wrapper_ending_in_a_valued_option_runs_nothing_more() {
    let cases: &[(&str, &[&str])] = &[
        ("xargs -n", &["xargs"]),
        ("sudo timeout 5 nice xargs -n", &["sudo", "timeout", "nice", "xargs"]),
        ("nice -n", &["nice"]),
        ("timeout -s", &["timeout"]),
        ("sudo -u", &["sudo"]),
        ("env -u", &["env"]),
        ("time -o", &["time"]),
        ("xargs --max-args", &["xargs"]),
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

/// The words of every command found, as text.
fn command_words(line: &str) -> Vec<Vec<String>> {
    analyze(line).all_commands().map(|c| c.words.iter().map(|w| w.text.clone()).collect()).collect()
}

#[test]
fn tests_and_arithmetic_are_commands() {
    assert_eq!(command_words("[[ -f x ]] || ls"), [vec!["[[", "-f", "x", "]]"], vec!["ls"]]);
    assert_eq!(command_words("[ -f x -a -n y ]; ls"), [vec!["[", "-f", "x", "-a", "-n", "y", "]"], vec!["ls"]]);
    assert_eq!(command_words("[[ ! -v x ]]"), [vec!["[[", "!", "-v", "x", "]]"]]);
    assert_eq!(command_words("(( 1 + 2 )) && ls"), [vec!["((", "1 + 2", "))"], vec!["ls"]]);
    assert_eq!(command_words("[[ $(rm x) == y ]]"), [vec!["rm", "x"], vec!["[[", "$(rm x)", "==", "y", "]]"]]);
}

#[test]
fn braces_expand_into_words() {
    assert_eq!(command_words("cat secret{s,}/key"), [vec!["cat", "secrets/key", "secret/key"]]);
    assert_eq!(command_words("cat .en{v,}"), [vec!["cat", ".env", ".en"]]);
    assert_eq!(command_words("cat '.en'{v,}"), [vec!["cat", ".env", ".en"]]);
    assert_eq!(command_words("cat '{a,b}' \\{c,d\\}"), [vec!["cat", "{a,b}", "{c,d}"]]);
    assert_eq!(command_words("l{s,} -la"), [vec!["ls", "l", "-la"]]);
    assert_eq!(command_words("[ -f {a,b} ]"), [vec!["[", "-f", "a", "b", "]"]]);
    assert_eq!(command_words("git log HEAD@{1}"), [vec!["git", "log", "HEAD@{1}"]]);
    let a = analyze("cat x{1..1000}");
    assert_eq!(a.commands[0].words[1], Word::dynamic("x{1..1000}"));
    let a = analyze("cat src/{a,b}*.rs");
    assert_eq!(a.commands[0].words[1], Word { text: "src/a*.rs".into(), kind: WordKind::Pattern });
}

/// Whether the line has a hazard that hides what it runs.
fn opaque(line: &str) -> bool {
    analyze(line).is_opaque()
}

#[test]
fn evaluated_subscripts_are_opaque_whatever_their_quoting() {
    for line in [
        "[[ 1 -eq 'a[$(touch X)]' ]] || ls",
        "[[ 'a[$(touch X)]' -gt 1 ]]",
        "[[ -v 'a[$(touch X)]' ]]; ls",
        "[[ -R 'a[$(touch X)]' ]]",
        "[ -v 'a[$(touch X)]' ]; ls",
        "test -v 'a[$(touch X)]'",
        "(( 'a[$(touch X)]' )); ls",
        "(( a[1] ))",
        "echo $(( '$(touch X)' ))",
        "echo $[ 'a[$(touch X)]' ]",
        "echo $(( $(cat f) + 1 ))",
        "let 'x=a[$(touch X)]'",
        "let x='a[$(touch X)]'",
        "declare -i x='a[$(touch X)]'",
        "declare 'b[$(touch X)]=1'",
        "local -n r='a[$(touch X)]'",
        "echo ${x['$(touch X)']}",
        "echo ${x:'$(touch X)'}",
        "a['$(touch X)']=1",
        "x=(['$(touch X)']=1)",
        "printf -v 'a[$(touch X)]' %s x",
        "printf -v\"$n\" %s x",
        "read 'a[$(touch X)]' < f",
        "read -a 'a[$(touch X)]' < f",
        "mapfile 'a[$(touch X)]' < f",
        "unset 'a[$(touch X)]'",
        "echo $(( $1 + 1 ))",
        "echo $(( _ ))",
        "read x < f; echo $(( x ))",
        "x=$(cat f); [[ $x -eq 1 ]]",
        "for f in *; do echo $(( f )); done",
        "bash -c 'echo $(( $1 ))' _ 'a[$(touch X)]'",
        "env x='a[$(touch X)]' bash -c 'echo $((x))'",
    ] {
        assert!(opaque(line), "{line}: {:?}", analyze(line).hazards);
    }
    for line in [
        "[[ $n -eq 1 ]]",
        "[[ 1 -eq 2 ]]",
        "[ 1 -eq 'a[$(touch X)]' ]",
        "echo $(( x + 1 ))",
        "echo $(( ${#a[@]} + 1 ))",
        "for i in 1 2 {3..5}; do echo $(( i * 2 )); done",
        "n=0; n=$(( n + 1 )); echo $n",
        "for ((i = 0; i < 3; i++)); do echo $i; done",
        "local re='^[a-z]+$'",
        "[[ $x =~ ^a[bc]$ ]]",
    ] {
        assert!(!opaque(line), "{line}: {:?}", analyze(line).hazards);
    }
    assert!(analyze("[[ 1 -eq 2 ]] && echo $(( 3 * 4 ))").is_clean());
}

#[test]
fn shells_that_read_other_files_are_opaque() {
    for line in [
        "bash --rcfile FILE -i -c ls",
        "bash --init-file FILE -c ls",
        "bash -i -c ls",
        "bash -l -c ls",
        "bash --login -c ls",
        "bash -ic ls",
        "bash --debugger -c ls",
        "bash -O extdebug -c ls",
        "bash -s",
        "sh -i -c ls",
        "bash script.sh",
        "zsh -c ls",
        "fish -c ls",
        "ksh -c ls",
        "bash $OPT -c ls",
    ] {
        assert!(opaque(line), "{line}: {:?}", analyze(line).hazards);
    }
    for line in ["bash -c ls", "bash -e -o pipefail -c 'ls'", "sh -ec ls", "bash --norc --noprofile -c ls"] {
        let a = analyze(line);
        assert!(a.is_clean(), "{line}: {:?}", a.hazards);
        assert_eq!(a.all_commands().last().and_then(|c| c.program_name()), Some("ls"), "{line}");
    }
}

#[test]
fn callbacks_are_commands_and_coproc_is_opaque() {
    assert_eq!(programs("compgen -C 'rm x' x"), ["compgen", "rm"]);
    assert_eq!(programs("compgen -F rm x"), ["compgen", "rm"]);
    assert_eq!(programs("complete -C 'rm x' git"), ["complete", "rm"]);
    assert_eq!(programs("mapfile -t -C 'rm x' -c 1 lines < f"), ["mapfile", "rm"]);
    assert_eq!(programs("readarray -C'rm x' < f"), ["readarray", "rm"]);
    assert_eq!(analyze("compgen -C 'rm x' x").commands[0].wrapper, Wrapper::Privileged);
    for line in [
        "coproc rm x",
        "coproc { rm x; }",
        "coproc NAME { rm x; }",
        "compgen -W '$(rm x)' x",
        "compgen -C \"$X\" x",
        "compgen -V arr x",
        "mapfile -tC'rm x' < f",
        "bind -x '\"\\C-x\": rm x'",
        "fc -s",
        "time { rm x; }",
    ] {
        assert!(opaque(line), "{line}: {:?}", analyze(line).hazards);
    }
    assert!(analyze("compgen -W 'a b c' a").is_clean());
}
