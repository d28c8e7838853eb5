//! The layering, checked on the source tree (see `src/lib.rs` and
//! `docs/architecture.md`):
//!
//! 1. A pure-core module imports no shell module (`server`, `cluster`,
//!    `controllers`, `cli`, `kueuectl`) and no I/O: kube client types
//!    (`kube::Client`, `kube::Api`, `kube::runtime`, …), tokio's or std's
//!    network, file and process modules, timers, HTTP stacks; and reads no
//!    clock (`Utc::now`, `Timestamp::now`, `UNIX_EPOCH.elapsed()`, …).
//! 2. The listener's rooms (`server`, `metrics`, `tls`) name no admission
//!    family's module: families are reached through `admission::router`
//!    only.
//! 3. `controllers/` has no import cycle between its modules.
//! 4. The rooms (top-level modules) stand in the layers of [`LAYERS`],
//!    bottom to top: the `vocabulary` floor, `api`, the core rooms, the
//!    shell, the binaries. No room imports from a room above it (but for
//!    the arrows listed in [`UPWARD_DEBT`], which may only go), and no
//!    rooms import each other in a circle.
//!
//! Test code (`#[cfg(test)]` modules, `tests.rs` files) is not checked: a
//! core module's tests may drive it through the shell.
//!
//! The checks read the code with a small lexer (comments, strings and test
//! modules blanked out, `use` trees expanded, `crate::`/`super::` paths
//! and `use` names resolved), so a path named in a comment is not an
//! import.

use std::{
    collections::{BTreeMap, BTreeSet},
    fs,
    path::{Path, PathBuf},
};

/// The pure core: top-level modules of the library.
const CORE: &[&str] = &[
    "admission",  // the router, every family's rules, entitlement, webhook configurations
    "api",        // wire types, CRDs, conversion, selectors
    "appwrapper", // the AppWrapper state machine
    "certs",      // certificate making and rotation decisions
    "devices",    // claim matching and scoring
    "jobs",       // the job framework: policies, job -> Workload
    "multikueue", // MultiKueue: worker kubeconfig rules, cluster and check conditions, dispatch
    "prescale",   // cron, primer schedules, the wait-until instant
    "queueing",   // the quota engine and the visibility API computed from it
    "config",     // the configuration file, read into each room's settings
    "vocabulary", // Kueue's keys, JSON pointers and patches, Go parsing, quantities
];

/// The shell.
const SHELL: &[&str] = &[
    "metrics",
    "tls",
    "server",
    "cluster",
    "controllers",
    "cli",
    "kueuectl",
];

/// The rooms that serve the webhook: they reach the admission families
/// through `admission::router` only.
const LISTENER: &[&str] = &["server", "metrics", "tls"];

/// Paths a core module may not name: kube's client side, I/O, timers.
const FORBIDDEN_IN_CORE: &[&str] = &[
    "kube::Client",
    "kube::Api",
    "kube::api::Api",
    "kube::client",
    "kube::runtime",
    "kube::discovery",
    "kube::Discovery",
    "kube::config",
    "kube_runtime",
    "kube_client",
    "tokio::net",
    "tokio::fs",
    "tokio::process",
    "tokio::time",
    "tokio::io",
    "std::fs",
    "std::process",
    "std::net::TcpStream",
    "std::net::TcpListener",
    "std::net::UdpSocket",
    "std::thread::sleep",
    "hyper",
    "hyper_util",
    "axum",
    "tokio_rustls",
    "reqwest",
];

/// Clock reads a core module may not make: time is a parameter.
const CLOCKS: &[&str] = &[
    "chrono::Utc::now",
    "chrono::Local::now",
    "Utc::now",
    "Local::now",
    "std::time::SystemTime::now",
    "std::time::Instant::now",
    "SystemTime::now",
    "Instant::now",
    "tokio::time::Instant::now",
    "chrono::offset::Utc::now",
    "chrono::offset::Local::now",
    "k8s_openapi::chrono::Utc::now",
    "jiff::Timestamp::now",
    "k8s_openapi::jiff::Timestamp::now",
    "Timestamp::now",
    // `elapsed()` on the epoch reads now (`named` spells the call `.elapsed`).
    "UNIX_EPOCH.elapsed",
    "SystemTime::UNIX_EPOCH.elapsed",
    "std::time::UNIX_EPOCH.elapsed",
    "std::time::SystemTime::UNIX_EPOCH.elapsed",
];

