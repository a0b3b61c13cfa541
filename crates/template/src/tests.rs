//! The command templates end to end: quoting and running under `sh`, values, errors,
//! names and `where` conditions.

use minijinja::value::Value;

use super::*;

fn ctx(pairs: &[(&str, Value)]) -> Context {
    let mut c = Context::new();
    for (k, v) in pairs {
        c.set(k, v.clone());
    }
    c
}

/// Render `template` and run it with `sh -c` (or `shell`) and its values in the
/// environment, as a trial would: the command and what it printed.
fn run_in(shell: &str, t: &Templates, template: &str, c: &Context) -> (String, String) {
    let mut env = Vec::new();
    let command = t.render_command(template, c, &mut env).unwrap();
    let out = std::process::Command::new(shell).arg("-c").arg(&command).envs(env).output().unwrap();
    assert!(out.status.success(), "{template}\n→ {command}\n{}", String::from_utf8_lossy(&out.stderr));
    (command, String::from_utf8(out.stdout).unwrap())
}

#[test]
fn plain_values_are_written_and_others_referred_to() {
    let t = Templates::new();
    let c = ctx(&[
        ("bs", Value::from("a b; touch pwned")),
        ("n", Value::from(3)),
        ("f", Value::from("/tmp/x.dat")),
    ]);
    let mut env = Vec::new();
    let out = t.render_command("dd bs={{ bs }} count={{ n }} of={{ f }} if={{ bs }}", &c, &mut env).unwrap();
    let v1 = "${MARGIN_VALUE_1+\"${MARGIN_VALUE_1}\"}";
    assert_eq!(out, format!("dd bs={v1} count=3 of=/tmp/x.dat if={v1}"));
    assert_eq!(env, [("MARGIN_VALUE_1".to_string(), "a b; touch pwned".to_string())]);
    // the next command of the cell adds to the same variables
    let out = t.render_command("echo \"{{ bs }}\" '{{ bs | upper }}'", &c, &mut env).unwrap();
    assert_eq!(out, format!("echo \"{v1}\" ''${{MARGIN_VALUE_2+\"${{MARGIN_VALUE_2}}\"}}''"));
    assert_eq!(env[1].1, "A B; TOUCH PWNED");
    let raw = t.render_command("echo {{ bs | safe }}", &c, &mut env).unwrap();
    assert_eq!(raw, "echo a b; touch pwned", "`| safe` pastes the text as it is");
    // `| e` would mark the value safe, and so paste it: not offered
    let err = t.render_command("echo {{ bs | e }}", &c, &mut env).unwrap_err();
    assert!(err.message.contains("unknown filter"), "{err:?}");
}

