//! Go `time.Duration`: parsing with `time.ParseDuration` semantics and
//! printing with `Duration.String()` (`%v`), so annotation values are read
//! exactly as upstream reads them and messages print durations exactly as
//! upstream prints them (`1m0s`, `168h0m0s`, `300ms`).

use std::fmt;

/// A Go `time.Duration`: signed nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct GoDuration(pub i64);

const NANOSECOND: u64 = 1;
const MICROSECOND: u64 = 1_000 * NANOSECOND;
const MILLISECOND: u64 = 1_000 * MICROSECOND;
const SECOND: u64 = 1_000 * MILLISECOND;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;
const LIMIT: u64 = 1 << 63;

impl GoDuration {
    pub const ZERO: GoDuration = GoDuration(0);

    pub const fn from_secs(s: i64) -> Self {
        GoDuration(s * 1_000_000_000)
    }
    pub const fn from_millis(ms: i64) -> Self {
        GoDuration(ms * 1_000_000)
    }
    pub const fn from_mins(m: i64) -> Self {
        GoDuration(m * 60 * 1_000_000_000)
    }
    pub const fn from_hours(h: i64) -> Self {
        GoDuration(h * 3600 * 1_000_000_000)
    }
    pub const fn as_nanos(self) -> i64 {
        self.0
    }

    /// Non-negative part as a std duration (negative → zero).
    pub fn to_std(self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.0.max(0) as u64)
    }

    /// As a jiff signed duration, for timestamp arithmetic.
    pub fn to_signed(self) -> k8s_openapi::jiff::SignedDuration {
        k8s_openapi::jiff::SignedDuration::from_nanos(self.0)
    }

    /// Go's `time.ParseDuration`. Error texts are Go's.
    pub fn parse(orig: &str) -> Result<GoDuration, String> {
        let invalid = || format!("time: invalid duration \"{orig}\"");
        let mut s = orig.as_bytes();
        let mut neg = false;
        if let Some(&c) = s.first() {
            if c == b'-' || c == b'+' {
                neg = c == b'-';
                s = &s[1..];
            }
        }
        if s == b"0" {
            return Ok(GoDuration(0));
        }
        if s.is_empty() {
            return Err(invalid());
        }
        let mut d: u64 = 0;
        while !s.is_empty() {
            let c = s[0];
            if !(c == b'.' || c.is_ascii_digit()) {
                return Err(invalid());
            }
            // leading integer
            let before = s.len();
            let (v, rest) = leading_int(s).ok_or_else(invalid)?;
            s = rest;
            let pre = before != s.len();
            // fraction
            let mut f: u64 = 0;
            let mut scale: f64 = 1.0;
            let mut post = false;
            if s.first() == Some(&b'.') {
                s = &s[1..];
                let before = s.len();
                let (ff, sc, rest) = leading_fraction(s);
                f = ff;
                scale = sc;
                s = rest;
                post = before != s.len();
            }
            if !pre && !post {
                return Err(invalid());
            }
            // unit
            let i = s
                .iter()
                .position(|&c| c == b'.' || c.is_ascii_digit())
                .unwrap_or(s.len());
            if i == 0 {
                return Err(format!("time: missing unit in duration \"{orig}\""));
            }
            let u = &s[..i];
            s = &s[i..];
            let unit = match u {
                b"ns" => NANOSECOND,
                b"us" => MICROSECOND,
                b"\xc2\xb5s" => MICROSECOND, // U+00B5 micro sign
                b"\xce\xbcs" => MICROSECOND, // U+03BC Greek mu
                b"ms" => MILLISECOND,
                b"s" => SECOND,
                b"m" => MINUTE,
                b"h" => HOUR,
                _ => {
                    return Err(format!(
                        "time: unknown unit \"{}\" in duration \"{orig}\"",
                        String::from_utf8_lossy(u)
                    ))
                }
            };
            if v > LIMIT / unit {
                return Err(invalid());
            }
            let mut v = v * unit;
            if f > 0 {
                v += (f as f64 * (unit as f64 / scale)) as u64;
                if v > LIMIT {
                    return Err(invalid());
                }
            }
            // Go's uint64 wraps when both terms are 1<<63 and then reads
            // such a duration as 0; refuse it instead.
            d = d
                .checked_add(v)
                .filter(|d| *d <= LIMIT)
                .ok_or_else(invalid)?;
        }
        if neg {
            return Ok(GoDuration((d as i64).wrapping_neg()));
        }
        if d > LIMIT - 1 {
            return Err(invalid());
        }
        Ok(GoDuration(d as i64))
    }
}

fn leading_int(s: &[u8]) -> Option<(u64, &[u8])> {
    let mut x: u64 = 0;
    let mut i = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        if x > LIMIT / 10 {
            return None;
        }
        x = x * 10 + u64::from(s[i] - b'0');
        if x > LIMIT {
            return None;
        }
        i += 1;
    }
    Some((x, &s[i..]))
}

fn leading_fraction(s: &[u8]) -> (u64, f64, &[u8]) {
    let mut x: u64 = 0;
    let mut scale = 1.0;
    let mut overflow = false;
    let mut i = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        let c = s[i];
        i += 1;
        if overflow {
            continue;
        }
        if x > (LIMIT - 1) / 10 {
            overflow = true;
            continue;
        }
        let y = x * 10 + u64::from(c - b'0');
        if y > LIMIT {
            overflow = true;
            continue;
        }
        x = y;
        scale *= 10.0;
    }
    (x, scale, &s[i..])
}