/// What a core module may not name: the paths, what naming one does, and
/// the fix.
const CORE_RULES: [(&[&str], &str, &str); 3] = [
    (
        SHELL,
        "imports the shell",
        "is shell; move what the core needs into the core, or the caller into the shell",
    ),
    (
        CLOCKS,
        "reads the clock",
        "is a clock; take the time as a parameter from the shell",
    ),
    (
        FORBIDDEN_IN_CORE,
        "does I/O",
        "belongs in the shell; pass the data in",
    ),
];

/// The rooms (top-level modules), bottom to top. A room imports only from
/// rooms in lower layers or its own: an arrow up is a room borrowing from
/// one built on it, and the beginning of a circle.
const LAYERS: &[&[&str]] = &[
    // The floor: words every room speaks; it imports no other room.
    &["vocabulary"],
    // Wire types.
    &["api"],
    // The pure core, from the rooms that stand alone up to the router that
    // calls them all and the configuration file that configures them all.
    &["certs"],
    &["prescale"],
    &["devices"],
    &["queueing"],
    &["appwrapper"],
    &["jobs"],
    &["multikueue"],
    &["admission"],
    &["config"],
    // The shell: the metrics registry and the serving certificate, which
    // the kube glue and the listener both use; then those two.
    &["metrics"],
    &["tls"],
    &["cluster"],
    &["server"],
    &["controllers"],
    &["cli", "kueuectl"],
    // The binaries (`src/main.rs`, `src/bin/`) and the fuzz targets' bodies:
    // nothing imports them.
    &["main", "testing"],
];

/// Arrows that still point up: (file, imported path, why it is there).
/// Each is a debt: the room check fails on an arrow up that is not listed
/// and on an entry that no longer occurs, so the list only shrinks.
const UPWARD_DEBT: &[(&str, &str, &str)] = &[
    // Paid off: `cluster` used to borrow the server's metrics registry and
    // certificate store, now the `metrics` and `tls` rooms below both.
];

/// Admission families' modules (and the cores behind them) that the
/// server must not name: it reaches them through `admission::router`.
const FAMILIES: &[&str] = &[
    "admission::appwrapper",
    "admission::kueue",
    "admission::devices",
    "admission::prescale",
    "admission::defaulting",
    "admission::validation",
    "admission::admission_gates",
    "admission::topology",
    "api::kueue::conversion",
    "appwrapper",
    "prescale",
    "devices",
    "jobs",
];

/// One source file: its module path and its code with comments, strings
/// and test modules blanked (newlines kept, so offsets give lines).
struct Source {
    file: PathBuf,
    module: Vec<String>,
    code: String,
}

