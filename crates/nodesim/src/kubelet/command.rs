//! The container-command convention: what a simulated container's argv would do, without running it.
//!
//! A container whose argv (`command` then `args`) is `sleep N`, `true`, `false`, `echo …`, `exit N`,
//! or a shell (`sh`, `/bin/sh`, `bash`, `/bin/bash`) given `-c "<script>"` where the script is a list
//! of those separated by `;`, `&&` or newlines, *runs*: for the sum of its sleeps, printing what its
//! `echo`s print, and exits with the status a shell would give. Anything else runs until stopped.
//! See the crate docs for the exact rules.

use std::time::Duration;

use k8s_openapi::api::core::v1::Container;

/// The longest output kept per run of a container; earlier output is dropped.
pub const MAX_OUTPUT_BYTES: usize = 4096;

/// What a container does once started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Program {
    /// Follows the convention: terminates on its own.
    Runs(Run),
    /// Any other container: runs until stopped.
    UntilStopped,
}

/// One run of a container that follows the convention.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Run {
    /// How long it runs: the sum of the sleeps executed.
    pub duration: Duration,
    /// Its exit status (0–255).
    pub exit_code: i32,
    /// What it printed: each `echo`'s text with its time since the start of the run.
    pub output: Vec<(Duration, String)>,
}

/// The program of `container`: its argv is `command` followed by `args`. Without `command` the
/// image's entrypoint is unknown; `args` alone count as the argv, as for images without an
/// entrypoint (busybox, alpine, ubuntu).
pub fn program(container: &Container) -> Program {
    let argv: Vec<&str> = container
        .command
        .iter()
        .flatten()
        .chain(container.args.iter().flatten())
        .map(String::as_str)
        .collect();
    program_of(&argv)
}

/// The program of an argv.
pub fn program_of(argv: &[&str]) -> Program {
    let commands = match argv {
        [shell, "-c", script, ..] if is_shell(shell) => match parse_script(script) {
            Some(list) => list,
            None => return Program::UntilStopped,
        },
        [] => return Program::UntilStopped,
        words => match Command::parse(words) {
            Some(command) => vec![(Separator::Semicolon, command)],
            None => return Program::UntilStopped,
        },
    };
    execute(&commands).map_or(Program::UntilStopped, Program::Runs)
}

fn is_shell(word: &str) -> bool {
    matches!(word, "sh" | "/bin/sh" | "bash" | "/bin/bash")
}

/// One command of the convention.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Command {
    /// `sleep` for this long; `None` for `sleep infinity`.
    Sleep(Option<Duration>),
    /// `true` (status 0) or `false` (status 1).
    Status(i32),
    /// `echo`: prints this text.
    Echo(String),
    /// `exit N`, or `exit` with the last status (`None`).
    Exit(Option<i32>),
}

/// What separates a command from the one before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Separator {
    /// `;` or a newline: run regardless.
    Semicolon,
    /// `&&`: run only when the previous status is 0.
    And,
}

impl Command {
    /// Parses one command from its words (already unquoted). `None`: not part of the convention.
    fn parse(words: &[&str]) -> Option<Self> {
        let (name, args) = words.split_first()?;
        let name = name
            .strip_prefix("/usr/bin/")
            .or_else(|| name.strip_prefix("/bin/"))
            .unwrap_or(name);
        match name {
            "sleep" if !args.is_empty() => {
                let mut total = Duration::ZERO;
                for arg in args {
                    match parse_sleep(arg)? {
                        Some(d) => total = total.checked_add(d)?,
                        None => return Some(Self::Sleep(None)),
                    }
                }
                Some(Self::Sleep(Some(total)))
            }
            "true" => Some(Self::Status(0)),
            "false" => Some(Self::Status(1)),
            "echo" => {
                let (newline, args) = match args.first() {
                    Some(&"-n") => (false, &args[1..]),
                    _ => (true, args),
                };
                // `-e`, `-E` and friends mean different things to different shells.
                if args
                    .first()
                    .is_some_and(|a| a.starts_with('-') && a.len() > 1)
                {
                    return None;
                }
                let mut text = args.join(" ");
                if newline {
                    text.push('\n');
                }
                Some(Self::Echo(text))
            }
            "exit" => match args {
                [] => Some(Self::Exit(None)),
                [code] if !code.is_empty() && code.bytes().all(|b| b.is_ascii_digit()) => {
                    // The shell keeps the low 8 bits; only the last three digits can matter.
                    let tail = &code[code.len().saturating_sub(9)..];
                    let n: u64 = tail.parse().ok()?;
                    Some(Self::Exit(Some(i32::try_from(n % 256).ok()?)))
                }
                _ => None,
            },
            _ => None,
        }
    }
}

