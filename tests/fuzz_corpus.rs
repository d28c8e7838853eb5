//! The fuzz targets on the stable toolchain, without libFuzzer: every
//! committed corpus input (`fuzz/corpus/<target>/`, crash inputs that were
//! fixed included) replayed through the target's body in
//! `batchgate::testing::fuzzing`, then a bounded, seeded mutation smoke over the same
//! corpus and the target's dictionary, so CI exercises more than the fixed
//! inputs. The coverage-guided runs are `cargo +nightly fuzz run <target>`
//! (docs/development.md, "Fuzzing").

use std::{
    fs,
    path::{Path, PathBuf},
};

use batchgate::testing::fuzzing::TARGETS;

/// Mutated inputs per target; `BATCHGATE_FUZZ_SMOKE_CASES` overrides.
const CASES: usize = 2_000;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = fuzz_dir().join("corpus").join(target);
    let mut out: Vec<_> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.expect("a corpus entry").path();
            let data = fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (path, data)
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "{} is empty", dir.display());
    out
}

/// libFuzzer's dictionary format: one `"token"` a line, `\\`, `\"` and
/// `\xNN` escapes.
fn dictionary(target: &str) -> Vec<Vec<u8>> {
    let Ok(text) = fs::read_to_string(fuzz_dir().join("dict").join(format!("{target}.dict")))
    else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| line.trim().strip_prefix('"')?.strip_suffix('"'))
        .map(|quoted| {
            let (mut out, b) = (Vec::new(), quoted.as_bytes());
            let mut i = 0;
            while i < b.len() {
                match (b[i], b.get(i + 1)) {
                    (b'\\', Some(b'x')) if i + 3 < b.len() => {
                        let hex = std::str::from_utf8(&b[i + 2..i + 4]).unwrap_or("");
                        out.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                        i += 4;
                    }
                    (b'\\', Some(&c)) => {
                        out.push(c);
                        i += 2;
                    }
                    (c, _) => {
                        out.push(c);
                        i += 1;
                    }
                }
            }
            out
        })
        .collect()
}

/// xorshift64*: a fixed seed, so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One to four of libFuzzer's simpler mutations.
fn mutate(rng: &mut Rng, input: &[u8], other: &[u8], dict: &[Vec<u8>]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(v.len() + 1);
        match rng.below(7) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] = rng.next() as u8;
            }
            2 => v.insert(at, rng.next() as u8),
            3 if !v.is_empty() => {
                let end = (at + 1 + rng.below(16)).min(v.len());
                v.drain(at.min(end)..end);
            }
            4 if !dict.is_empty() => {
                let token = &dict[rng.below(dict.len())];
                v.splice(at..at, token.iter().copied());
            }
            5 if !other.is_empty() => {
                // Splice: our head, the other input's tail.
                let from = rng.below(other.len());
                v.truncate(at);
                v.extend_from_slice(&other[from..]);
            }
            _ => {
                let (a, b) = (rng.below(v.len() + 1), rng.below(v.len() + 1));
                let chunk = v[a.min(b)..a.max(b)].to_vec();
                v.splice(at..at, chunk);
            }
        }
    }
    v
}

#[test]
fn every_corpus_input_passes_its_target() {
    for (name, target) in TARGETS {
        for (path, data) in corpus(name) {
            let ok = std::panic::catch_unwind(|| target(&data));
            assert!(ok.is_ok(), "{name}: {} fails", path.display());
        }
    }
}

#[test]
fn mutated_corpus_inputs_pass_their_targets() {
    let cases = std::env::var("BATCHGATE_FUZZ_SMOKE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CASES);
    for (n, (name, target)) in TARGETS.iter().enumerate() {
        let inputs: Vec<Vec<u8>> = corpus(name).into_iter().map(|(_, d)| d).collect();
        let dict = dictionary(name);
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (n as u64 + 1));
        for case in 0..cases {
            let input = &inputs[rng.below(inputs.len())];
            let other = &inputs[rng.below(inputs.len())];
            let data = mutate(&mut rng, input, other, &dict);
            let ok = std::panic::catch_unwind(|| target(&data));
            assert!(
                ok.is_ok(),
                "{name}: mutated case {case} fails; input (escaped): {}",
                data.escape_ascii()
            );
        }
    }
}

#[test]
fn every_target_has_a_cargo_fuzz_binary() {
    let manifest = fs::read_to_string(fuzz_dir().join("Cargo.toml")).expect("fuzz/Cargo.toml");
    for (name, _) in TARGETS {
        let source = fuzz_dir().join("fuzz_targets").join(format!("{name}.rs"));
        let body =
            fs::read_to_string(&source).unwrap_or_else(|e| panic!("{}: {e}", source.display()));
        assert!(
            body.contains(&format!("batchgate::testing::fuzzing::{name}(")),
            "{}",
            source.display()
        );
        assert!(
            manifest.contains(&format!("name = \"{name}\"")),
            "fuzz/Cargo.toml has no [[bin]] {name}"
        );
    }
}
