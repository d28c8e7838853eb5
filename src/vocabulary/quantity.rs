//! Resource quantities read exactly as apimachinery's `resource.Quantity`
//! reads them, for the comparisons and messages of Kueue's webhooks.
//!
//! The quota engine keeps milli-units (`crate::queueing::quantity`); a
//! webhook needs more: an exact sign and order (`lendingLimit` against
//! `nominalQuota`, a fair-sharing weight against `1n`), the integer value
//! `resources.ResourceValue` takes, and `Quantity.String()`, which upstream
//! prints in its messages. A value is kept in nano-units (ParseQuantity
//! rounds anything finer up to `1n`) with the format its suffix implies.

use std::cmp::Ordering;

/// `resource.ErrFormatWrong`, which decoding the object reports upstream.
pub const FORMAT_WRONG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
/// `resource.ErrSuffix`.
pub const BAD_SUFFIX: &str = "unable to parse quantity's suffix";

const NANO: i128 = 1_000_000_000;
/// ParseQuantity caps magnitudes at 2^63-1 units.
const MAX_NANOS: i128 = (i64::MAX as i128) * NANO;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    DecimalSi,
    BinarySi,
    DecimalExponent,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quantity {
    /// The value times 10^9, signed.
    nanos: i128,
    format: Format,
    /// What `String()` returns when ParseQuantity kept the input string
    /// (its fast path, for inputs already in canonical form).
    kept: Option<String>,
}

impl Quantity {
    /// `resource.ParseQuantity`.
    pub fn parse(input: &str) -> Result<Quantity, &'static str> {
        if input.is_empty() {
            return Err(FORMAT_WRONG);
        }
        if input == "0" {
            return Ok(Quantity {
                nanos: 0,
                format: Format::DecimalSi,
                kept: Some("0".into()),
            });
        }
        let parts = split(input)?;
        let (format, base2, exp) = suffix(parts.suffix).ok_or(BAD_SUFFIX)?;
        // Trailing zeros carry no value: drop them, moving them into the
        // exponent, so only truly significant digits count towards i128.
        let denom = parts.denom.trim_end_matches('0');
        let (num, num_zeros) = if denom.is_empty() {
            let t = parts.num.trim_end_matches('0');
            (t, (parts.num.len() - t.len()) as i32)
        } else {
            (parts.num, 0)
        };
        let all: String = format!("{num}{denom}");
        let digits = all.trim_start_matches('0');
        // value = digits * 10^(zeros - len(denom)) * (2^exp | 10^exp), in nanos.
        let shift = num_zeros - denom.len() as i32;
        let nanos = if base2 {
            if digits.len() > 38 {
                return Err(FORMAT_WRONG);
            }
            let mantissa = mantissa_of(digits);
            let scaled = mantissa
                .checked_mul(1i128 << exp)
                .and_then(|m| scale10(m, 9 + shift.max(0)));
            scaled.map(|n| match 10i128.checked_pow((-shift.min(0)) as u32) {
                Some(d) => ceil_div(n, d),
                // Finer than 10^-38 of a nano-unit: rounds up to 1n.
                None => i128::from(n > 0),
            })
        } else {
            decimal_nanos(digits, exp + 9 + shift)
        };
        let nanos = nanos.map_or(MAX_NANOS, |n| n.min(MAX_NANOS));
        let kept = kept_string(input, &parts, base2, exp);
        Ok(Quantity {
            nanos: if parts.positive { nanos } else { -nanos },
            format,
            kept,
        })
    }

    pub fn is_negative(&self) -> bool {
        self.nanos < 0
    }

    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    /// `Quantity.Cmp`.
    pub fn cmp_value(&self, other: &Quantity) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }

    /// Exactly `n` nano-units (`n` of `1n`).
    pub fn nanos(&self) -> i128 {
        self.nanos
    }

    /// `resources.ResourceValue`: milli-units for cpu, units otherwise,
    /// rounded up as `MilliValue()` and `Value()` do.
    pub fn resource_value(&self, resource: &str) -> i128 {
        let unit = if resource == "cpu" { NANO / 1000 } else { NANO };
        let magnitude = ceil_div(self.nanos.abs(), unit);
        if self.nanos < 0 {
            -magnitude
        } else {
            magnitude
        }
    }

    /// `Quantity.String()`.
    pub fn canonical(&self) -> String {
        if let Some(s) = &self.kept {
            return s.clone();
        }
        if self.nanos == 0 {
            return "0".into();
        }
        let sign = if self.nanos < 0 { "-" } else { "" };
        let abs = self.nanos.unsigned_abs();
        let mut format = self.format;
        if format == Format::BinarySi
            && (abs < 1024 * NANO as u128 || !abs.is_multiple_of(NANO as u128))
        {
            // Below 1Ki, or not a whole number: shown in decimal, unrounded.
            format = Format::DecimalSi;
        }
        if format == Format::BinarySi {
            let mut units = abs / NANO as u128;
            let mut power = 0;
            while units.is_multiple_of(1024) && power < 6 {
                units /= 1024;
                power += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power];
            return format!("{sign}{units}{suffix}");
        }
        // All factors of ten into the exponent, then down to a multiple of 3.
        let (mut mantissa, mut exp) = (abs, -9i32);
        while mantissa.is_multiple_of(10) {
            mantissa /= 10;
            exp += 1;
        }
        while exp.rem_euclid(3) != 0 {
            mantissa *= 10;
            exp -= 1;
        }
        let suffix = match (format, exp) {
            (_, 0) => String::new(),
            (Format::DecimalSi, -9) => "n".into(),
            (Format::DecimalSi, -6) => "u".into(),
            (Format::DecimalSi, -3) => "m".into(),
            (Format::DecimalSi, 3) => "k".into(),
            (Format::DecimalSi, 6) => "M".into(),
            (Format::DecimalSi, 9) => "G".into(),
            (Format::DecimalSi, 12) => "T".into(),
            (Format::DecimalSi, 15) => "P".into(),
            (Format::DecimalSi, 18) => "E".into(),
            (_, e) => format!("e{e}"),
        };
        format!("{sign}{mantissa}{suffix}")
    }
}

