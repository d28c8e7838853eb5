//! The documentation shows nothing that is not there: README.md and every
//! page under `docs/` are read, and each command, file and link they show is
//! checked against the repository (docs/development.md, "Checked
//! documentation", says what and how). Files only: no cluster, no network,
//! no process started.
//!
//! - Command lines: those of fenced `sh`/`bash`/`console` blocks (strict:
//!   a concrete `batchgate` or `kubectl kueue` line must parse with the clap
//!   definitions the binaries use) and inline code spans that start with a
//!   known program (lenient: subcommands and flags must exist, values are
//!   not parsed). Programs not checked further are on [`UNCHECKED`] with
//!   the reason.
//! - The tour in README's quick start: its commands are in the source that
//!   `batchgate dev` prints it from (and `tests/e2e_dev.rs` runs it).
//! - Flags named alone exist in the binary the page is about; the rows of
//!   docs/kubectl-kueue.md's command table name the plugin's commands and
//!   their flags.
//! - Inline code spans that are repository paths exist.
//! - Relative links point to existing files and headings.
//! - No command sits in an indented code block, out of these checks' sight.

use std::{
    collections::BTreeSet,
    fs,
    path::{Component, Path, PathBuf},
};

use clap::CommandFactory;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Programs whose command lines are checked only for the repository files
/// they name (`-f FILE`, `@FILE`), with the reason nothing more is checked.
const UNCHECKED: &[(&str, &str)] = &[
    (
        "kubectl",
        "kubectl's own commands need a cluster; the tour's are run by tests/e2e_dev.rs",
    ),
    ("curl", "needs a running webhook (see tests/webhook_tls.rs)"),
    (
        "docker",
        "needs a container engine, which this machine does not have",
    ),
    ("install", "coreutils: copies the built binary"),
    (
        "crane",
        "pushes to a registry (built by tests/cluster/build-image.sh --tools)",
    ),
    (
        "skopeo",
        "copies an image to a registry; not installed here",
    ),
    (
        "helm",
        "needs a cluster; the chart is checked by tests/e2e_helm.rs",
    ),
    ("ln", "coreutils: a symlink"),
    ("cd", "shell builtin"),
    ("export", "shell builtin"),
    ("source", "shell builtin (loads a completion script)"),
    (
        "if",
        "shell syntax (docs/install.md's blocks are run by tests/e2e_install.rs)",
    ),
    ("then", "shell syntax"),
    ("fi", "shell syntax"),
];

/// Arguments of `cargo` that run tools outside this repository.
const UNCHECKED_CARGO: &[(&str, &str)] = &[
    ("install", "installs a tool from crates.io (cargo-fuzz)"),
    ("fmt", "rustfmt; run by make lint"),
    ("clippy", "clippy; run by make lint"),
];

/// Files named in commands that are the reader's own, not this repository's.
const READERS_FILES: &[(&str, &str)] = &[
    (
        "my-v1beta1-queues.yaml",
        "the reader's own v1beta1 manifests",
    ),
    (
        "worker1-registration.yaml",
        "the reader's copy of the MultiKueue manifests shown above it",
    ),
];

/// Link targets written on another branch, not here yet: a link to one is
/// checked once the file exists (remove the entry then).
const PENDING: &[(&str, &str)] = &[];

/// Inline code spans that start like a command but are not one.
const NOT_COMMANDS: &[(&str, &str)] = &[("batchgate dev:", "the prefix of its log lines")];

/// The pages whose commands, paths and links are checked.
fn pages() -> Vec<Page> {
    let mut paths = vec![PathBuf::from("README.md"), PathBuf::from("BENCHMARKS.md")];
    let mut docs: Vec<PathBuf> = fs::read_dir(Path::new(ROOT).join("docs"))
        .expect("reading docs/")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| p.strip_prefix(ROOT).expect("under the root").to_path_buf())
        .collect();
    docs.sort();
    paths.extend(docs);
    paths.into_iter().map(Page::read).collect()
}

/// Pages whose links only are checked (other Markdown in the repository).
fn link_only_pages() -> Vec<Page> {
    [
        "docs/benchmarks/history.md",
        "certs/README.md",
        "tests/cluster/README.md",
    ]
    .iter()
    .map(|p| Page::read(PathBuf::from(p)))
    .collect()
}

struct Page {
    /// Relative to the root.
    path: PathBuf,
    text: String,
}

impl Page {
    fn read(path: PathBuf) -> Page {
        let text = fs::read_to_string(Path::new(ROOT).join(&path))
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        Page { path, text }
    }

    fn name(&self) -> String {
        self.path.display().to_string()
    }