/// One operand of coreutils' `sleep`: a non-negative decimal number of seconds with an optional
/// `s`, `m`, `h` or `d` suffix. `Some(None)` is `infinity`; `None` is not understood.
fn parse_sleep(arg: &str) -> Option<Option<Duration>> {
    let (number, unit) = match arg.char_indices().last()? {
        (i, 's') => (&arg[..i], 1u64),
        (i, 'm') => (&arg[..i], 60),
        (i, 'h') => (&arg[..i], 3600),
        (i, 'd') => (&arg[..i], 86_400),
        _ => (arg, 1),
    };
    if number.eq_ignore_ascii_case("inf") || number.eq_ignore_ascii_case("infinity") {
        return Some(None);
    }
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    if !whole
        .bytes()
        .chain(fraction.bytes())
        .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    // Nanosecond precision: further digits are dropped.
    let digits = &fraction[..fraction.len().min(9)];
    let nanos: u64 = if digits.is_empty() {
        0
    } else {
        digits.parse::<u64>().ok()? * 10u64.pow(9 - u32::try_from(digits.len()).ok()?)
    };
    let total_nanos = u128::from(whole)
        .checked_mul(1_000_000_000)?
        .checked_add(u128::from(nanos))?
        .checked_mul(u128::from(unit))?;
    let secs = u64::try_from(total_nanos / 1_000_000_000).ok()?;
    let sub = u32::try_from(total_nanos % 1_000_000_000).ok()?;
    Some(Some(Duration::new(secs, sub)))
}

/// Splits a `-c` script into its commands. `None` when it uses anything beyond the convention.
fn parse_script(script: &str) -> Option<Vec<(Separator, Command)>> {
    let mut commands = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    // Whether `word` holds a word, even an empty quoted one (`echo ""`).
    let mut in_word = false;
    let mut separator = Separator::Semicolon;
    let mut chars = script.chars().peekable();

    // Ends the current command; `next` separates it from the following one.
    let end_command = |words: &mut Vec<String>,
                       separator: &mut Separator,
                       next: Separator,
                       commands: &mut Vec<(Separator, Command)>|
     -> Option<()> {
        if words.is_empty() {
            // An empty command is only allowed between newlines or at the end after `;`.
            if next == Separator::And || *separator == Separator::And {
                return None;
            }
            return Some(());
        }
        let refs: Vec<&str> = words.iter().map(String::as_str).collect();
        commands.push((*separator, Command::parse(&refs)?));
        words.clear();
        *separator = next;
        Some(())
    };

    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => word.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '$' | '`' | '\\' => return None,
                        c => word.push(c),
                    }
                }
            }
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            ';' | '\n' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
                if c == ';' && words.is_empty() && !commands.is_empty() {
                    // `a; ;` is a syntax error in sh.
                    return None;
                }
                end_command(
                    &mut words,
                    &mut separator,
                    Separator::Semicolon,
                    &mut commands,
                )?;
            }
            '&' => {
                if chars.next() != Some('&') {
                    return None;
                }
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
                if words.is_empty() {
                    return None;
                }
                end_command(&mut words, &mut separator, Separator::And, &mut commands)?;
            }
            c if c.is_ascii_alphanumeric() || "-_./:,+=@%^~".contains(c) => {
                in_word = true;
                word.push(c);
            }
            // Pipes, redirections, variables, globs, subshells, comments, escapes, other blanks.
            _ => return None,
        }
    }
    if in_word {
        words.push(word);
    }
    if words.is_empty() && separator == Separator::And {
        return None;
    }
    end_command(
        &mut words,
        &mut separator,
        Separator::Semicolon,
        &mut commands,
    )?;
    (!commands.is_empty()).then_some(commands)
}