struct Parts<'a> {
    positive: bool,
    /// Integer digits without leading zeros ("0" when there are none).
    num: &'a str,
    denom: &'a str,
    suffix: &'a str,
}

/// `parseQuantityString`.
fn split(s: &str) -> Result<Parts<'_>, &'static str> {
    let b = s.as_bytes();
    let mut pos = 0;
    let mut positive = true;
    match b.first() {
        Some(b'-') => {
            positive = false;
            pos = 1;
        }
        Some(b'+') => pos = 1,
        _ => {}
    }
    while pos < b.len() && b[pos] == b'0' {
        pos += 1;
    }
    if pos == b.len() {
        return Ok(Parts {
            positive,
            num: "0",
            denom: "",
            suffix: "",
        });
    }
    let start = pos;
    while pos < b.len() && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let num = if pos == start { "0" } else { &s[start..pos] };
    let mut denom = "";
    if pos < b.len() && b[pos] == b'.' {
        pos += 1;
        let d = pos;
        while pos < b.len() && b[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &s[d..pos];
    }
    let suffix_start = pos;
    while pos < b.len() && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < b.len() && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < b.len() && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos != b.len() {
        return Err(FORMAT_WRONG);
    }
    Ok(Parts {
        positive,
        num,
        denom,
        suffix: &s[suffix_start..],
    })
}

/// `quantitySuffixer.interpret`: (format, base 2?, exponent).
fn suffix(s: &str) -> Option<(Format, bool, i32)> {
    let dec = |e| Some((Format::DecimalSi, false, e));
    let bin = |e| Some((Format::BinarySi, true, e));
    match s {
        "" => dec(0),
        "n" => dec(-9),
        "u" => dec(-6),
        "m" => dec(-3),
        "k" => dec(3),
        "M" => dec(6),
        "G" => dec(9),
        "T" => dec(12),
        "P" => dec(15),
        "E" => dec(18),
        "Ki" => bin(10),
        "Mi" => bin(20),
        "Gi" => bin(30),
        "Ti" => bin(40),
        "Pi" => bin(50),
        "Ei" => bin(60),
        _ => {
            let rest = s.strip_prefix(['e', 'E'])?;
            let digits = rest.strip_prefix(['+', '-']).unwrap_or(rest);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let e: i32 = rest.parse().ok()?;
            (-1000..=1000)
                .contains(&e)
                .then_some((Format::DecimalExponent, false, e))
        }
    }
}

/// ParseQuantity's fast path keeps the input as the string form when it is
/// already canonical (so `+1` and `01` are printed as written).
fn kept_string(input: &str, p: &Parts<'_>, base2: bool, exp: i32) -> Option<String> {
    if base2 {
        if !p.denom.is_empty() || p.num.len() > 18 {
            return None;
        }
        let precision = 15 - p.num.len() as i32 - (exp as f32 * 3.0 / 10.0) as i32 - 1;
        let value: i64 = p.num.parse().ok()?;
        let fits = value.checked_mul(1i64.checked_shl(exp as u32)?).is_some();
        return (precision >= 0 && fits && value & 0x07 != 0).then(|| input.to_string());
    }
    let digits = p.num.len() + p.denom.len();
    if digits > 18 {
        return None;
    }
    let scale = exp - p.denom.len() as i32;
    if scale < -9 {
        return None;
    }
    let shifted = format!("{}{}", p.num, p.denom);
    let ok = scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0');
    ok.then(|| input.to_string())
}

/// The integer of at most 38 decimal digits.
fn mantissa_of(digits: &str) -> i128 {
    digits
        .bytes()
        .fold(0i128, |m, b| m * 10 + i128::from(b - b'0'))
}

/// `digits * 10^exp` nano-units (no leading zeros in `digits`), rounded up
/// to a whole nano-unit; `None` when beyond i128 (the caller caps).
fn decimal_nanos(digits: &str, exp: i32) -> Option<i128> {
    let (mut digits, mut exp) = (digits, exp);
    let mut round_up = false;
    if exp < 0 {
        // Digits finer than 1n only round up.
        let drop = (exp.unsigned_abs() as usize).min(digits.len());
        let (keep, gone) = digits.split_at(digits.len() - drop);
        round_up = gone.bytes().any(|b| b != b'0');
        digits = keep;
        exp = 0;
    }
    if digits.len() + exp as usize > 38 {
        return None;
    }
    let whole = scale10(mantissa_of(digits), exp)?;
    whole.checked_add(i128::from(round_up))
}

/// `mantissa * 10^exp`, rounded up (ParseQuantity rounds to `1n` upwards).
fn scale10(mantissa: i128, exp: i32) -> Option<i128> {
    if mantissa == 0 {
        return Some(0);
    }
    if exp >= 0 {
        10i128
            .checked_pow(u32::try_from(exp).ok()?)
            .and_then(|p| mantissa.checked_mul(p))
    } else {
        Some(
            10i128
                .checked_pow((-exp) as u32)
                .map_or(1, |d| ceil_div(mantissa, d)),
        )
    }
}

/// `n / d` rounded up, for `n >= 0`, `d > 0`, without overflow.
fn ceil_div(n: i128, d: i128) -> i128 {
    n / d + i128::from(n % d != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(q: &str) -> String {
        Quantity::parse(q).unwrap().canonical()
    }

    #[test]
    fn prints_like_quantity_string() {
        for (input, want) in [
            ("1", "1"),
            ("-1", "-1"),
            ("1000m", "1"),
            ("1.5", "1500m"),
            ("-1.5", "-1500m"),
            ("0.5", "500m"),
            ("1Gi", "1Gi"),
            ("1024Mi", "1Gi"),
            ("0.5Ki", "512"),
            ("-2Gi", "-2Gi"),
            ("1e3", "1e3"),
            ("1e4", "10e3"),
            ("1500", "1500"),
            ("2000", "2k"),
            ("+1", "+1"),
            ("0.0000000001", "1n"),
            ("1n", "1n"),
            ("100M", "100M"),
            ("0", "0"),
            ("0.0", "0"),
        ] {
            assert_eq!(s(input), want, "{input}");
        }
    }

    #[test]
    fn orders_and_values() {
        let q = |v| Quantity::parse(v).unwrap();
        assert_eq!(q("1").cmp_value(&q("1000m")), Ordering::Equal);
        assert_eq!(q("1Ki").cmp_value(&q("1k")), Ordering::Greater);
        assert!(q("-0.1").is_negative());
        assert!(!q("-0").is_negative());
        assert_eq!(q("1").nanos(), NANO);
        assert_eq!(q("1.5").resource_value("cpu"), 1500);
        assert_eq!(q("1.5").resource_value("memory"), 2);
        assert_eq!(q("3Gi").resource_value("memory"), 3 << 30);
    }

    #[test]
    fn rejects_what_parse_quantity_rejects() {
        assert_eq!(Quantity::parse("1x"), Err(FORMAT_WRONG));
        assert_eq!(Quantity::parse("1Qi").unwrap_err(), FORMAT_WRONG);
        assert_eq!(Quantity::parse("1e").unwrap_err(), BAD_SUFFIX);
        assert_eq!(Quantity::parse("").unwrap_err(), FORMAT_WRONG);
    }

    #[test]
    fn huge_values_are_capped_not_overflowed() {
        let q = Quantity::parse(&format!("{}Ei", "9".repeat(30))).unwrap();
        assert_eq!(q.nanos(), MAX_NANOS);
        let q = Quantity::parse(&format!("-{}E", "9".repeat(30))).unwrap();
        assert_eq!(q.nanos(), -MAX_NANOS);
        assert_eq!(q.canonical(), "-9223372036854775807");
        assert_eq!(Quantity::parse(&"1".repeat(40)).unwrap().nanos(), MAX_NANOS);
        let tiny = format!("0.{}1Ki", "0".repeat(60));
        assert_eq!(Quantity::parse(&tiny).unwrap().canonical(), "1n");
        let tiny = format!("0.{}1", "0".repeat(60));
        assert_eq!(Quantity::parse(&tiny).unwrap().canonical(), "1n");
    }

    #[test]
    fn long_decimals_round_up_at_nano() {
        let q = |v: &str| Quantity::parse(v).unwrap();
        let long = format!("100000000000000000000.{}1", "0".repeat(40));
        assert_eq!(q(&long).nanos(), MAX_NANOS);
        let fine = format!("1.{}1", "0".repeat(45));
        assert_eq!(q(&fine).nanos(), NANO + 1);
        assert_eq!(q(&fine).canonical(), "1000000001n");
        assert_eq!(q(&format!("1{}n", "0".repeat(45))).nanos(), MAX_NANOS);
        assert_eq!(q("1e-30").canonical(), "1e-9");
    }

    proptest::proptest! {
        #[test]
        fn never_panics(input in "\\PC{0,60}") {
            let _ = Quantity::parse(&input).map(|q| (q.canonical(), q.resource_value("cpu")));
        }

        #[test]
        fn well_formed_quantities_parse(
            sign in "[+-]?", int in "[0-9]{0,19}", frac in "(\\.[0-9]{0,19})?",
            suffix in "(|n|u|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|e[+-]?[0-9]{1,2})",
        ) {
            proptest::prop_assume!(!(int.is_empty() && frac.len() <= 1));
            let input = format!("{sign}{int}{frac}{suffix}");
            let q = Quantity::parse(&input);
            proptest::prop_assert!(q.is_ok(), "{input}: {q:?}");
            let q = q.unwrap();
            // The canonical form reads back as the same amount.
            let again = Quantity::parse(&q.canonical()).unwrap();
            proptest::prop_assert_eq!(again.cmp_value(&q), Ordering::Equal, "{} -> {}", input, q.canonical());
        }
    }
}