    /// Fenced blocks: (language, first line number, lines).
    fn fences(&self) -> Vec<(String, usize, Vec<String>)> {
        let mut out = Vec::new();
        let mut open: Option<(String, usize, Vec<String>)> = None;
        for (i, line) in self.text.lines().enumerate() {
            if let Some(rest) = line.trim_start().strip_prefix("```") {
                match open.take() {
                    Some(block) => out.push(block),
                    None => open = Some((rest.trim().to_string(), i + 2, Vec::new())),
                }
            } else if let Some((_, _, lines)) = open.as_mut() {
                lines.push(line.to_string());
            }
        }
        out
    }

    /// The text outside fenced blocks, fenced lines blanked (line numbers
    /// kept).
    fn prose(&self) -> String {
        let mut fenced = false;
        self.text
            .lines()
            .map(|line| {
                if line.trim_start().starts_with("```") {
                    fenced = !fenced;
                    ""
                } else if fenced {
                    ""
                } else {
                    line
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Inline code spans outside fences: (line number, content with its
    /// line breaks as spaces).
    fn code_spans(&self) -> Vec<(usize, String)> {
        let prose = self.prose();
        let mut out = Vec::new();
        let mut rest = prose.as_str();
        let mut offset = 0;
        while let Some(start) = rest.find('`') {
            let ticks = rest[start..].chars().take_while(|c| *c == '`').count();
            let fence = "`".repeat(ticks);
            let body_start = start + ticks;
            let Some(len) = rest[body_start..].find(fence.as_str()) else {
                break;
            };
            let body = &rest[body_start..body_start + len];
            let line = prose[..offset + start].matches('\n').count() + 1;
            out.push((line, body.split_whitespace().collect::<Vec<_>>().join(" ")));
            let end = body_start + len + ticks;
            offset += end;
            rest = &rest[end..];
        }
        out
    }

    /// Markdown links outside code: (line number, target).
    fn links(&self) -> Vec<(usize, String)> {
        let prose = self.prose();
        // Code spans hold no links; blank them, keeping line breaks.
        let mut plain = String::with_capacity(prose.len());
        let mut in_code = false;
        for c in prose.chars() {
            if c == '`' {
                in_code = !in_code;
                plain.push(' ');
            } else if in_code && c != '\n' {
                plain.push(' ');
            } else {
                plain.push(c);
            }
        }
        let mut out = Vec::new();
        for (i, line) in plain.lines().enumerate() {
            let mut rest = line;
            while let Some(at) = rest.find("](") {
                let after = &rest[at + 2..];
                let Some(end) = after.find(')') else { break };
                out.push((i + 1, after[..end].trim().to_string()));
                rest = &after[end..];
            }
        }
        out
    }

    /// GitHub's anchors for this page's headings.
    fn anchors(&self) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let prose = self.prose();
        for line in prose.lines() {
            let trimmed = line.trim_start_matches('#');
            if trimmed.len() == line.len() || !trimmed.starts_with(' ') {
                continue;
            }
            let base = slug(trimmed.trim());
            let mut anchor = base.clone();
            let mut n = 1;
            while seen.contains(&anchor) {
                anchor = format!("{base}-{n}");
                n += 1;
            }
            seen.insert(anchor);
        }
        seen
    }
}

/// GitHub's heading anchor: the text without markup, lower-cased, with
/// everything but letters, digits, `-`, `_` and spaces dropped, spaces as
/// `-`.
fn slug(heading: &str) -> String {
    // A link's text stays, its target goes.
    let mut text = String::new();
    let mut rest = heading;
    while let Some(at) = rest.find("](") {
        text.push_str(&rest[..at]);
        rest = rest[at..].find(')').map_or("", |end| &rest[at + end + 1..]);
    }
    text.push_str(rest);
    text.to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// A shell command shown in a page.
struct Shown {
    at: String,
    words: Vec<String>,
    /// From a fenced block (a whole command line), not an inline fragment.
    whole: bool,
}

/// Shell words: quotes and backslashes as the shell reads them; an
/// unquoted `#` at a word's start begins a comment; `&&`, `;` and `|`
/// separate commands; redirections (`>`, `<<<`, `<(...)`) and their
/// targets are dropped.
fn shell_commands(line: &str) -> Vec<Vec<String>> {
    // A usage synopsis's ` | ` separates alternatives, not commands.
    let synopsis =
        line.contains('[') && !line.contains('\'') || line.contains("...") || line.contains('…');
    let mut commands = vec![Vec::new()];
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    let mut quote: Option<char> = None;
    let push = |commands: &mut Vec<Vec<String>>, word: &mut String, in_word: &mut bool| {
        if *in_word {
            commands
                .last_mut()
                .expect("at least one command")
                .push(std::mem::take(word));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => {
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            }
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '\\') => {
                if let Some(n) = chars.next() {
                    word.push(n);
                    in_word = true;
                }
            }
            (None, '#') if !in_word => break,
            (None, c) if c.is_whitespace() => push(&mut commands, &mut word, &mut in_word),
            (None, ';') => {
                push(&mut commands, &mut word, &mut in_word);
                commands.push(Vec::new());
            }
            (None, '|') if !synopsis && (word.is_empty() || chars.peek() == Some(&'|')) => {
                // `|` or `||` between commands; a `|` inside a word (a
                // usage synopsis's `text|json`) stays in it.
                if chars.peek() == Some(&'|') {
                    chars.next();
                }
                push(&mut commands, &mut word, &mut in_word);
                commands.push(Vec::new());
            }
            (None, '&') if chars.peek() == Some(&'&') => {
                chars.next();
                push(&mut commands, &mut word, &mut in_word);
                commands.push(Vec::new());
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    push(&mut commands, &mut word, &mut in_word);
    commands
        .into_iter()
        .map(|words| {
            let mut kept = Vec::new();
            let mut skip = false;
            for w in words {
                if skip {
                    skip = false;
                } else if w == ">" || w == "<<<" || w == "<" {
                    skip = true;
                } else if w.starts_with('>') || w.starts_with("<(") {
                    // `>file`, or a process substitution (a word of its own).
                } else {
                    kept.push(w);
                }
            }
            kept
        })
        .filter(|w| !w.is_empty())
        .collect()
}

/// Every command shown: fenced shell blocks and inline spans that start
/// with a known program.
fn shown_commands(page: &Page) -> Vec<Shown> {
    let mut out = Vec::new();
    for (lang, first, lines) in page.fences() {
        let console = lang == "console";
        if !matches!(lang.as_str(), "sh" | "bash" | "shell" | "console") {
            continue;
        }
        let mut i = 0;
        while i < lines.len() {
            let start = i;
            let mut line = lines[i].trim().to_string();
            i += 1;
            if console {
                match line.strip_prefix("$ ") {
                    Some(rest) => line = rest.to_string(),
                    None => continue,
                }
            }
            while line.ends_with('\\') && i < lines.len() {
                line.pop();
                line.push(' ');
                line.push_str(lines[i].trim());
                i += 1;
            }
            for words in shell_commands(&line) {
                out.push(Shown {
                    at: format!("{}:{}", page.name(), first + start),
                    words,
                    whole: true,
                });
            }
        }
    }
    for (line, span) in page.code_spans() {
        let starts = [
            "batchgate ",
            "/batchgate ",
            "kubectl kueue",
            "kubectl-kueue ",
            "kueuectl ",
            "make ",
            "cargo ",
        ];
        if span == "make"
            || !starts.iter().any(|s| span.starts_with(s))
            || NOT_COMMANDS.iter().any(|(n, _)| span == *n)
        {
            continue;
        }
        for words in shell_commands(&span) {
            out.push(Shown {
                at: format!("{}:{line}", page.name()),
                words,
                whole: false,
            });
        }
    }
    out
}

/// A usage synopsis rather than a command: optional parts, alternatives,
/// repetition.
fn is_synopsis(words: &[String]) -> bool {
    words.iter().any(|w| {
        w.contains('[')
            || w.contains('(')
            || w.contains('|')
            || w.contains("...")
            || w.contains('…')
    })
}

/// Checks a command line against a clap definition. Subcommands are
/// followed while words name one (or an alias); every flag must be one of
/// the command's (or an ancestor's); a whole, concrete line must parse.
fn check_cli(root: &clap::Command, words: &[String], whole: bool) -> Result<(), String> {
    let mut root = root.clone();
    root.build();
    let mut path: Vec<&clap::Command> = vec![&root];
    let mut descending = true;
    let mut i = 0;
    while i < words.len() {
        let raw = &words[i];
        i += 1;
        let w = raw.trim_matches(|c| matches!(c, '[' | ']' | '(' | ')' | ','));
        let here = *path.last().expect("the root at least");
        let name = path
            .iter()
            .map(|c| c.get_name())
            .collect::<Vec<_>>()
            .join(" ");
        if w == "--" {
            break;
        }
        if let Some(long) = w.strip_prefix("--") {
            let (long, inline) = match long.split_once('=') {
                Some((l, _)) => (l, true),
                None => (long, false),
            };
            let arg = path.iter().rev().flat_map(|c| c.get_arguments()).find(|a| {
                a.get_long() == Some(long)
                    || a.get_all_aliases().is_some_and(|al| al.contains(&long))
            });
            match arg {
                Some(a) if !inline && takes_value(a) => i += 1,
                Some(_) => {}
                None => return Err(format!("`{name}` has no flag --{long}")),
            }
        } else if let Some(shorts) = w.strip_prefix('-').filter(|s| !s.is_empty()) {
            let mut it = shorts.chars();
            let Some(first) = it.next() else { continue };
            let arg = path
                .iter()
                .rev()
                .flat_map(|c| c.get_arguments())
                .find(|a| a.get_short() == Some(first));
            match arg {
                Some(a) if it.next().is_none() && takes_value(a) => i += 1,
                Some(_) => {}
                None => return Err(format!("`{name}` has no flag -{first}")),
            }
        } else if descending && here.has_subcommands() {
            match here.find_subcommand(w) {
                Some(sub) => path.push(sub),
                None if here.is_subcommand_required_set() => {
                    return Err(format!("`{name}` has no subcommand {w:?}"))
                }
                None => descending = false,
            }
        } else {
            descending = false;
        }
    }
    if whole && !is_synopsis(words) {
        let argv = std::iter::once(root.get_name().to_string()).chain(words.iter().cloned());
        if let Err(e) = root.clone().try_get_matches_from(argv) {
            if !matches!(
                e.kind(),
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
            ) {
                let first = e.to_string();
                return Err(first.lines().next().unwrap_or_default().to_string());
            }
        }
    }
    Ok(())
}

fn takes_value(arg: &clap::Arg) -> bool {
    arg.get_action().takes_values() && arg.get_num_args().is_none_or(|n| n.min_values() > 0)
}

/// A path shown as an argument: in the repository, or the reader's own.
fn check_file(word: &str) -> Result<(), String> {
    if word == "-" || READERS_FILES.iter().any(|(f, _)| *f == word) {
        return Ok(());
    }
    if Path::new(ROOT).join(word).exists() {
        Ok(())
    } else {
        Err(format!(
            "{word}: no such file in the repository (a reader's own file goes in READERS_FILES)"
        ))
    }
}

fn cargo_targets(kind: &str) -> BTreeSet<String> {
    let manifest = fs::read_to_string(Path::new(ROOT).join("Cargo.toml")).expect("Cargo.toml");
    let mut names = BTreeSet::new();
    let mut in_section = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_section = line == format!("[[{kind}]]");
        } else if in_section {
            if let Some(v) = line.strip_prefix("name = ") {
                names.insert(v.trim_matches('"').to_string());
            }
        }
    }
    names
}

fn make_targets() -> BTreeSet<String> {
    let makefile = fs::read_to_string(Path::new(ROOT).join("Makefile")).expect("Makefile");
    makefile
        .lines()
        .filter(|l| !l.starts_with(['\t', '#', '.', ' ']))
        .filter_map(|l| l.split_once(':').map(|(t, _)| t.trim().to_string()))
        .filter(|t| !t.is_empty() && !t.contains(['=', '$']))
        .collect()
}

/// The value after a flag (`--test X` or `--test=X`).
fn flag_value<'a>(words: &'a [String], flag: &str) -> Option<&'a str> {
    words.iter().enumerate().find_map(|(i, w)| {
        if w == flag {
            words.get(i + 1).map(String::as_str)
        } else {
            w.strip_prefix(flag).and_then(|r| r.strip_prefix('='))
        }
    })
}

fn check_cargo(words: &[String], whole: bool) -> Result<(), String> {
    let args = &words[1..];
    // Cargo's own part ends at `--`; what follows is the program's.
    let (own, rest) = match args.iter().position(|w| w == "--") {
        Some(at) => (&args[..at], Some(&args[at + 1..])),
        None => (args, None),
    };
    for (flag, kind) in [("--bench", "bench"), ("--bin", "bin")] {
        if let Some(name) = flag_value(own, flag) {
            if !cargo_targets(kind).contains(name) {
                return Err(format!("no [[{kind}]] named {name:?} in Cargo.toml"));
            }
        }
    }
    if let Some(name) = flag_value(own, "--test") {
        if !Path::new(ROOT)
            .join("tests")
            .join(format!("{name}.rs"))
            .is_file()
        {
            return Err(format!("no test target tests/{name}.rs"));
        }
    }
    let Some(sub) = own.iter().find(|w| !w.starts_with(['-', '+'])) else {
        return Ok(());
    };
    match sub.as_str() {
        "run" => match rest {
            // `cargo run -- ARGS` runs batchgate (the default binary)
            // unless --bin names another.
            Some(rest) if flag_value(own, "--bin").is_none_or(|b| b == "batchgate") => {
                check_cli(&batchgate::cli::Cli::command(), rest, whole)
            }
            Some(rest) => check_cli(&batchgate::kueuectl::args::Cli::command(), rest, whole),
            None => Ok(()),
        },
        "build" | "test" | "bench" => Ok(()),
        "fuzz" => {
            let after: Vec<&String> = own
                .iter()
                .skip_while(|w| *w != "fuzz")
                .skip(1)
                .filter(|w| !w.starts_with('-') && *w != "none")
                .collect();
            match after.as_slice() {
                [_build] => Ok(()),
                [_, target, paths @ ..] => {
                    let file = format!("fuzz/fuzz_targets/{target}.rs");
                    check_file(&file)?;
                    for p in paths {
                        if !p.contains("...") && !p.starts_with("fuzz/artifacts/") {
                            check_file(p)?;
                        }
                    }
                    Ok(())
                }
                [] => Ok(()),
            }
        }
        other if UNCHECKED_CARGO.iter().any(|(n, _)| *n == other) => Ok(()),
        other => Err(format!(
            "cargo {other}: not checked by tests/docs.rs (check it, or add it to UNCHECKED_CARGO with a reason)"
        )),
    }
}

/// Files a command names: `-f FILE`, `--filename FILE`, `--data @FILE`.
fn check_named_files(words: &[String]) -> Result<(), String> {
    for (i, w) in words.iter().enumerate() {
        if (w == "-f" || w == "--filename") && i + 1 < words.len() {
            check_file(&words[i + 1])?;
        } else if let Some(f) = w.strip_prefix("--filename=") {
            check_file(f)?;
        } else if let Some(f) = w.strip_prefix('@') {
            check_file(f)?;
        }
    }
    Ok(())
}

fn check_command(shown: &Shown) -> Result<(), String> {
    let words: Vec<String> = shown
        .words
        .iter()
        .skip_while(|w| {
            // Leading `VAR=value` assignments.
            w.split_once('=').is_some_and(|(k, _)| {
                !k.is_empty() && k.chars().all(|c| c.is_ascii_uppercase() || c == '_')
            })
        })
        .cloned()
        .collect();
    let Some(program) = words.first() else {
        return Ok(());
    };
    let args = &words[1..];
    let batchgate = || batchgate::cli::Cli::command();
    let kueuectl = || batchgate::kueuectl::args::Cli::command();
    match program.as_str() {
        "batchgate" | "/batchgate" => {
            check_named_files(args)?;
            check_cli(&batchgate(), args, shown.whole)
        }
        "kubectl-kueue" | "kueuectl" => check_cli(&kueuectl(), args, shown.whole),
        "kubectl" if args.first().is_some_and(|a| a == "kueue") => {
            check_cli(&kueuectl(), &args[1..], shown.whole)
        }
        "make" => {
            let targets = make_targets();
            for t in args.iter().filter(|a| !a.contains('=')) {
                if !targets.contains(t) {
                    return Err(format!("the Makefile has no target {t:?}"));
                }
            }
            Ok(())
        }
        "cargo" => check_cargo(&words, shown.whole),
        p if p.contains('/') && !p.starts_with('/') && !p.contains('…') => check_file(p),
        p if UNCHECKED.iter().any(|(n, _)| *n == p) => check_named_files(args),
        p => Err(format!(
            "{p}: a program tests/docs.rs does not know (check it there, or add it to UNCHECKED with a reason)"
        )),
    }
}

#[test]
fn every_command_shown_exists() {
    let mut problems = Vec::new();
    let mut count = 0;
    for page in pages() {
        for shown in shown_commands(&page) {
            count += 1;
            if let Err(e) = check_command(&shown) {
                problems.push(format!("{}: `{}`: {e}", shown.at, shown.words.join(" ")));
            }
        }
    }
    assert!(
        count > 50,
        "only {count} commands found: is the parser broken?"
    );
    assert!(
        problems.is_empty(),
        "{} of {count} commands shown in the docs do not match the repository:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// Top-level names a code span must start with to be taken as a path.
const REPO_DIRS: &[&str] = &[
    "src/",
    "tests/",
    "benches/",
    "examples/",
    "manifests/",
    "policies/",
    "docs/",
    "fuzz/",
    "certs/",
    ".ci/",
];

#[test]
fn every_repository_path_shown_exists() {
    let mut problems = Vec::new();
    let mut count = 0;
    for page in pages() {
        for (line, span) in page.code_spans() {
            let is_path = REPO_DIRS.iter().any(|d| span.starts_with(d))
                && !span.contains([' ', '<', '*', '…', '{', '='])
                && !span.contains("...");
            if !is_path {
                continue;
            }
            count += 1;
            // `src/devices/tests.rs`, or `src/fuzzing.rs`'s `fuzzing::x` kind of span: paths only.
            if !Path::new(ROOT).join(&span).exists() {
                problems.push(format!("{}:{line}: `{span}` does not exist", page.name()));
            }
        }
    }
    assert!(
        count > 50,
        "only {count} paths found: is the parser broken?"
    );
    assert!(
        problems.is_empty(),
        "{} paths named in the docs do not exist:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

#[test]
fn every_relative_link_resolves() {
    let mut problems = Vec::new();
    let mut count = 0;
    for page in pages().into_iter().chain(link_only_pages()) {
        for (line, target) in page.links() {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            count += 1;
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target.as_str(), None),
            };
            let resolved = if file.is_empty() {
                page.path.clone()
            } else {
                normalize(&page.path.parent().unwrap_or(Path::new("")).join(file))
            };
            let full = Path::new(ROOT).join(&resolved);
            if !full.exists() && PENDING.iter().any(|(p, _)| Path::new(p) == resolved) {
                continue;
            }
            if !full.exists() {
                problems.push(format!(
                    "{}:{line}: ({target}): {} does not exist",
                    page.name(),
                    resolved.display()
                ));
                continue;
            }
            if let Some(anchor) = anchor {
                if resolved.extension().is_some_and(|e| e == "md") {
                    let anchors = Page::read(resolved.clone()).anchors();
                    if !anchors.contains(anchor) {
                        problems.push(format!(
                            "{}:{line}: ({target}): {} has no heading #{anchor}",
                            page.name(),
                            resolved.display()
                        ));
                    }
                }
            }
        }
    }
    assert!(
        count > 30,
        "only {count} links found: is the parser broken?"
    );
    assert!(
        problems.is_empty(),
        "{} links in the docs do not resolve:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// README's tour is the one `batchgate dev` prints: each command is in the
/// source that prints it (format! braces doubled), so `tests/e2e_dev.rs`,
/// which runs the printed tour, runs these.
#[test]
fn the_readme_tour_is_the_printed_one() {
    let readme = Page::read(PathBuf::from("README.md"));
    let tour = readme
        .fences()
        .into_iter()
        .find(|(_, _, lines)| lines.iter().any(|l| l.starts_with("# 1. ")))
        .expect("README's quick start has the tour (a block with `# 1. ...`)");
    let mut sources = String::new();
    let mut dirs = vec![Path::new(ROOT).join("src")];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).expect("reading src/") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                sources.push_str(&fs::read_to_string(&path).expect("reading a source file"));
            }
        }
    }
    let sources = sources.replace("{{", "{").replace("}}", "}");
    let mut missing = Vec::new();
    for (i, line) in tour.2.iter().enumerate() {
        // The first line sets up the shell with this machine's paths.
        if line.is_empty() || line.starts_with("cd ") {
            continue;
        }
        if !sources.contains(line.as_str()) {
            missing.push(format!("README.md:{}: {line}", tour.1 + i));
        }
    }
    assert!(
        missing.is_empty(),
        "lines of README's tour that `batchgate dev` does not print:\n{}",
        missing.join("\n")
    );
    // The examples it names are applied to a real cluster by e2e_dev, with
    // every other file under examples/.
    let e2e =
        fs::read_to_string(Path::new(ROOT).join("tests/e2e_dev.rs")).expect("tests/e2e_dev.rs");
    assert!(
        e2e.contains("fn every_example_applies") && e2e.contains(".join(\"examples\")"),
        "tests/e2e_dev.rs no longer applies every file under examples/; docs/development.md says it does"
    );
}

#[test]
fn shell_words_are_read_as_the_shell_reads_them() {
    assert_eq!(
        shell_commands(
            r#"kubectl get workloads -o custom-columns='NAME:.a,R:.b[?(@.type=="Q")]'  # comment"#
        ),
        vec![vec![
            "kubectl".to_string(),
            "get".into(),
            "workloads".into(),
            "-o".into(),
            r#"custom-columns=NAME:.a,R:.b[?(@.type=="Q")]"#.into()
        ]]
    );
    assert_eq!(
        shell_commands("cd /x && export A=\"b c\"; make dev > out.log"),
        vec![
            vec!["cd".to_string(), "/x".into()],
            vec!["export".to_string(), "A=b c".into()],
            vec!["make".to_string(), "dev".into()],
        ]
    );
    assert_eq!(
        shell_commands("batchgate serve --log-format text|json"),
        vec![vec![
            "batchgate".to_string(),
            "serve".into(),
            "--log-format".into(),
            "text|json".into()
        ]]
    );
    assert_eq!(
        slug("AppWrapper lifecycle core (`src/appwrapper/`)"),
        "appwrapper-lifecycle-core-srcappwrapper"
    );
    assert_eq!(
        slug("Kueue API: accepted but not acted on yet"),
        "kueue-api-accepted-but-not-acted-on-yet"
    );
    // A flag that does not exist is found, in a fragment and in a whole line.
    let bg = batchgate::cli::Cli::command();
    let words = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
    assert!(check_cli(&bg, &words("serve --no-such-flag"), false).is_err());
    assert!(check_cli(&bg, &words("serve --no-cluster"), false).is_ok());
    assert!(check_cli(&bg, &words("nosuch --x"), false).is_err());
    let kk = batchgate::kueuectl::args::Cli::command();
    assert!(check_cli(&kk, &words("-n ns list lq"), true).is_ok());
    assert!(check_cli(&kk, &words("list lq --no-such"), false).is_err());
}

/// Whether `flag` (`--long` or `-s`, any `=value` or `[...]` cut off) is
/// an argument of the last command of `path` or of one above it.
fn has_flag(path: &[&clap::Command], flag: &str) -> bool {
    let flag = flag.split(['=', '[']).next().unwrap_or_default();
    let args = || path.iter().flat_map(|c| c.get_arguments());
    if let Some(long) = flag.strip_prefix("--") {
        args().any(|a| {
            a.get_long() == Some(long) || a.get_all_aliases().is_some_and(|al| al.contains(&long))
        })
    } else if let Some(short) = flag.strip_prefix('-') {
        let mut chars = short.chars();
        match (chars.next(), chars.next()) {
            (Some(s), None) => args().any(|a| a.get_short() == Some(s)),
            _ => false,
        }
    } else {
        false
    }
}

/// Every flag of a command tree, for flags a page names without their
/// command.
fn every_flag(cmd: &clap::Command) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![cmd];
    while let Some(c) = stack.pop() {
        for a in c.get_arguments() {
            out.extend(a.get_long().map(|l| format!("--{l}")));
            out.extend(a.get_short().map(|s| format!("-{s}")));
            out.extend(
                a.get_all_aliases()
                    .into_iter()
                    .flatten()
                    .map(|l| format!("--{l}")),
            );
        }
        stack.extend(c.get_subcommands());
    }
    out
}

/// Flags that pages name on purpose although neither binary has them.
const FOREIGN_FLAGS: &[(&str, &str)] = &[
    (
        "--server-side",
        "kubectl apply's, which Kueue's own CRDs need",
    ),
    (
        "--as-user-extra",
        "upstream kueuectl's, listed as not implemented",
    ),
    (
        "--show-labels",
        "upstream kueuectl's, listed as not implemented",
    ),
    (
        "--sort-by",
        "upstream kueuectl's, listed as not implemented",
    ),
];

/// A code span that is a flag standing alone (`--name ...`, `-x`,
/// `-x/--name`): the flags in it.
fn bare_flags(span: &str) -> Vec<String> {
    let first = span.split_whitespace().next().unwrap_or_default();
    first
        .split('/')
        .filter_map(|part| {
            let (dashes, rest) = match part.strip_prefix("--") {
                Some(rest) => ("--", rest),
                None => ("-", part.strip_prefix('-')?),
            };
            // The name ends at `=`, `[`, `:` or `,` (a value, an optional
            // part, a log line's colon).
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            let ok = name.starts_with(|c: char| c.is_ascii_alphanumeric())
                && (dashes == "--" || name.len() == 1);
            ok.then(|| format!("{dashes}{name}"))
        })
        .collect()
}

/// Flags named alone in a page exist in the binary the page is about (or
/// are listed in [`FOREIGN_FLAGS`]).
#[test]
fn every_flag_named_alone_exists() {
    let batchgate = every_flag(&batchgate::cli::Cli::command());
    let kueuectl = every_flag(&batchgate::kueuectl::args::Cli::command());
    let mut problems = Vec::new();
    let mut count = 0;
    for page in pages() {
        let known: BTreeSet<&String> = match page.name().as_str() {
            // Cargo's and cargo-fuzz's flags; the index names none.
            "docs/development.md" | "README.md" | "docs/README.md" => continue,
            // kubectl's and helm's flags; tests/e2e_install.rs runs its
            // commands as written.
            "docs/install.md" => continue,
            "docs/kubectl-kueue.md" => kueuectl.iter().chain(&batchgate).collect(),
            _ => batchgate.iter().collect(),
        };
        for (line, span) in page.code_spans() {
            for flag in bare_flags(&span) {
                count += 1;
                if !known.contains(&flag) && !FOREIGN_FLAGS.iter().any(|(f, _)| *f == flag) {
                    problems.push(format!(
                        "{}:{line}: `{span}`: no such flag {flag}",
                        page.name()
                    ));
                }
            }
        }
    }
    assert!(
        count > 50,
        "only {count} flags found: is the parser broken?"
    );
    assert!(
        problems.is_empty(),
        "{} flags named in the docs do not exist:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// Table cells split on `|`, not on the `\|` inside code spans.
fn cells(row: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = row.trim().trim_matches('|').chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                chars.next();
                out.last_mut().expect("a cell").push('|');
            }
            '|' => out.push(String::new()),
            c => out.last_mut().expect("a cell").push(c),
        }
    }
    out
}

fn spans_of(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// docs/kubectl-kueue.md's table of commands: each command (with its
/// aliases, `a|b`) is one of `kubectl kueue`'s, and every flag in its row
/// is that command's.
#[test]
fn the_kubectl_kueue_command_table_matches_the_plugin() {
    let page = Page::read(PathBuf::from("docs/kubectl-kueue.md"));
    let mut root = batchgate::kueuectl::args::Cli::command();
    root.build();
    let rows: Vec<&str> = page
        .text
        .lines()
        .skip_while(|l| !l.starts_with("| command | what it does |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert!(
        rows.len() > 10,
        "the command table of docs/kubectl-kueue.md is not found"
    );
    let mut problems = Vec::new();
    for row in rows {
        let cells = cells(row);
        let mut leaf: Option<Vec<&clap::Command>> = None;
        let mut flags: Vec<String> = Vec::new();
        for span in spans_of(&cells[0]) {
            let mut path = vec![&root];
            let mut words = span.split_whitespace().peekable();
            let mut walked = false;
            while let Some(word) = words.next() {
                if word.starts_with(['-', '[']) {
                    flags.push(word.trim_matches(['[', ']']).to_string());
                    // A flag's placeholder value.
                    if words
                        .peek()
                        .is_some_and(|w| w.starts_with(|c: char| c.is_ascii_uppercase()))
                    {
                        words.next();
                    }
                    continue;
                }
                if word.starts_with(|c: char| c.is_ascii_uppercase()) || word.starts_with("...") {
                    continue;
                }
                let here = *path.last().expect("the root");
                let alternatives: Vec<&str> = word.split('|').collect();
                let found: Vec<Option<&clap::Command>> = alternatives
                    .iter()
                    .map(|a| here.find_subcommand(a))
                    .collect();
                if let Some((bad, _)) = alternatives.iter().zip(&found).find(|(_, f)| f.is_none()) {
                    // `wl` after a command: an alias of that command.
                    let alias_of_leaf = !walked
                        && leaf.as_ref().is_some_and(|l| {
                            l.len() > 1
                                && l[l.len() - 2].find_subcommand(bad).map(|c| c.get_name())
                                    == Some(l[l.len() - 1].get_name())
                        });
                    if !alias_of_leaf {
                        let at = path
                            .iter()
                            .map(|c| c.get_name())
                            .collect::<Vec<_>>()
                            .join(" ");
                        problems.push(format!("`{span}`: `{at}` has no subcommand {bad:?}"));
                    }
                    break;
                }
                path.push(found[0].expect("checked"));
                walked = true;
            }
            if walked && leaf.is_none() {
                leaf = Some(path);
            }
        }
        let Some(path) = leaf else {
            problems.push(format!("no command in the row {row:?}"));
            continue;
        };
        for span in spans_of(&cells[1..].join(" ")) {
            flags.extend(bare_flags(span));
        }
        for flag in flags {
            if !has_flag(&path, &flag) {
                let at = path
                    .iter()
                    .map(|c| c.get_name())
                    .collect::<Vec<_>>()
                    .join(" ");
                problems.push(format!("`{at}` has no flag {flag}"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "docs/kubectl-kueue.md's command table does not match `kubectl kueue`:\n{}",
        problems.join("\n")
    );
}

/// A command in an indented code block would escape the checks above:
/// commands go in fenced `sh` or `console` blocks.
#[test]
fn no_command_hides_in_an_indented_block() {
    let programs = ["batchgate", "kubectl", "make", "cargo", "curl", "docker"];
    let mut problems = Vec::new();
    for page in pages() {
        let prose = page.prose();
        let mut previous_blank = true;
        let mut in_block = false;
        for (i, line) in prose.lines().enumerate() {
            let indented = line.starts_with("    ") && !line.trim().is_empty();
            in_block = indented && (in_block || previous_blank);
            let first = line.split_whitespace().next().unwrap_or_default();
            let first = first.strip_prefix('$').map_or(first, str::trim);
            if in_block && programs.contains(&first) {
                problems.push(format!("{}:{}: {}", page.name(), i + 1, line.trim()));
            }
            previous_blank = line.trim().is_empty();
        }
    }
    assert!(
        problems.is_empty(),
        "commands in indented code blocks (put them in a fenced sh block, where they are checked):\n{}",
        problems.join("\n")
    );
}
