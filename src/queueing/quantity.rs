//! Kubernetes resource quantities as `i64` milli-units.
//!
//! The engine counts every resource in thousandths of its unit: cpu `"1"` is
//! 1000, `"500m"` is 500, memory `"1Gi"` is 1073741824000. One scale for every
//! resource keeps the quota arithmetic uniform; the price is the range: about
//! 9.2e15 units (8 PiB of memory), which no ClusterQueue reaches.
//!
//! [`parse`] follows `resource.ParseQuantity` (apimachinery): an optional
//! sign, a decimal number, and a suffix that is binary (`Ki`…`Ei`), decimal
//! (`n`, `u`, `m`, `k`, `M`, `G`, `T`, `P`, `E`) or an exponent (`e3`, `E-2`).
//! Precision below a milli-unit rounds up, as `Quantity.MilliValue()` does.
//! [`format`] writes the canonical form the apiserver would print, so a
//! message names quantities the way the user wrote them.

use super::Error;

/// Largest mantissa we accept before scaling; keeps the i128 maths exact.
const MAX_DIGITS: usize = 30;

const EXPECTED: &str = "a number with an optional suffix, e.g. 500m, 2, 1.5, 1Gi, 100M or 1e3";

/// Parses a quantity string (`"500m"`, `"2"`, `"1Gi"`, `"1.5"`, `"100M"`,
/// `"1e3"`) into milli-units.
pub fn parse(input: &str) -> Result<i64, Error> {
    let fail = |problem: &str| Error::Quantity {
        input: input.to_string(),
        problem: format!("{problem}; expected {EXPECTED}"),
    };
    let (negative, rest) = match input.as_bytes().first() {
        Some(b'-') => (true, &input[1..]),
        Some(b'+') => (false, &input[1..]),
        Some(_) => (false, input),
        None => return Err(fail("it is empty")),
    };
    let number_len = rest
        .bytes()
        .position(|b| !(b.is_ascii_digit() || b == b'.'))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(number_len);
    let (int_part, frac_part) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number, ""),
    };
    if frac_part.contains('.') {
        return Err(fail("it has more than one decimal point"));
    }
    if int_part.is_empty() && frac_part.is_empty() {
        return Err(fail("it does not start with a number"));
    }
    let digits = int_part.trim_start_matches('0').len() + frac_part.len();
    if digits > MAX_DIGITS {
        return Err(fail("it has too many digits"));
    }
    let mut mantissa: i128 = 0;
    for b in int_part.bytes().chain(frac_part.bytes()) {
        mantissa = mantissa * 10 + i128::from(b - b'0');
    }
    let frac_digits = frac_part.len() as i32;

    // value = mantissa * 10^-frac_digits * scale, in milli-units (* 10^3).
    let milli = match suffix_scale(suffix) {
        Some(Scale::Decimal(exp)) => scale_decimal(mantissa, exp + 3 - frac_digits),
        Some(Scale::Binary(shift)) => {
            // mantissa * 2^shift * 1000 / 10^frac_digits, rounded up.
            let numerator = mantissa
                .checked_mul(1i128 << shift)
                .and_then(|n| n.checked_mul(1000));
            numerator.and_then(|n| Some(ceil_div(n, pow10(frac_digits)?)))
        }
        None => {
            return Err(fail(&format!(
                "{suffix:?} is not a quantity suffix (use one of n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei, or an exponent such as e3)"
            )))
        }
    };
    let milli = milli.and_then(|m| i64::try_from(m).ok()).ok_or_else(|| {
        fail("it is too large to count in milli-units (the limit is about 9.2e15)")
    })?;
    Ok(if negative { -milli } else { milli })
}

enum Scale {
    /// Power of ten.
    Decimal(i32),
    /// Power of two.
    Binary(u32),
}

fn suffix_scale(suffix: &str) -> Option<Scale> {
    let decimal = |e| Some(Scale::Decimal(e));
    match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => Some(Scale::Binary(10)),
        "Mi" => Some(Scale::Binary(20)),
        "Gi" => Some(Scale::Binary(30)),
        "Ti" => Some(Scale::Binary(40)),
        "Pi" => Some(Scale::Binary(50)),
        "Ei" => Some(Scale::Binary(60)),
        _ => {
            // "e3", "E-2": a decimal exponent (a lone "E" is exa, above).
            let exp = suffix.strip_prefix(['e', 'E'])?;
            let digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
            if digits.is_empty() || digits.len() > 3 || !digits.bytes().all(|b| b.is_ascii_digit())
            {
                return None;
            }
            exp.parse().ok().map(Scale::Decimal)
        }
    }
}

fn pow10(exp: i32) -> Option<i128> {
    10i128.checked_pow(u32::try_from(exp).ok()?)
}

/// `mantissa * 10^exp`, rounded up when `exp` is negative.
fn scale_decimal(mantissa: i128, exp: i32) -> Option<i128> {
    if mantissa == 0 {
        return Some(0);
    }
    if exp >= 0 {
        mantissa.checked_mul(pow10(exp)?)
    } else {
        // Anything past 10^-38 of a milli-unit rounds up to one.
        Some(pow10(-exp).map_or(1, |d| ceil_div(mantissa, d)))
    }
}

