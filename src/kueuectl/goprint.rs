//! How Go prints a decoded JSON value, byte for byte as kubectl's printers
//! write it: `fmt`'s `%v` and `%#v` of `map[string]interface{}` trees and
//! `encoding/json`'s output (keys sorted, `<`, `>`, `&` escaped). Numbers
//! that are integers in the JSON are Go `int64`s (kubectl's unstructured
//! objects), the others `float64`s.

use serde_json::{Map, Number, Value};

/// `strconv.FormatFloat(f, 'g', -1, 64)`, as `%v` prints a float64: the
/// shortest digits, an exponent below 1e-4 and from 1e6 on (`1e+06`).
pub fn float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // Rust's `{:e}` gives the shortest round-trip digits: d.ddde±x.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    // Go's shortest %g uses %e when the exponent is < -4 or >= 6.
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    let s = format!("{f}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

fn number(n: &Number) -> String {
    match (n.as_i64(), n.as_u64(), n.as_f64()) {
        (Some(i), _, _) => i.to_string(),
        (_, Some(u), _) => u.to_string(),
        (_, _, Some(f)) => float(f),
        _ => n.to_string(),
    }
}

/// `fmt.Sprint(v)`: `map[k:v k2:v2]`, `[a b]`, `<nil>`.
pub fn plain(v: &Value) -> String {
    let mut s = String::new();
    write_plain(v, &mut s);
    s
}

fn write_plain(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number(n)),
        Value::String(s) => out.push_str(s),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_plain(x, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push_str("map[");
            for (i, (k, x)) in sorted(m).into_iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                write_plain(x, out);
            }
            out.push(']');
        }
    }
}

/// `fmt.Sprintf("%#v", v)` of a decoded JSON value.
pub fn go_syntax(v: &Value) -> String {
    let mut s = String::new();
    write_go_syntax(v, &mut s, true);
    s
}

fn write_go_syntax(v: &Value, out: &mut String, top: bool) {
    match v {
        // A nil inside a container is a typed nil interface.
        Value::Null if top => out.push_str("<nil>"),
        Value::Null => out.push_str("interface {}(nil)"),
        Value::String(s) => out.push_str(&quote(s)),
        Value::Array(a) => {
            out.push_str("[]interface {}{");
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_go_syntax(x, out, false);
            }
            out.push('}');
        }
        Value::Object(m) => {
            out.push_str("map[string]interface {}{");
            for (i, (k, x)) in sorted(m).into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&quote(k));
                out.push(':');
                write_go_syntax(x, out, false);
            }
            out.push('}');
        }
        other => write_plain(other, out),
    }
}

/// `strconv.Quote`: Go's double-quoted string literal.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x0b' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => {
                if (c as u32) <= 0xffff {
                    out.push_str(&format!("\\u{:04x}", c as u32))
                } else {
                    out.push_str(&format!("\\U{:08x}", c as u32))
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's name of a decoded value's type, as its error messages say it.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

fn sorted(m: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut v: Vec<_> = m.iter().collect();
    v.sort_by(|a, b| a.0.cmp(b.0));
    v
}

/// `json.Marshal(v)`; with `indent`, `json.MarshalIndent(v, "", indent)`.
pub fn json(v: &Value, indent: Option<&str>) -> String {
    let mut s = String::new();
    write_json(v, indent, 0, &mut s);
    s
}

fn newline(indent: Option<&str>, depth: usize, out: &mut String) {
    if let Some(i) = indent {
        out.push('\n');
        for _ in 0..depth {
            out.push_str(i);
        }
    }
}

fn write_json(v: &Value, indent: Option<&str>, depth: usize, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&json_number(n)),
        Value::String(s) => json_string(s, out),
        Value::Array(a) if a.is_empty() => out.push_str("[]"),
        Value::Object(m) if m.is_empty() => out.push_str("{}"),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(indent, depth + 1, out);
                write_json(x, indent, depth + 1, out);
            }
            newline(indent, depth, out);
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, x)) in sorted(m).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(indent, depth + 1, out);
                json_string(k, out);
                out.push(':');
                if indent.is_some() {
                    out.push(' ');
                }
                write_json(x, indent, depth + 1, out);
            }
            newline(indent, depth, out);
            out.push('}');
        }
    }
}

/// encoding/json's float64: `%f` between 1e-6 and 1e21, else `%e` with a
/// short exponent (`1e-7`, `1e+21`).
fn json_number(n: &Number) -> String {
    let Some(f) = n.as_f64().filter(|_| n.is_f64()) else {
        return n.to_string();
    };
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let s = format!("{f:e}");
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let e: i32 = e.parse().unwrap_or(0);
        let sign = if e < 0 { '-' } else { '+' };
        return format!("{m}e{sign}{}", e.abs());
    }
    let s = format!("{f}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

fn json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_print_as_go_percent_v() {
        for (f, s) in [
            (1.0, "1"),
            (1e6, "1e+06"),
            (123456.0, "123456"),
            (1234567.0, "1.234567e+06"),
            (1e21, "1e+21"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5, "1.5"),
            (-2.25e-7, "-2.25e-07"),
        ] {
            assert_eq!(float(f), s, "{f}");
        }
    }

    #[test]
    fn values_print_as_go() {
        let v = json!({"a": {"b": [1, "x\"<", null, true, {}]}, "c": [], "d": 2.5});
        assert_eq!(
            plain(&v),
            r#"map[a:map[b:[1 x"< <nil> true map[]]] c:[] d:2.5]"#
        );
        assert_eq!(
            go_syntax(&v),
            r#"map[string]interface {}{"a":map[string]interface {}{"b":[]interface {}{1, "x\"<", interface {}(nil), true, map[string]interface {}{}}}, "c":[]interface {}{}, "d":2.5}"#
        );
        assert_eq!(
            json(&v, None),
            r#"{"a":{"b":[1,"x\"\u003c",null,true,{}]},"c":[],"d":2.5}"#
        );
        assert_eq!(
            json(&json!({"a": [1, {}], "b": "c"}), Some("    ")),
            "{\n    \"a\": [\n        1,\n        {}\n    ],\n    \"b\": \"c\"\n}"
        );
    }
}