/// Each template through `sh -c`, with a value full of shell syntax: nothing of it
/// runs, and it comes out as itself, wherever it lands.
#[test]
fn a_value_is_never_run_wherever_it_lands() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let evil = format!(
        "$(touch {d}/a) `touch {d}/b` \"; touch {d}/c; \" ' ; touch {d}/d ; ' \\ $HOME\nEOF\ntouch {d}/e #"
    );
    let t = Templates::new();
    let c = ctx(&[("x", Value::from(evil.clone()))]);
    let cases = [
        ("printf '%s\\n' {{ x }}", evil.clone()),
        ("printf '%s\\n' \"{{ x }}\"", evil.clone()),
        ("printf '%s\\n' \"v={{ x | trim }}!\"", format!("v={}!", evil.trim())),
        ("printf '%s\\n' \"{{- x -}}\"", evil.clone()),
        ("printf '%s\\n' '{{ x }}'", evil.clone()),
        ("printf '%s\\n' 'a{# a ' comment #}{{ x }}b'", format!("a{evil}b")),
        ("{% if true %}printf '%s\\n' \"{% endif %}{{ x }}\"", evil.clone()),
        ("printf '%s\\n' \\\"{{ x }}", format!("\"{evil}")),
        ("# don't quote x here\nprintf '%s\\n' {{ x }}", evil.clone()),
        ("printf '%s\\n' {{ x }} # it's {{ x }}", evil.clone()),
        ("printf '%s\\n' \"got: $(printf '%s' {{ x }})\"", format!("got: {evil}")),
        ("printf '%s\\n' \"got: $(printf '%s' \"{{ x }}\")\"", format!("got: {evil}")),
        ("printf '%s\\n' \"got: `printf '%s' {{ x }}`\"", format!("got: {evil}")),
        ("printf '%s\\n' `printf '%s' \"{{ x }}\"`", evil.split_whitespace().collect::<Vec<_>>().join("\n")),
        ("printf '%s\\n' \"${NOT_SET:-\"{{ x }}\"}\"", evil.clone()),
        ("{% set p = '%}' %}printf '%s\\n' \"{{ x }}\"", evil.clone()),
        ("printf '%s\\n' \"{% raw %}{{ x }}{% endraw %}\" {{ x }}", format!("{{{{ x }}}}\n{evil}")),
        ("cat <<EOF\nvalue {{ x }}\nEOF", format!("value {evil}")),
        ("cat <<EOF\n$(printf '%s' \"{{ x }}\")\nEOF", evil.clone()),
        ("echo $(( 1 << 2 ))\nprintf '%s\\n' \"{{ x }}\"", format!("4\n{evil}")),
    ];
    for (template, expected) in cases {
        let (command, out) = run_in("sh", &t, template, &c);
        let ran: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(ran.is_empty(), "{template}\n→ {command}\nran part of the value: {ran:?}");
        assert_eq!(out, expected + "\n", "{template}\n→ {command}");
    }
    // where margin misreads the shell (a backslash before the value, a `case` pattern's
    // `)` in `$( … )`, `<<` in arithmetic, a comment's end, branches, raw blocks), the
    // command may make no sense, but nothing of the value runs
    for template in [
        "bytes=$(( 1 << 20 ))\ntaskset -c {{ x }} true",
        "out=\"$(case a in a) \"{{ x }}\" ;; esac)\"",
        "start=`date +%s # seconds`; {{ x }}",
        "{% if false %}ssh h \"{% endif %}{{ x }} /out{% if false %}\"{% endif %}",
        "echo {% raw %}\"{{ l }}{% endraw %}\"; {{ x }}",
        "echo a\\ #b; {{ x }}",
        "echo x\u{a0}# nbsp; {{ x }}",
        "printf '%s\\n' \\{{ x }} \"; {{ x }} #\"",
        "printf '%s\\n' \"$(case a in a) echo '\"';; esac) {{ x }}\"",
        "{% filter lower %}printf '%s\\n' \"{{ x }}\"{% endfilter %}",
        "printf '%s\\n' \\{{ x }}",
        "printf '%s\\n' \"\\{{ x }}\"",
        "printf '%s\\n' \\\\{{ x }}",
    ] {
        let mut env = Vec::new();
        let command = t.render_command(template, &c, &mut env).unwrap();
        let _ = std::process::Command::new("sh").arg("-c").arg(&command).envs(env).output().unwrap();
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none(), "{template}\n→ {command}");
    }
    // a here-document's delimiter as a value would end it: refused
    let eof = ctx(&[("x", Value::from("EOF"))]);
    let err = t.render_command("cat <<EOF\n{{ x }}\nEOF", &eof, &mut Vec::new()).unwrap_err();
    assert!(err.message.contains("delimiter"), "{err:?}");
    // bash evaluates what arithmetic reads: numbers only
    let (_, out) = run_in("sh", &t, "echo $(( {{ n }} * 2 ))", &ctx(&[("n", Value::from(21))]));
    assert_eq!(out, "42\n");
    let err = t.render_command("echo $(( {{ x }} * 2 ))", &c, &mut Vec::new()).unwrap_err();
    assert!(err.message.contains("`$(( … ))`"), "{err:?}");
    // {% autoescape %} would mark values safe: refused
    let err = t.render_command("{% autoescape true %}echo {{ x }}{% endautoescape %}", &c, &mut Vec::new());
    assert!(err.unwrap_err().message.contains("autoescape"));
    // bash's $'…', where `\` escapes and `\'` does not end it
    let (command, out) = run_in("bash", &t, "printf '%s\\n' $'a\\tb\\' {{ x }}'", &c);
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none(), "{command}");
    assert_eq!(out, format!("a\tb' {evil}\n"), "{command}");
    // a quoted here-document expands nothing: plain text goes in, anything else is refused
    let plain = ctx(&[("x", Value::from("4k"))]);
    let (_, out) = run_in("sh", &t, "cat <<'EOF'\nvalue {{ x }}\nEOF", &plain);
    assert_eq!(out, "value 4k\n");
    let err = t.render_command("cat <<'EOF'\n{{ x }}\nEOF", &c, &mut Vec::new()).unwrap_err();
    assert!(err.message.contains("in a quoted here-document"), "{err:?}");
    // `| q` quotes for a shell that reads the string again
    let (command, out) = run_in("sh", &t, "sh -c \"printf '%s\\n' {{ x | q }}\"", &c);
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none(), "{command}");
    assert_eq!(out, evil.clone() + "\n", "{command}");
    let (_, out) = run_in("sh", &t, "sh -c 'printf \"%s\\n\" {{ x | q }}'", &c);
    assert_eq!(out, evil.clone() + "\n");
}