/// `n / d` rounded up, for `n >= 0`, `d > 0`; `n + d - 1` could overflow.
fn ceil_div(n: i128, d: i128) -> i128 {
    n / d + i128::from(n % d != 0)
}

/// Resources whose quantities Kubernetes prints with binary suffixes.
fn is_bytes(resource: &str) -> bool {
    resource == "memory"
        || resource.ends_with("ephemeral-storage")
        || resource.starts_with("hugepages-")
}

/// The canonical string of `milli` milli-units of `resource`: `500m`, `2`,
/// `1Gi`, `1500`, `20k`. Byte resources use binary suffixes when the value
/// is a whole multiple of 1024 (BinarySI), everything else decimal ones
/// (so `100M` of memory stays `100M`).
pub fn format(resource: &str, milli: i64) -> String {
    let sign = if milli < 0 { "-" } else { "" };
    let abs = milli.unsigned_abs();
    if abs == 0 {
        return "0".into();
    }
    if is_bytes(resource) && abs.is_multiple_of(1000) {
        let mut units = abs / 1000;
        let mut power = 0;
        while units.is_multiple_of(1024) && power < 6 {
            units /= 1024;
            power += 1;
        }
        if power > 0 {
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power];
            return format!("{sign}{units}{suffix}");
        }
    }
    // DecimalSI: the largest multiple-of-three exponent that keeps an
    // integer mantissa.
    let mut mantissa = abs;
    let mut exp = -3;
    while mantissa.is_multiple_of(1000) && exp < 18 {
        mantissa /= 1000;
        exp += 3;
    }
    let suffix = match exp {
        -3 => "m",
        0 => "",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        _ => "E",
    };
    format!("{sign}{mantissa}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_up_near_the_i128_limit_does_not_overflow() {
        // mantissa * 2^20 * 1000 lands within 10^30 of i128::MAX; the old
        // `(n + d - 1) / d` overflowed there.
        assert_eq!(parse("0.162259276829213363391578010288Mi"), Ok(170_141_184));
    }

    #[test]
    fn parses_the_common_forms() {
        for (s, want) in [
            ("500m", 500),
            ("2", 2000),
            ("1Gi", 1_073_741_824_000),
            ("1.5", 1500),
            ("100M", 100_000_000_000),
            ("1e3", 1_000_000),
            ("1E3", 1_000_000),
            ("1P", 1_000_000_000_000_000_000),
            ("0", 0),
            ("0.5", 500),
            (".5", 500),
            ("5.", 5000),
            ("+3", 3000),
            ("-3", -3000),
            ("1k", 1_000_000),
            ("128Mi", 134_217_728_000),
            ("1.5Gi", 1_610_612_736_000),
            ("2e-3", 2),
            ("250u", 1),
            ("1n", 1),
            ("0.0001", 1),
        ] {
            assert_eq!(parse(s).unwrap(), want, "{s}");
        }
    }

    #[test]
    fn errors_name_the_input_and_the_fix() {
        for (s, part) in [
            ("", "it is empty"),
            ("abc", "does not start with a number"),
            ("1.2.3", "more than one decimal point"),
            ("1Gb", "\"Gb\" is not a quantity suffix"),
            ("1 Gi", "\" Gi\" is not a quantity suffix"),
            ("10E", "too large"),
            ("1E", "too large"),
            ("1e", "\"e\" is not a quantity suffix"),
            ("1234567890123456789012345678901", "too many digits"),
        ] {
            let err = parse(s).unwrap_err().to_string();
            assert!(err.contains(part), "{s}: {err}");
            assert!(err.contains(&format!("{s:?}")), "{s}: {err}");
            assert!(err.contains("expected a number"), "{s}: {err}");
        }
    }

    #[test]
    fn formats_canonically() {
        assert_eq!(format("cpu", 500), "500m");
        assert_eq!(format("cpu", 2000), "2");
        assert_eq!(format("cpu", 1500), "1500m");
        assert_eq!(format("cpu", 20_000_000), "20k");
        assert_eq!(format("cpu", 0), "0");
        assert_eq!(format("cpu", -4000), "-4");
        assert_eq!(format("memory", 1_073_741_824_000), "1Gi");
        assert_eq!(format("memory", 1_610_612_736_000), "1536Mi");
        assert_eq!(format("memory", 1_500_000), "1500");
        assert_eq!(format("memory", 100_000_000_000), "100M");
        assert_eq!(format("nvidia.com/gpu", 8000), "8");
    }

    #[test]
    fn format_then_parse_round_trips() {
        for (r, v) in [
            ("cpu", 1),
            ("cpu", 999_999),
            ("memory", 3 << 40),
            ("pods", 7_000),
        ] {
            assert_eq!(parse(&format(r, v)).unwrap(), v, "{r} {v}");
        }
    }
}