/// A path one file names, resolved to the crate root where it is
/// `crate::`/`super::`/`self::`-relative, with its line.
#[derive(Debug, Clone)]
struct Named {
    path: Vec<String>,
    line: usize,
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn sources() -> Vec<Source> {
    let root = src();
    let mut files = Vec::new();
    walk(&root, &mut files);
    // Files declared `#[cfg(test)] mod x;` by their parent are test code.
    let mut test_files = BTreeSet::new();
    for f in &files {
        let text = fs::read_to_string(f).unwrap();
        let dir = module_dir(f);
        let lines: Vec<&str> = text.lines().collect();
        for w in lines.windows(2) {
            if w[0].trim() == "#[cfg(test)]" {
                let l = w[1].trim();
                if let Some(name) = l
                    .strip_prefix("mod ")
                    .or_else(|| l.strip_prefix("pub mod "))
                    .and_then(|n| n.strip_suffix(';'))
                {
                    test_files.insert(dir.join(format!("{name}.rs")));
                    test_files.insert(dir.join(name).join("mod.rs"));
                    test_files.insert(dir.join(name));
                }
            }
        }
    }
    files
        .into_iter()
        .filter(|f| {
            let rel = f.strip_prefix(&root).unwrap();
            !rel.starts_with("bin")
                && rel != Path::new("main.rs")
                && f.file_name().is_some_and(|n| n != "tests.rs")
                && !test_files.contains(f)
                && !test_files.iter().any(|t| t.is_dir() && f.starts_with(t))
        })
        .map(|f| {
            let text = fs::read_to_string(&f).unwrap();
            Source {
                module: module_of(&root, &f),
                code: strip_tests(&blank(&text)),
                file: f,
            }
        })
        .collect()
}

/// The library's files (as [`sources`]) and the binaries' (`src/main.rs`,
/// `src/bin/`), which stand in the room `main`.
fn room_sources() -> Vec<Source> {
    let root = src();
    let mut bins = vec![root.join("main.rs")];
    walk(&root.join("bin"), &mut bins);
    let mut all = sources();
    all.extend(bins.into_iter().map(|f| Source {
        module: vec!["main".to_string()],
        code: strip_tests(&blank(&fs::read_to_string(&f).unwrap())),
        file: f,
    }));
    all
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Where a file's child modules live.
fn module_dir(f: &Path) -> PathBuf {
    let parent = f.parent().unwrap().to_path_buf();
    match f.file_name().and_then(|n| n.to_str()) {
        Some("mod.rs" | "lib.rs" | "main.rs") => parent,
        _ => parent.join(f.file_stem().unwrap()),
    }
}

fn module_of(root: &Path, f: &Path) -> Vec<String> {
    let rel = f.strip_prefix(root).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// Comments, string and char literals replaced by spaces (newlines kept).
fn blank(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let clear = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = text[i..].find('\n').map_or(b.len(), |n| i + n);
                clear(&mut out, i, end);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = text[i + 2..].find("*/").map_or(b.len(), |n| i + 2 + n + 2);
                clear(&mut out, i, end);
                i = end;
            }
            b'r' if (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#'))
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) =>
            {
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                if b.get(i + 1 + hashes) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let close = format!("\"{}", "#".repeat(hashes));
                let start = i + 2 + hashes;
                let end = text[start..]
                    .find(&close)
                    .map_or(b.len(), |n| start + n + close.len());
                clear(&mut out, i, end);
                i = end;
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                clear(&mut out, i, (j + 1).min(b.len()));
                i = j + 1;
            }
            b'\'' => {
                // A char literal ('x', '\n', '\u{..}'), not a lifetime.
                let lit = if b.get(i + 1) == Some(&b'\\') {
                    text[i + 2..].find('\'').map(|n| i + 2 + n + 1)
                } else if b.get(i + 2) == Some(&b'\'') {
                    Some(i + 3)
                } else {
                    text[i + 1..]
                        .chars()
                        .next()
                        .filter(|c| c.len_utf8() > 1)
                        .and_then(|c| {
                            (b.get(i + 1 + c.len_utf8()) == Some(&b'\''))
                                .then_some(i + 2 + c.len_utf8())
                        })
                };
                match lit {
                    Some(end) => {
                        clear(&mut out, i, end);
                        i = end;
                    }
                    None => i += 1,
                }
            }
            _ => i += 1,
        }
    }
    String::from_utf8(out).unwrap()
}