#[test]
fn values_are_not_quoted() {
    let t = Templates::new();
    let c = ctx(&[("workdir", Value::from("/tmp/a b"))]);
    assert_eq!(t.render_value("{{ workdir }}/zero.tst", &c).unwrap(), "/tmp/a b/zero.tst");
}

#[test]
fn undefined_names_are_errors() {
    let t = Templates::new();
    let err = t.render_command("echo {{ nope }}", &Context::new(), &mut Vec::new()).unwrap_err();
    assert!(err.message.contains("undefined"), "{err:?}");
}

#[test]
fn syntax_errors_carry_the_template_line() {
    let t = Templates::new();
    let err = t.names("echo ok\necho {{ x }").unwrap_err();
    assert_eq!(err.line, Some(2));
    assert!(err.message.contains("syntax error"), "{err:?}");
}

#[test]
fn names_excludes_loop_variables() {
    let t = Templates::new();
    let names = t.names("{% for i in items %}{{ i }}{{ bs }}{% endfor %}").unwrap();
    let mut names: Vec<_> = names.into_iter().collect();
    names.sort();
    assert_eq!(names, ["bs", "items"]);
}

#[test]
fn conditions_evaluate_per_cell() {
    let t = Templates::new();
    let f = t.condition("not (pin == 'pinned' and bs == '100M')").unwrap();
    let keep = ctx(&[("pin", Value::from("pinned")), ("bs", Value::from("1k"))]);
    let drop = ctx(&[("pin", Value::from("pinned")), ("bs", Value::from("100M"))]);
    assert!(f.keeps(keep).unwrap());
    assert!(!f.keeps(drop).unwrap());
}

/// The variables are numbered per cell: a render starts where the cell's earlier commands
/// left off (inside a macro too), and a render that fails adds none.
#[test]
fn a_cells_commands_share_their_variables() {
    let t = Templates::new();
    let c = ctx(&[("a", Value::from("x y")), ("b", Value::from("p q")), ("bad", Value::from("EOF"))]);
    let var = |n: usize| format!("${{MARGIN_VALUE_{n}+\"${{MARGIN_VALUE_{n}}}\"}}");
    let mut env = Vec::new();
    assert_eq!(t.render_command("echo {{ a }}", &c, &mut env).unwrap(), format!("echo {}", var(1)));
    let failed = t.render_command("echo {{ b }}\ncat <<EOF\n{{ bad }}\nEOF", &c, &mut env);
    assert!(failed.unwrap_err().message.contains("delimiter"));
    assert_eq!(env.len(), 1, "{env:?}");
    // the macro's body is the first to need a variable: it still numbers from the cell's
    let template =
        "{% macro m(v) %}{{ v }}{% endmacro %}{% set s = m(b) %}{% for v in [a] %}{{ v }}{% endfor %}";
    assert_eq!(t.render_command(template, &c, &mut env).unwrap(), var(1));
    assert_eq!(env, [("MARGIN_VALUE_1".into(), "x y".into()), ("MARGIN_VALUE_2".into(), "p q".into())]);
    // another cell starts from none
    let mut other = Vec::new();
    assert_eq!(t.render_command("echo {{ b }}", &c, &mut other).unwrap(), format!("echo {}", var(1)));
}

#[test]
fn a_runaway_render_runs_out_of_fuel() {
    let t = Templates::new();
    for template in [
        "{{ 'a' * 100000000 }}",
        "{% for i in 'a' * 10000 %}{% for j in 'a' * 10000 %}.{% endfor %}{% endfor %}",
    ] {
        let err = t.render_command(template, &Context::new(), &mut Vec::new()).unwrap_err();
        assert!(err.message.starts_with("the template was stopped after"), "{err:?}");
        assert!(err.hint.is_some());
        let err = t.render_value(template, &Context::new()).unwrap_err();
        assert!(err.message.starts_with("the template was stopped after"), "{err:?}");
    }
}