/// Runs the commands as `sh` would. `None` when the program never ends (`sleep infinity`).
fn execute(commands: &[(Separator, Command)]) -> Option<Run> {
    let mut run = Run::default();
    let mut status = 0;
    for (separator, command) in commands {
        if *separator == Separator::And && status != 0 {
            continue;
        }
        match command {
            Command::Sleep(None) => return None,
            Command::Sleep(Some(d)) => {
                run.duration = run.duration.checked_add(*d)?;
                status = 0;
            }
            Command::Status(code) => status = *code,
            Command::Echo(text) => {
                run.output.push((run.duration, text.clone()));
                status = 0;
            }
            Command::Exit(code) => {
                status = code.unwrap_or(status);
                break;
            }
        }
    }
    run.exit_code = status;
    Some(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(argv: &[&str]) -> Option<(Duration, i32, String)> {
        match program_of(argv) {
            Program::Runs(r) => Some((
                r.duration,
                r.exit_code,
                r.output.iter().map(|(_, t)| t.as_str()).collect(),
            )),
            Program::UntilStopped => None,
        }
    }

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn plain_commands_follow_the_convention() {
        assert_eq!(run(&["sleep", "5"]), Some((secs(5.0), 0, String::new())));
        assert_eq!(
            run(&["/bin/sleep", "1", "2"]),
            Some((secs(3.0), 0, String::new()))
        );
        assert_eq!(run(&["true"]), Some((Duration::ZERO, 0, String::new())));
        assert_eq!(run(&["false"]), Some((Duration::ZERO, 1, String::new())));
        assert_eq!(
            run(&["exit", "3"]),
            Some((Duration::ZERO, 3, String::new()))
        );
        assert_eq!(
            run(&["exit", "256"]),
            Some((Duration::ZERO, 0, String::new()))
        );
        assert_eq!(
            run(&["echo", "hello", "world"]),
            Some((Duration::ZERO, 0, "hello world\n".into()))
        );
        assert_eq!(
            run(&["echo", "-n", "hi"]),
            Some((Duration::ZERO, 0, "hi".into()))
        );
        assert_eq!(run(&["echo"]), Some((Duration::ZERO, 0, "\n".into())));
    }

    #[test]
    fn sleep_accepts_what_coreutils_accepts() {
        let cases = [
            ("5", Some(Some(secs(5.0)))),
            ("0.5", Some(Some(secs(0.5)))),
            (".25", Some(Some(secs(0.25)))),
            ("2.", Some(Some(secs(2.0)))),
            ("3s", Some(Some(secs(3.0)))),
            ("1.5m", Some(Some(secs(90.0)))),
            ("2h", Some(Some(secs(7200.0)))),
            ("1d", Some(Some(secs(86_400.0)))),
            ("infinity", Some(None)),
            ("inf", Some(None)),
            ("", None),
            (".", None),
            ("-1", None),
            ("1e3", None),
            ("5x", None),
            ("1ms", None),
        ];
        for (arg, want) in cases {
            assert_eq!(parse_sleep(arg), want, "{arg:?}");
        }
    }

    #[test]
    fn scripts_run_as_a_shell_would() {
        assert_eq!(
            run(&["sh", "-c", "sleep 2; echo done"]),
            Some((secs(2.0), 0, "done\n".into()))
        );
        assert_eq!(
            run(&["/bin/sh", "-c", "echo a && false && echo b; echo c"]),
            Some((Duration::ZERO, 0, "a\nc\n".into()))
        );
        assert_eq!(
            run(&["bash", "-c", "sleep 1 && false"]),
            Some((secs(1.0), 1, String::new()))
        );
        assert_eq!(
            run(&["/bin/bash", "-c", "echo x; exit 4; sleep 100"]),
            Some((Duration::ZERO, 4, "x\n".into()))
        );
        assert_eq!(
            run(&["sh", "-c", "false; exit"]),
            Some((Duration::ZERO, 1, String::new()))
        );
        assert_eq!(
            run(&["sh", "-c", "false && sleep 5 && echo never"]),
            Some((Duration::ZERO, 1, String::new()))
        );
        assert_eq!(
            run(&["sh", "-c", "sleep 1\nsleep 2\n"]),
            Some((secs(3.0), 0, String::new()))
        );
    }

    #[test]
    fn echo_quoting_is_honoured() {
        assert_eq!(
            run(&["sh", "-c", r#"echo "hello   world" 'it''s' "" x"#]),
            Some((Duration::ZERO, 0, "hello   world its  x\n".into()))
        );
        assert_eq!(
            run(&["sh", "-c", r#"echo 'a;b && c'"#]),
            Some((Duration::ZERO, 0, "a;b && c\n".into()))
        );
    }

    #[test]
    fn output_is_stamped_with_its_time_in_the_run() {
        let Program::Runs(r) = program_of(&["sh", "-c", "echo a; sleep 2; echo b"]) else {
            panic!("follows the convention");
        };
        assert_eq!(
            r.output,
            vec![
                (Duration::ZERO, "a\n".to_string()),
                (secs(2.0), "b\n".to_string())
            ]
        );
    }

    #[test]
    fn anything_else_runs_until_stopped() {
        for argv in [
            &[][..],
            &["nginx"],
            &["sleep"],
            &["sleep", "infinity"],
            &["sh", "-c", "sleep 1; sleep infinity"],
            &["sleep", "abc"],
            &["sh", "-c", "echo $HOME"],
            &["sh", "-c", "echo \"$HOME\""],
            &["sh", "-c", "echo a | cat"],
            &["sh", "-c", "echo a > /tmp/x"],
            &["sh", "-c", "false || true"],
            &["sh", "-c", "echo a &"],
            &["sh", "-c", "sleep 1 &&"],
            &["sh", "-c", "&& true"],
            &["sh", "-c", "true; ;"],
            &["sh", "-c", "echo 'unterminated"],
            &["sh", "-c", "echo a\\nb"],
            &["sh", "-c", "nginx -g daemon"],
            &["sh", "-c", ""],
            &["sh", "-x", "true"],
            &["echo", "-e", "a"],
            &["exit", "1", "2"],
            &["exit", "-1"],
            &["perl", "-Mbignum=bpi", "-wle", "print bpi(2000)"],
        ] {
            assert_eq!(program_of(argv), Program::UntilStopped, "{argv:?}");
        }
    }

    #[test]
    fn argv_is_command_then_args() {
        let container = Container {
            name: "c".into(),
            command: Some(vec!["sh".into(), "-c".into()]),
            args: Some(vec!["exit 2".into()]),
            ..Default::default()
        };
        assert!(matches!(
            program(&container),
            Program::Runs(Run { exit_code: 2, .. })
        ));
        let args_only = Container {
            name: "c".into(),
            args: Some(vec!["sleep".into(), "1".into()]),
            ..Default::default()
        };
        assert!(matches!(program(&args_only), Program::Runs(_)));
        let image_only = Container {
            name: "c".into(),
            image: Some("busybox".into()),
            ..Default::default()
        };
        assert_eq!(program(&image_only), Program::UntilStopped);
    }
}