/// Go's `fmtFrac`: the fraction of `v / 10^prec` without trailing zeros,
/// pushed (reversed) onto `out`; returns the integer part.
fn fmt_frac(out: &mut Vec<char>, mut v: u64, prec: usize) -> u64 {
    let mut print = false;
    for _ in 0..prec {
        let digit = v % 10;
        print = print || digit != 0;
        if print {
            out.push(char::from(b'0' + digit as u8));
        }
        v /= 10;
    }
    if print {
        out.push('.');
    }
    v
}

fn fmt_int(out: &mut Vec<char>, mut v: u64) {
    if v == 0 {
        out.push('0');
        return;
    }
    while v > 0 {
        out.push(char::from(b'0' + (v % 10) as u8));
        v /= 10;
    }
}

impl fmt::Display for GoDuration {
    /// Go's `Duration.String()`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let neg = self.0 < 0;
        let mut u = self.0.unsigned_abs();
        let mut out: Vec<char> = Vec::with_capacity(32); // reversed
        if u < SECOND {
            if u == 0 {
                return f.write_str("0s");
            }
            out.push('s');
            let prec = if u < MICROSECOND {
                out.push('n');
                0
            } else if u < MILLISECOND {
                out.push('µ');
                3
            } else {
                out.push('m');
                6
            };
            u = fmt_frac(&mut out, u, prec);
            fmt_int(&mut out, u);
        } else {
            out.push('s');
            u = fmt_frac(&mut out, u, 9);
            fmt_int(&mut out, u % 60);
            u /= 60;
            if u > 0 {
                out.push('m');
                fmt_int(&mut out, u % 60);
                u /= 60;
                if u > 0 {
                    out.push('h');
                    fmt_int(&mut out, u);
                }
            }
        }
        if neg {
            out.push('-');
        }
        let s: String = out.into_iter().rev().collect();
        f.write_str(&s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sum_of_two_limits_is_refused_not_wrapped() {
        // Each term is 1<<63 ns, which alone is the limit; the sum overflowed u64.
        let input = "9223372036854775808ns9223372036854775808ns";
        assert_eq!(
            GoDuration::parse(input),
            Err(format!("time: invalid duration \"{input}\""))
        );
        assert_eq!(
            GoDuration::parse(&format!("-{input}")),
            Err(format!("time: invalid duration \"-{input}\""))
        );
        assert_eq!(
            GoDuration::parse("-9223372036854775808ns"),
            Ok(GoDuration(i64::MIN))
        );
    }

    fn p(s: &str) -> Result<i64, String> {
        GoDuration::parse(s).map(|d| d.0)
    }

    #[test]
    fn parses_like_go() {
        let s = 1_000_000_000i64;
        let cases: &[(&str, i64)] = &[
            ("0", 0),
            ("-0", 0),
            ("+0", 0),
            ("0s", 0),
            ("90s", 90 * s),
            ("1m30s", 90 * s),
            ("1.5h", 5400 * s),
            ("300ms", 300_000_000),
            ("-1m", -60 * s),
            ("+5s", 5 * s),
            ("1h2m3s4ms5us6ns", 3723 * s + 4_000_000 + 5_000 + 6),
            ("1µs", 1_000),
            ("1μs", 1_000),
            (".5s", s / 2),
            ("1.s", s),
            ("24h", 86_400 * s),
            ("168h", 604_800 * s),
            ("2562047h47m16.854775807s", i64::MAX),
            ("-2562047h47m16.854775808s", i64::MIN),
            ("1.0000000000000000000001s", s), // overflowing fraction digits dropped
        ];
        for (input, want) in cases {
            assert_eq!(p(input), Ok(*want), "{input}");
        }
    }

    #[test]
    fn rejects_like_go() {
        let cases: &[(&str, &str)] = &[
            ("", "time: invalid duration \"\""),
            ("-", "time: invalid duration \"-\""),
            ("abc", "time: invalid duration \"abc\""),
            (
                "222badTime",
                "time: unknown unit \"badTime\" in duration \"222badTime\"",
            ),
            ("10", "time: missing unit in duration \"10\""),
            (".s", "time: invalid duration \".s\""),
            ("1d", "time: unknown unit \"d\" in duration \"1d\""),
            (" 1s", "time: invalid duration \" 1s\""),
            ("1s ", "time: unknown unit \"s \" in duration \"1s \""),
            ("3000000h", "time: invalid duration \"3000000h\""),
            (
                "9223372036854775808ns",
                "time: invalid duration \"9223372036854775808ns\"",
            ),
            ("--1s", "time: invalid duration \"--1s\""),
        ];
        for (input, want) in cases {
            assert_eq!(p(input), Err(want.to_string()), "{input}");
        }
    }

    #[test]
    fn prints_like_go() {
        let cases: &[(i64, &str)] = &[
            (0, "0s"),
            (1, "1ns"),
            (1_100, "1.1µs"),
            (2_200_000, "2.2ms"),
            (300_000_000, "300ms"),
            (1_000_000_000, "1s"),
            (1_500_000_000, "1.5s"),
            (60_000_000_000, "1m0s"),
            (90_000_000_000, "1m30s"),
            (3_600_000_000_000, "1h0m0s"),
            (604_800_000_000_000, "168h0m0s"),
            (86_400_000_000_000, "24h0m0s"),
            (-60_000_000_000, "-1m0s"),
            (-1, "-1ns"),
            (i64::MAX, "2562047h47m16.854775807s"),
            (i64::MIN, "-2562047h47m16.854775808s"),
        ];
        for (nanos, want) in cases {
            assert_eq!(GoDuration(*nanos).to_string(), *want);
        }
    }

    #[test]
    fn round_trips() {
        for n in [
            0i64,
            1,
            999,
            1_000_000,
            59_999_999_999,
            3_723_004_005_006,
            -42,
        ] {
            let d = GoDuration(n);
            assert_eq!(GoDuration::parse(&d.to_string()), Ok(d));
        }
    }
}
