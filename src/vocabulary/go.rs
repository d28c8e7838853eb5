//! Go's `strconv`, as Kueue (a Go program) reads and quotes values: the
//! same accepted spellings and the same error texts, so a denial or a
//! parsed annotation matches upstream's byte for byte.

use std::fmt::Write;

/// Go's `strconv.Quote`.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `strconv.Atoi` on 64-bit, with its error text.
pub fn go_atoi(s: &str) -> Result<i64, String> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "strconv.Atoi: parsing {}: invalid syntax",
            go_quote(s)
        ));
    }
    s.trim_start_matches('+')
        .parse::<i64>()
        .map_err(|_| format!("strconv.Atoi: parsing {}: value out of range", go_quote(s)))
}

/// Go's `strconv.ParseBool`, with its error text.
pub fn go_parse_bool(s: &str) -> Result<bool, String> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(format!(
            "strconv.ParseBool: parsing {}: invalid syntax",
            go_quote(s)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_like_go() {
        assert_eq!(go_quote("a\"b\\c\n\u{1}"), r#""a\"b\\c\n\x01""#);
        assert_eq!(go_quote("ünï"), "\"ünï\"");
    }

    #[test]
    fn go_number_parsing() {
        assert_eq!(go_atoi("+7"), Ok(7));
        assert_eq!(go_atoi("007"), Ok(7));
        assert_eq!(go_atoi("-3"), Ok(-3));
        assert!(go_atoi(" 7").is_err());
        assert_eq!(
            go_atoi("99999999999999999999"),
            Err(r#"strconv.Atoi: parsing "99999999999999999999": value out of range"#.into())
        );
        assert_eq!(go_parse_bool("T"), Ok(true));
        assert!(go_parse_bool("yes").is_err());
    }
}