/// `#[cfg(test)]` items (inline test modules) blanked.
fn strip_tests(code: &str) -> String {
    let mut out = code.to_string();
    let mut from = 0;
    while let Some(n) = out[from..].find("#[cfg(test)]") {
        let at = from + n;
        // The item: up to its `;` or its matching `}`.
        let rest = &out[at..];
        let semi = rest.find(';');
        let open = rest.find('{');
        let end = match (semi, open) {
            (Some(s), Some(o)) if s < o => at + s + 1,
            (_, Some(o)) => {
                let mut depth = 0;
                let mut end = out.len();
                for (k, c) in out[at + o..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = at + o + k + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            (Some(s), None) => at + s + 1,
            (None, None) => out.len(),
        };
        let blanked: String = out[at..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        out.replace_range(at..end, &blanked);
        from = end;
    }
    out
}

fn line_of(code: &str, offset: usize) -> usize {
    code[..offset].matches('\n').count() + 1
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Expands a `use` tree (`a::{b, c::{d as e}}`) into its paths, each
/// with the name it brings into scope (`*` for a glob).
fn expand(tree: &str, prefix: &[String], out: &mut Vec<(Vec<String>, String)>) {
    let tree = tree.trim();
    // Split at the first top-level `{`.
    if let Some(open) = tree.find('{') {
        let head: Vec<String> = tree[..open]
            .split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        let close = tree.rfind('}').unwrap_or(tree.len());
        let inner = &tree[open + 1..close];
        let mut base = prefix.to_vec();
        base.extend(head);
        let mut depth = 0;
        let mut start = 0;
        for (k, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&inner[start..k], &base, out);
                    start = k + 1;
                }
                _ => {}
            }
        }
        expand(&inner[start..], &base, out);
        return;
    }
    if tree.is_empty() {
        return;
    }
    let mut parts = tree.split(" as ");
    let tree = parts.next().unwrap_or(tree).trim();
    let alias = parts.next().map(str::trim);
    let mut p = prefix.to_vec();
    for seg in tree.split("::").map(str::trim) {
        if seg == "self" {
            continue;
        }
        p.push(seg.to_string());
    }
    let name = alias
        .map(String::from)
        .or_else(|| p.last().cloned())
        .unwrap_or_default();
    out.push((p, name));
}

/// Resolves `crate::`, `super::`, `self::` against `module`; other paths
/// (external crates) are returned as written.
fn resolve(module: &[String], path: &[String]) -> Vec<String> {
    match path.first().map(String::as_str) {
        // The binaries name the library by its crate name.
        Some("crate") | Some("batchgate") => path[1..].to_vec(),
        Some("super") | Some("self") => {
            let mut base = module.to_vec();
            let mut i = 0;
            while i < path.len() && (path[i] == "super" || path[i] == "self") {
                if path[i] == "super" {
                    base.pop();
                }
                i += 1;
            }
            base.extend_from_slice(&path[i..]);
            base
        }
        _ => path.to_vec(),
    }
}

/// Every path a file names: its `use` trees, and inline `a::b::c` paths
/// (read through the file's `use` names and `mod` declarations, so
/// `use crate::jobs::policy; policy::Pointer` names `jobs::policy::Pointer`).
/// A path whose value calls `.elapsed()` is also named as `path.elapsed`.
fn named(s: &Source) -> Vec<Named> {
    let code = &s.code;
    let mut out = Vec::new();
    let mut rest = code.clone();
    // Child modules declared here (`mod x;`, `mod x { .. }`).
    let mut mods = BTreeSet::new();
    let mut from = 0;
    while let Some(n) = find_word(&code[from..], "mod") {
        let at = from + n + 3;
        let name: String = code[at..]
            .trim_start()
            .chars()
            .take_while(|c| is_ident(*c))
            .collect();
        if !name.is_empty() {
            mods.insert(name);
        }
        from = at;
    }
    let mut scope: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let local = |scope: &BTreeMap<String, Vec<String>>, p: &[String]| -> Vec<String> {
        match p.first() {
            Some(first) if scope.contains_key(first) => {
                let mut full = scope[first].clone();
                full.extend_from_slice(&p[1..]);
                full
            }
            Some(first) if mods.contains(first) => {
                let mut full = s.module.clone();
                full.extend_from_slice(p);
                full
            }
            _ => resolve(&s.module, p),
        }
    };
    // `use` statements first (then blanked, so they are not read twice).
    let mut from = 0;
    while let Some(n) = find_word(&rest[from..], "use") {
        let at = from + n;
        let Some(end) = rest[at..].find(';').map(|e| at + e) else {
            break;
        };
        let mut paths = Vec::new();
        expand(&rest[at + 3..end].replace('\n', " "), &[], &mut paths);
        let line = line_of(code, at);
        for (p, name) in paths {
            let path = local(&scope, &p);
            if name != "*" && !name.is_empty() {
                scope.insert(name, path.clone());
            }
            out.push(Named { path, line });
        }
        let blanked: String = rest[at..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        rest.replace_range(at..end, &blanked);
        from = end;
    }
    // Inline paths: identifiers joined by `::`.
    let b = rest.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if is_ident(c) && (i == 0 || !(is_ident(b[i - 1] as char) || b[i - 1] == b':')) {
            let start = i;
            let mut segs = Vec::new();
            loop {
                let s0 = i;
                while i < b.len() && is_ident(b[i] as char) {
                    i += 1;
                }
                segs.push(rest[s0..i].to_string());
                // Skip generic args between segments (`Api::<K>::all`).
                if rest[i..].starts_with("::<") {
                    break;
                }
                if rest[i..].starts_with("::") && rest[i + 2..].chars().next().is_some_and(is_ident)
                {
                    i += 2;
                } else {
                    break;
                }
            }
            let line = line_of(code, start);
            if segs.len() > 1 {
                out.push(Named {
                    path: local(&scope, &segs),
                    line,
                });
            }
            // `UNIX_EPOCH.elapsed()` reads the clock as surely as `now()`.
            if rest[i..].trim_start().starts_with(".elapsed(") {
                let mut called = local(&scope, &segs);
                if let Some(last) = called.last_mut() {
                    last.push_str(".elapsed");
                }
                out.push(Named { path: called, line });
            }
            if i == start {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out
}

fn find_word(hay: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(n) = hay[from..].find(word) {
        let at = from + n;
        let before = hay[..at].chars().next_back();
        let after = hay[at + word.len()..].chars().next();
        if !before.is_some_and(is_ident) && after.is_some_and(char::is_whitespace) {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

fn starts_with(path: &[String], prefix: &str) -> bool {
    let p: Vec<&str> = prefix.split("::").collect();
    path.len() >= p.len() && path.iter().zip(&p).all(|(a, b)| a == b)
}

fn rel(f: &Path) -> String {
    f.strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")))
        .unwrap_or(f)
        .display()
        .to_string()
}

/// Violations of rules 1 and 2, one line each.
fn layering(sources: &[Source]) -> Vec<String> {
    let mut bad = Vec::new();
    for s in sources {
        let top = s.module.first().map(String::as_str).unwrap_or("");
        for n in named(s) {
            let shown = n.path.join("::");
            if CORE.contains(&top) {
                for (paths, does, fix) in CORE_RULES {
                    if let Some(hit) = paths.iter().find(|m| starts_with(&n.path, m)) {
                        bad.push(format!(
                            "{}:{}: the core module `{}` {does}: `{shown}` (`{hit}` {fix})",
                            rel(&s.file),
                            n.line,
                            s.module.join("::"),
                        ));
                    }
                }
            }
            if LISTENER.contains(&top) {
                if let Some(f) = FAMILIES.iter().find(|m| starts_with(&n.path, m)) {
                    bad.push(format!(
                        "{}:{}: {top}/ names the admission family module `{f}` (`{shown}`); route it through `admission::router` (a Family in the table)",
                        rel(&s.file),
                        n.line,
                    ));
                }
            }
        }
    }
    bad
}

/// Edges between `controllers/` modules (a child of a controller's
/// directory counts as the controller), with one line naming each.
fn controller_graph(sources: &[Source]) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut graph: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for s in sources {
        if s.module.first().map(String::as_str) != Some("controllers") || s.module.len() < 2 {
            continue;
        }
        let from = s.module[1].clone();
        graph.entry(from.clone()).or_default();
        for n in named(s) {
            if n.path.len() >= 2 && n.path[0] == "controllers" && n.path[1] != from {
                graph
                    .entry(from.clone())
                    .or_default()
                    .entry(n.path[1].clone())
                    .or_insert_with(|| format!("{}:{}", rel(&s.file), n.line));
            }
        }
    }
    graph
}

/// A cycle in the graph, as `a -> b -> a` with where each edge is named.
fn cycle(graph: &BTreeMap<String, BTreeMap<String, String>>) -> Option<String> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeMap<String, String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_string(), 1);
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flat_map(|e| e.keys()) {
            match state.get(next.as_str()) {
                Some(1) => {
                    let at = stack.iter().position(|n| n == next).unwrap_or(0);
                    let mut c = stack[at..].to_vec();
                    c.push(next.clone());
                    return Some(c);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(next, graph, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(node.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if state.contains_key(node) {
            continue;
        }
        if let Some(c) = visit(node, graph, &mut state, &mut Vec::new()) {
            let edges: Vec<String> = c
                .windows(2)
                .map(|w| format!("{} -> {} ({})", w[0], w[1], graph[&w[0]][&w[1]]))
                .collect();
            return Some(edges.join(", "));
        }
    }
    None
}

/// One arrow between rooms: `file:line` names `path`, which lives in the
/// room `to`.
struct Arrow {
    from: String,
    to: String,
    file: String,
    line: usize,
    path: Vec<String>,
}

/// Every arrow between rooms: a path one room's file names (a `use`, or
/// inline) that starts with another room.
fn room_arrows(sources: &[Source]) -> Vec<Arrow> {
    let rooms: BTreeSet<&str> = sources
        .iter()
        .filter_map(|s| s.module.first().map(String::as_str))
        .chain(LAYERS.iter().flat_map(|l| l.iter().copied()))
        .collect();
    let mut arrows = Vec::new();
    for s in sources {
        let Some(from) = s.module.first() else {
            continue; // lib.rs
        };
        for n in named(s) {
            match n.path.first() {
                Some(to) if to != from && rooms.contains(to.as_str()) => arrows.push(Arrow {
                    from: from.clone(),
                    to: to.clone(),
                    file: rel(&s.file),
                    line: n.line,
                    path: n.path.clone(),
                }),
                _ => {}
            }
        }
    }
    arrows
}

fn layer_of(room: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&room))
}

/// Violations of the room order, one line each: a room in no layer, an
/// arrow up that is not a listed debt, a debt entry that no longer occurs,
/// a circle between rooms.
fn room_violations(sources: &[Source], debt: &[(&str, &str, &str)]) -> Vec<String> {
    let mut bad = Vec::new();
    let placed: BTreeSet<&str> = sources
        .iter()
        .filter_map(|s| s.module.first().map(String::as_str))
        .collect();
    for room in placed.iter().filter(|r| layer_of(r).is_none()) {
        bad.push(format!(
            "src/{room}: the room `{room}` is in no layer; place it in LAYERS (tests/architecture.rs), above every room it imports"
        ));
    }
    let mut paid = vec![false; debt.len()];
    let mut graph: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for a in room_arrows(sources) {
        let (Some(from), Some(to)) = (layer_of(&a.from), layer_of(&a.to)) else {
            continue;
        };
        if to > from {
            let listed = debt
                .iter()
                .position(|(file, path, _)| a.file == *file && starts_with(&a.path, path));
            if let Some(i) = listed {
                // A listed debt stands outside the circle check too.
                paid[i] = true;
                continue;
            }
            bad.push(format!(
                "{}:{}: the room `{}` imports `{}` from `{}`, a room above it; move what it needs down (into `{}` or the vocabulary floor), or move the caller up",
                a.file,
                a.line,
                a.from,
                a.path.join("::"),
                a.to,
                a.from,
            ));
        }
        graph.entry(a.to.clone()).or_default();
        graph
            .entry(a.from.clone())
            .or_default()
            .entry(a.to.clone())
            .or_insert_with(|| format!("{}:{} `{}`", a.file, a.line, a.path.join("::")));
    }
    for ((file, path, _), seen) in debt.iter().zip(paid) {
        if !seen {
            bad.push(format!(
                "{file}: the debt entry `{path}` no longer occurs; remove it from UPWARD_DEBT (tests/architecture.rs)"
            ));
        }
    }
    if let Some(c) = cycle(&graph) {
        bad.push(format!(
            "the rooms import each other in a circle: {c}; move what one borrows from the other down into the lower room or the vocabulary floor"
        ));
    }
    bad
}

#[test]
fn the_core_imports_no_shell_and_the_server_names_no_family() {
    let sources = sources();
    // The walk found the tree (a moved `src/` would make this test vacuous).
    for top in CORE.iter().chain(SHELL) {
        assert!(
            sources
                .iter()
                .any(|s| s.module.first().map(String::as_str) == Some(top)),
            "no source file of module `{top}` found under src/"
        );
    }
    let bad = layering(&sources);
    assert!(bad.is_empty(), "layering broken:\n{}", bad.join("\n"));
}

#[test]
fn controllers_import_each_other_without_a_cycle() {
    let graph = controller_graph(&sources());
    assert!(
        graph.contains_key("context") && graph.len() > 5,
        "controllers/ not found: {graph:?}"
    );
    if let Some(c) = cycle(&graph) {
        panic!("controllers/ has an import cycle: {c}; move what they share into controllers/context.rs");
    }
    // The shared context stands at the bottom: it imports no controller.
    let context: Vec<&String> = graph["context"]
        .keys()
        .filter(|m| !matches!(m.as_str(), "translation" | "vetting" | "events"))
        .collect();
    assert!(
        context.is_empty(),
        "controllers/context.rs imports controllers {context:?}; it must depend on none"
    );
}

#[test]
fn the_rooms_stand_in_layers_without_a_circle() {
    let sources = room_sources();
    for room in LAYERS.iter().flat_map(|l| l.iter()) {
        assert!(
            sources
                .iter()
                .any(|s| s.module.first().map(String::as_str) == Some(room)),
            "no source file of room `{room}` found under src/"
        );
    }
    // The walk reads arrows (an unreadable tree would pass vacuously).
    assert!(
        room_arrows(&sources)
            .iter()
            .any(|a| a.from == "admission" && a.to == "jobs"),
        "no arrow admission -> jobs found"
    );
    let bad = room_violations(&sources, UPWARD_DEBT);
    assert!(bad.is_empty(), "rooms out of order:\n{}", bad.join("\n"));
}

/// The checks themselves catch what they are for (on made-up sources, so a
/// lexer or resolver that found nothing would fail here).
#[test]
fn the_checks_catch_violations() {
    let src = |module: &str, code: &str| Source {
        file: PathBuf::from(format!("src/{}.rs", module.replace("::", "/"))),
        module: module.split("::").map(String::from).collect(),
        code: strip_tests(&blank(code)),
    };
    let bad = layering(&[
        src(
            "queueing::engine",
            "use crate::{api::x, controllers::context::MANAGER};\n// crate::server in a comment\nfn f() { let s = \"crate::cli\"; }",
        ),
        src("jobs::workload", "use kube::{Api, Client};"),
        src("appwrapper::machine", "fn f() { super::super::cluster::sar::check(); }"),
        src("server::mod", "use crate::admission::{router::Router, kueue::Kind};"),
        src("metrics::mod", "fn f() { crate::jobs::workload::name_for(); }"),
        src(
            "devices::x",
            "#[cfg(test)]\nmod tests {\n    use crate::server::Limits;\n}\n",
        ),
        src(
            "admission::prescale",
            "fn f() { let today = chrono::Utc::now().date_naive(); }",
        ),
    ]);
    let joined = bad.join("\n");
    assert_eq!(bad.len(), 7, "{joined}");
    assert!(
        joined.contains("src/metrics/mod.rs:1: metrics/ names the admission family module `jobs`"),
        "{joined}"
    );
    assert!(
        joined.contains("reads the clock: `chrono::Utc::now`"),
        "{joined}"
    );
    assert!(
        joined.contains("`controllers::context::MANAGER`"),
        "{joined}"
    );
    assert!(
        joined.contains("`kube::Api`") && joined.contains("`kube::Client`"),
        "{joined}"
    );
    assert!(joined.contains("`cluster::sar::check`"), "{joined}");
    assert!(joined.contains("`admission::kueue`"), "{joined}");

    let graph = controller_graph(&[
        src("controllers::jobs", "use super::appwrapper::run;"),
        src(
            "controllers::appwrapper",
            "fn f() { super::jobs::Shared::new(); }",
        ),
        src("controllers::context", ""),
    ]);
    let c = cycle(&graph).expect("the jobs <-> appwrapper cycle");
    assert!(
        c.contains("jobs -> appwrapper") && c.contains("appwrapper -> jobs"),
        "{c}"
    );
}

/// Every way of reading the clock is caught, spelled in full, through a
/// `use`, or as the epoch's `elapsed()`; named in a comment or a string,
/// it is not.
#[test]
fn every_clock_read_is_caught() {
    let src = |module: &str, code: &str| Source {
        file: PathBuf::from(format!("src/{}.rs", module.replace("::", "/"))),
        module: module.split("::").map(String::from).collect(),
        code: strip_tests(&blank(code)),
    };
    let reads = [
        ("fn f() { jiff::Timestamp::now(); }", "jiff::Timestamp::now"),
        (
            "fn f() { k8s_openapi::jiff::Timestamp::now(); }",
            "k8s_openapi::jiff::Timestamp::now",
        ),
        (
            "use k8s_openapi::jiff::Timestamp;\nfn f() { Timestamp::now(); }",
            "k8s_openapi::jiff::Timestamp::now",
        ),
        ("fn f() { Timestamp::now(); }", "Timestamp::now"),
        (
            "fn f() { chrono::offset::Utc::now(); }",
            "chrono::offset::Utc::now",
        ),
        (
            "use chrono::offset::Local;\nfn f() { Local::now(); }",
            "chrono::offset::Local::now",
        ),
        (
            "use std::time::UNIX_EPOCH;\nfn f() { UNIX_EPOCH.elapsed(); }",
            "std::time::UNIX_EPOCH.elapsed",
        ),
        (
            "use std::time::SystemTime;\nfn f() { SystemTime::UNIX_EPOCH\n    .elapsed(); }",
            "std::time::SystemTime::UNIX_EPOCH.elapsed",
        ),
        (
            "fn f() { std::time::SystemTime::UNIX_EPOCH.elapsed(); }",
            "std::time::SystemTime::UNIX_EPOCH.elapsed",
        ),
        ("fn f() { UNIX_EPOCH.elapsed(); }", "UNIX_EPOCH.elapsed"),
    ];
    for (code, shown) in reads {
        let bad = layering(&[src("prescale::instant", code)]);
        let joined = bad.join("\n");
        assert!(
            bad.len() == 1 && joined.contains(&format!("reads the clock: `{shown}`")),
            "{code:?} not caught as `{shown}`: {joined}"
        );
        assert!(joined.contains("src/prescale/instant.rs:"), "{joined}");
    }
    let named_only = layering(&[src(
        "prescale::instant",
        "// jiff::Timestamp::now, chrono::offset::Utc::now, UNIX_EPOCH.elapsed()\n\
         fn f() { let s = \"Timestamp::now() SystemTime::UNIX_EPOCH.elapsed()\"; \
         let t = std::time::UNIX_EPOCH; let d = t.duration_since(t); }",
    )]);
    assert!(named_only.is_empty(), "{}", named_only.join("\n"));
}

/// The room check catches a new arrow up, a circle (through an arrow up or
/// within one layer), a room in no layer and a stale debt entry, on
/// made-up sources.
#[test]
fn the_room_check_catches_arrows_up_and_circles() {
    let src = |module: &str, code: &str| Source {
        file: PathBuf::from(format!("src/{}.rs", module.replace("::", "/"))),
        module: module.split("::").map(String::from).collect(),
        code: strip_tests(&blank(code)),
    };
    let today = || {
        vec![
            src(
                "vocabulary::keys",
                "pub const QUEUE_NAME_LABEL: &str = \"q\";",
            ),
            src(
                "jobs::workload",
                "use crate::vocabulary::keys::QUEUE_NAME_LABEL;",
            ),
            src(
                "admission::object",
                "use crate::{jobs::workload, vocabulary::keys::QUEUE_NAME_LABEL};",
            ),
        ]
    };
    let ok = room_violations(&today(), &[]);
    assert!(ok.is_empty(), "{}", ok.join("\n"));

    // jobs borrows from admission again: an arrow up, and a circle.
    let mut up = today();
    up.push(src(
        "jobs::policy",
        "// crate::admission in a comment\nfn f() { super::super::admission::object::parse(); }",
    ));
    let bad = room_violations(&up, &[]);
    let joined = bad.join("\n");
    assert_eq!(bad.len(), 2, "{joined}");
    assert!(
        joined.contains("src/jobs/policy.rs:2: the room `jobs` imports `admission::object::parse` from `admission`, a room above it"),
        "{joined}"
    );
    assert!(
        joined.contains("in a circle")
            && joined.contains("admission -> jobs (src/admission/object.rs:1")
            && joined.contains("jobs -> admission (src/jobs/policy.rs:2"),
        "{joined}"
    );

    // The floor imports no room.
    let bad = room_violations(
        &[src(
            "vocabulary::go",
            "use crate::api::selector::LabelSelector;",
        )],
        &[],
    );
    assert!(
        bad.len() == 1
            && bad[0].contains("the room `vocabulary` imports `api::selector::LabelSelector`"),
        "{bad:?}"
    );

    // A circle within one layer has no arrow up, and is still caught.
    let bad = room_violations(
        &[
            src("cli::dev", "use crate::kueuectl::run;"),
            src("kueuectl::run", "fn f() { crate::cli::dev::register(); }"),
        ],
        &[],
    );
    assert!(
        bad.len() == 1
            && bad[0].contains("cli -> kueuectl (src/cli/dev.rs:1 `kueuectl::run`)")
            && bad[0].contains("kueuectl -> cli (src/kueuectl/run.rs:1 `cli::dev::register`)"),
        "{bad:?}"
    );

    // A new room must be placed in a layer.
    let bad = room_violations(&[src("garage::tools", "")], &[]);
    assert!(
        bad.len() == 1 && bad[0].contains("`garage` is in no layer"),
        "{bad:?}"
    );

    // A listed debt passes (and its circle with it); an entry that no
    // longer occurs fails, so the list only shrinks.
    let debt = [
        (
            "src/cluster/sar.rs",
            "server::metrics",
            "counted in the server's registry",
        ),
        ("src/cluster/watch.rs", "server::tls", "paid off"),
    ];
    let shell = [
        src("cluster::sar", "use crate::server::metrics::Metrics;"),
        src("server::mod", "use crate::cluster::sar::SarClient;"),
    ];
    let bad = room_violations(&shell, &debt);
    assert!(
        bad.len() == 1
            && bad[0]
                .contains("src/cluster/watch.rs: the debt entry `server::tls` no longer occurs"),
        "{bad:?}"
    );
    let bad = room_violations(&shell, &[]);
    assert_eq!(bad.len(), 2, "{bad:?}");
}

/// The mutation check of the reconcilers' steps (`tests/mutants/`) names
/// each rule by its text: a step rewritten without the list following
/// would make the next mutation run report stale rules instead of
/// checking them. This keeps the list current without the builds.
#[test]
fn the_mutation_rules_are_current() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mutants/reconciler_steps.py");
    let out = std::process::Command::new("python3")
        .arg(&script)
        .arg("--check")
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "python3 {}: {e} (python3 runs the mutation list's check)",
                script.display()
            )
        });
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains(" rules, 0 stale"), "{said}");
}
