//! Constraints and selectors: the subset of CEL the k8srm prototype's
//! tests and testdata use, over one variable, `device`, whose fields are a
//! pool's attributes.
//!
//! ```text
//! expr    := or
//! or      := and ( "||" and )*
//! and     := unary ( "&&" unary )*
//! unary   := "!" unary | compare
//! compare := operand ( ("==" | "!=" | "<" | "<=" | ">" | ">=") operand )?
//! operand := "device." NAME | 'string' | "string" | INTEGER | true | false
//!          | "(" expr ")"
//! ```
//!
//! Values compare within their type: strings and semantic versions
//! (`semVerValue`, compared part by part, numerically where both parts are
//! numbers) with strings, integers with integers, quantities
//! (`quantityValue`) with quantity strings (`device.memory >= '10Gi'`),
//! booleans with `==`/`!=`. Anything else is CEL's `no such overload`; an
//! attribute the pool lacks is CEL's `no such key`. Macros, functions,
//! arithmetic, lists and `in` are not supported and are refused with the
//! column where they start.

use std::{cmp::Ordering, fmt};

use crate::api::devices::v1alpha1::Attribute;
use crate::vocabulary::quantity::Quantity;

/// Why an expression does not parse: where and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("syntax error at column {column}: {message}")]
pub struct ParseError {
    /// 1-based, in characters.
    pub column: usize,
    pub message: String,
}

/// Why a parsed expression could not be evaluated against a pool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    #[error("no such key: {0}")]
    NoSuchKey(String),
    #[error("no such overload: {left} {op} {right}")]
    NoSuchOverload {
        left: &'static str,
        op: &'static str,
        right: &'static str,
    },
    #[error("the expression is a {0}, not a bool")]
    NotBool(&'static str),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CompareOp {
    fn as_str(self) -> &'static str {
        match self {
            CompareOp::Eq => "==",
            CompareOp::Ne => "!=",
            CompareOp::Lt => "<",
            CompareOp::Le => "<=",
            CompareOp::Gt => ">",
            CompareOp::Ge => ">=",
        }
    }

    fn holds(self, o: Ordering) -> bool {
        match self {
            CompareOp::Eq => o.is_eq(),
            CompareOp::Ne => o.is_ne(),
            CompareOp::Lt => o.is_lt(),
            CompareOp::Le => o.is_le(),
            CompareOp::Gt => o.is_gt(),
            CompareOp::Ge => o.is_ge(),
        }
    }
}

/// A parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Attribute(String),
    String(String),
    Int(i64),
    Bool(bool),
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Compare(CompareOp, Box<Expr>, Box<Expr>),
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Attribute(a) => write!(f, "device.{a}"),
            Expr::String(s) => write!(f, "'{}'", s.replace('\\', "\\\\").replace('\'', "\\'")),
            Expr::Int(i) => write!(f, "{i}"),
            Expr::Bool(b) => write!(f, "{b}"),
            Expr::Not(e) => write!(f, "!({e})"),
            Expr::And(a, b) => write!(f, "({a} && {b})"),
            Expr::Or(a, b) => write!(f, "({a} || {b})"),
            Expr::Compare(op, a, b) => {
                // A comparison or negation as an operand needs parentheses
                // to read back as the same tree.
                let operand = |e: &Expr| match e {
                    Expr::Compare(..) | Expr::Not(_) => format!("({e})"),
                    _ => e.to_string(),
                };
                write!(f, "{} {} {}", operand(a), op.as_str(), operand(b))
            }
        }
    }
}

/// Parses an expression; an empty or blank one is `None` (always true).
pub fn parse(input: &str) -> Result<Option<Expr>, ParseError> {
    let tokens = lex(input)?;
    if tokens.is_empty() {
        return Ok(None);
    }
    let mut p = Parser {
        tokens,
        at: 0,
        end: input.chars().count() + 1,
        depth: 0,
    };
    let e = p.or()?;
    if let Some(t) = p.peek() {
        return Err(ParseError {
            column: t.column,
            message: format!("unexpected {} after a complete expression", t.kind),
        });
    }
    Ok(Some(e))
}

/// Parses and evaluates: `None` or blank is true.
pub fn meets(constraints: Option<&str>, attrs: &[Attribute]) -> Result<bool, String> {
    let Some(text) = constraints else {
        return Ok(true);
    };
    match parse(text) {
        Ok(None) => Ok(true),
        Ok(Some(e)) => e.eval(attrs).map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// Values borrow from the expression and the pool: evaluating allocates
/// nothing but parsed quantities.
#[derive(Debug, Clone, PartialEq)]
enum Value<'a> {
    String(&'a str),
    SemVer(&'a str),
    Int(i64),
    Quantity(Quantity),
    Bool(bool),
}

impl Value<'_> {
    fn type_name(&self) -> &'static str {
        match self {
            Value::String(_) => "string",
            Value::SemVer(_) => "semver",
            Value::Int(_) => "int",
            Value::Quantity(_) => "quantity",
            Value::Bool(_) => "bool",
        }
    }
}

impl Expr {
    /// Evaluates against a pool's attributes; the result must be a bool.
    pub fn eval(&self, attrs: &[Attribute]) -> Result<bool, EvalError> {
        match self.value(attrs)? {
            Value::Bool(b) => Ok(b),
            v => Err(EvalError::NotBool(v.type_name())),
        }
    }

    fn value<'a>(&'a self, attrs: &'a [Attribute]) -> Result<Value<'a>, EvalError> {
        Ok(match self {
            Expr::Attribute(name) => attribute(attrs, name)?,
            Expr::String(s) => Value::String(s),
            Expr::Int(i) => Value::Int(*i),
            Expr::Bool(b) => Value::Bool(*b),
            Expr::Not(e) => match e.value(attrs)? {
                Value::Bool(b) => Value::Bool(!b),
                v => {
                    return Err(EvalError::NoSuchOverload {
                        left: "",
                        op: "!",
                        right: v.type_name(),
                    })
                }
            },
            Expr::And(a, b) => Value::Bool(a.eval(attrs)? && b.eval(attrs)?),
            Expr::Or(a, b) => Value::Bool(a.eval(attrs)? || b.eval(attrs)?),
            Expr::Compare(op, a, b) => {
                let (l, r) = (a.value(attrs)?, b.value(attrs)?);
                Value::Bool(op.holds(compare(*op, &l, &r)?))
            }
        })
    }
}

fn attribute<'a>(attrs: &'a [Attribute], name: &str) -> Result<Value<'a>, EvalError> {
    let a = attrs
        .iter()
        .find(|a| a.name == name)
        .ok_or_else(|| EvalError::NoSuchKey(name.to_string()))?;
    if let Some(s) = &a.string_value {
        return Ok(Value::String(s));
    }
    if let Some(i) = a.int_value {
        return Ok(Value::Int(i));
    }
    if let Some(q) = &a.quantity_value {
        // A malformed quantity compares as the text it is.
        return Ok(match Quantity::parse(&q.0) {
            Ok(parsed) => Value::Quantity(parsed),
            Err(_) => Value::String(&q.0),
        });
    }
    if let Some(v) = &a.sem_ver_value {
        return Ok(Value::SemVer(v));
    }
    Err(EvalError::NoSuchKey(name.to_string()))
}

fn compare(op: CompareOp, l: &Value, r: &Value) -> Result<Ordering, EvalError> {
    let overload = || EvalError::NoSuchOverload {
        left: l.type_name(),
        op: op.as_str(),
        right: r.type_name(),
    };
    match (l, r) {
        (Value::String(a), Value::String(b)) => Ok(a.cmp(b)),
        (Value::Int(a), Value::Int(b)) => Ok(a.cmp(b)),
        (Value::Bool(a), Value::Bool(b)) if matches!(op, CompareOp::Eq | CompareOp::Ne) => {
            Ok(a.cmp(b))
        }
        (Value::SemVer(a), Value::String(b) | Value::SemVer(b)) => Ok(sem_ver_cmp(a, b)),
        (Value::String(a), Value::SemVer(b)) => Ok(sem_ver_cmp(a, b)),
        (Value::Quantity(a), Value::String(b)) => {
            let b = Quantity::parse(b).map_err(|_| overload())?;
            Ok(a.cmp_value(&b))
        }
        (Value::String(a), Value::Quantity(b)) => {
            let a = Quantity::parse(a).map_err(|_| overload())?;
            Ok(a.cmp_value(b))
        }
        (Value::Quantity(a), Value::Quantity(b)) => Ok(a.cmp_value(b)),
        _ => Err(overload()),
    }
}

/// `1.8.2 < 1.10.0`; `4.2.1-gen3 < 4.2.1-gen7`: dot- and dash-separated
/// parts, numerically where both are numbers, else as text.
pub fn sem_ver_cmp(a: &str, b: &str) -> Ordering {
    let parts = |s: &str| {
        s.trim_start_matches('v')
            .split(['.', '-', '+'])
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let (pa, pb) = (parts(a), parts(b));
    for (x, y) in pa.iter().zip(&pb) {
        let o = natural_cmp(x, y);
        if o.is_ne() {
            return o;
        }
    }
    pa.len().cmp(&pb.len())
}

/// `gen3 < gen10`: runs of digits compare as numbers, the rest as text.
fn natural_cmp(a: &str, b: &str) -> Ordering {
    let runs = |s: &str| {
        let mut out: Vec<(bool, String)> = Vec::new();
        for c in s.chars() {
            let digit = c.is_ascii_digit();
            match out.last_mut() {
                Some((d, run)) if *d == digit => run.push(c),
                _ => out.push((digit, c.to_string())),
            }
        }
        out
    };
    let (ra, rb) = (runs(a), runs(b));
    for ((da, x), (db, y)) in ra.iter().zip(&rb) {
        let o = match (da, db, x.parse::<u128>(), y.parse::<u128>()) {
            (true, true, Ok(x), Ok(y)) => x.cmp(&y),
            _ => x.cmp(y),
        };
        if o.is_ne() {
            return o;
        }
    }
    ra.len().cmp(&rb.len())
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Name(String),
    Str(String),
    Int(i64),
    Dot,
    Op(&'static str),
    Open,
    Close,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::Name(n) => write!(f, "'{n}'"),
            Kind::Str(s) => write!(f, "string '{s}'"),
            Kind::Int(i) => write!(f, "number {i}"),
            Kind::Dot => write!(f, "'.'"),
            Kind::Op(o) => write!(f, "'{o}'"),
            Kind::Open => write!(f, "'('"),
            Kind::Close => write!(f, "')'"),
        }
    }
}

#[derive(Debug, Clone)]
struct Token {
    kind: Kind,
    column: usize,
}

fn lex(input: &str) -> Result<Vec<Token>, ParseError> {
    let chars: Vec<char> = input.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let err = |column: usize, message: String| ParseError { column, message };
    while i < chars.len() {
        let c = chars[i];
        let column = i + 1;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let two: String = chars[i..chars.len().min(i + 2)].iter().collect();
        let kind = match c {
            '(' => Kind::Open,
            ')' => Kind::Close,
            '.' => Kind::Dot,
            '\'' | '"' => {
                let quote = c;
                let mut s = String::new();
                i += 1;
                loop {
                    match chars.get(i) {
                        None => {
                            return Err(err(
                                column,
                                format!("unterminated string: add the closing {quote}"),
                            ))
                        }
                        Some('\\') => {
                            match chars.get(i + 1) {
                                Some(e @ ('\\' | '\'' | '"')) => s.push(*e),
                                Some('n') => s.push('\n'),
                                Some('t') => s.push('\t'),
                                _ => {
                                    return Err(err(
                                        i + 1,
                                        "unknown escape: only \\\\, \\', \\\", \\n and \\t are supported"
                                            .into(),
                                    ))
                                }
                            }
                            i += 2;
                        }
                        Some(ch) if *ch == quote => break,
                        Some(ch) => {
                            s.push(*ch);
                            i += 1;
                        }
                    }
                }
                Kind::Str(s)
            }
            '0'..='9' => {
                let start = i;
                while i + 1 < chars.len() && chars[i + 1].is_ascii_digit() {
                    i += 1;
                }
                let text: String = chars[start..=i].iter().collect();
                let n = text.parse::<i64>().map_err(|_| {
                    err(
                        column,
                        format!("integer {text} is out of range (at most {})", i64::MAX),
                    )
                })?;
                Kind::Int(n)
            }
            c if c.is_alphabetic() || c == '_' => {
                let start = i;
                while i + 1 < chars.len() && (chars[i + 1].is_alphanumeric() || chars[i + 1] == '_')
                {
                    i += 1;
                }
                Kind::Name(chars[start..=i].iter().collect())
            }
            _ => {
                let op = match two.as_str() {
                    "==" => Some("=="),
                    "!=" => Some("!="),
                    "<=" => Some("<="),
                    ">=" => Some(">="),
                    "&&" => Some("&&"),
                    "||" => Some("||"),
                    _ => None,
                };
                match op {
                    Some(op) => {
                        i += 1;
                        Kind::Op(op)
                    }
                    None => match c {
                        '<' => Kind::Op("<"),
                        '>' => Kind::Op(">"),
                        '!' => Kind::Op("!"),
                        '=' => {
                            return Err(err(
                                column,
                                "'=' is not an operator: compare with '=='".into(),
                            ))
                        }
                        '&' => return Err(err(column, "'&' is not an operator: use '&&'".into())),
                        '|' => return Err(err(column, "'|' is not an operator: use '||'".into())),
                        other => {
                            return Err(err(
                                column,
                                format!("unexpected character '{other}': supported are device.<attribute>, quoted strings, integers, true, false, ==, !=, <, <=, >, >=, &&, ||, ! and parentheses"),
                            ))
                        }
                    },
                }
            }
        };
        out.push(Token { kind, column });
        i += 1;
    }
    Ok(out)
}

/// How deep an expression may nest: parentheses, `!`, and each `&&` or
/// `||` in a chain count one level. Parsing, evaluating, printing and
/// dropping an expression all recurse over its tree, so a deeper one (a
/// claim of a few thousand `(`) would overflow the stack of the webhook.
pub const MAX_DEPTH: usize = 100;

struct Parser {
    tokens: Vec<Token>,
    at: usize,
    /// Column just past the input, for "expected ... at the end".
    end: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.at).cloned();
        self.at += 1;
        t
    }

    fn eat_op(&mut self, op: &str) -> bool {
        if matches!(self.peek(), Some(Token { kind: Kind::Op(o), .. }) if *o == op) {
            self.at += 1;
            return true;
        }
        false
    }

    /// One level deeper, refused beyond [`MAX_DEPTH`] at the token just read.
    fn descend(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth <= MAX_DEPTH {
            return Ok(());
        }
        let column = match self.at.checked_sub(1).and_then(|i| self.tokens.get(i)) {
            Some(t) => t.column,
            None => self.end,
        };
        Err(ParseError {
            column,
            message: format!(
                "the expression nests too deeply: at most {MAX_DEPTH} levels of parentheses, '!', '&&' and '||' are allowed"
            ),
        })
    }

    fn or(&mut self) -> Result<Expr, ParseError> {
        let outer = self.depth;
        let mut e = self.and()?;
        while self.eat_op("||") {
            self.descend()?;
            e = Expr::Or(Box::new(e), Box::new(self.and()?));
        }
        self.depth = outer;
        Ok(e)
    }

    fn and(&mut self) -> Result<Expr, ParseError> {
        let outer = self.depth;
        let mut e = self.unary()?;
        while self.eat_op("&&") {
            self.descend()?;
            e = Expr::And(Box::new(e), Box::new(self.unary()?));
        }
        self.depth = outer;
        Ok(e)
    }

    fn unary(&mut self) -> Result<Expr, ParseError> {
        if self.eat_op("!") {
            let outer = self.depth;
            self.descend()?;
            let e = Expr::Not(Box::new(self.unary()?));
            self.depth = outer;
            return Ok(e);
        }
        self.compare()
    }

    fn compare(&mut self) -> Result<Expr, ParseError> {
        let left = self.operand()?;
        let op = match self.peek().map(|t| &t.kind) {
            Some(Kind::Op("==")) => CompareOp::Eq,
            Some(Kind::Op("!=")) => CompareOp::Ne,
            Some(Kind::Op("<")) => CompareOp::Lt,
            Some(Kind::Op("<=")) => CompareOp::Le,
            Some(Kind::Op(">")) => CompareOp::Gt,
            Some(Kind::Op(">=")) => CompareOp::Ge,
            _ => return Ok(left),
        };
        self.at += 1;
        let right = self.operand()?;
        Ok(Expr::Compare(op, Box::new(left), Box::new(right)))
    }

    fn operand(&mut self) -> Result<Expr, ParseError> {
        let end = self.end;
        let Some(t) = self.next() else {
            return Err(ParseError {
                column: end,
                message: "expected a value (device.<attribute>, a quoted string, an integer, true or false) at the end".into(),
            });
        };
        match t.kind {
            Kind::Str(s) => Ok(Expr::String(s)),
            Kind::Int(i) => Ok(Expr::Int(i)),
            Kind::Open => {
                let outer = self.depth;
                self.descend()?;
                let e = self.or()?;
                self.depth = outer;
                match self.next() {
                    Some(Token {
                        kind: Kind::Close, ..
                    }) => Ok(e),
                    Some(other) => Err(ParseError {
                        column: other.column,
                        message: format!("expected ')' to close the '(' at column {}, found {}", t.column, other.kind),
                    }),
                    None => Err(ParseError {
                        column: end,
                        message: format!("expected ')' to close the '(' at column {}", t.column),
                    }),
                }
            }
            Kind::Name(n) if n == "true" => Ok(Expr::Bool(true)),
            Kind::Name(n) if n == "false" => Ok(Expr::Bool(false)),
            Kind::Name(n) if n == "device" => {
                match (self.next(), self.next()) {
                    (
                        Some(Token { kind: Kind::Dot, .. }),
                        Some(Token {
                            kind: Kind::Name(attr),
                            ..
                        }),
                    ) => {
                        if let Some(Token { kind: Kind::Open, column }) = self.peek() {
                            return Err(ParseError {
                                column: *column,
                                message: "function calls are not supported".into(),
                            });
                        }
                        Ok(Expr::Attribute(attr))
                    }
                    _ => Err(ParseError {
                        column: t.column,
                        message: "expected device.<attribute name>".into(),
                    }),
                }
            }
            Kind::Name(n) => Err(ParseError {
                column: t.column,
                message: format!(
                    "undeclared reference to '{n}': the only variable is device (device.<attribute>)"
                ),
            }),
            other => Err(ParseError {
                column: t.column,
                message: format!(
                    "expected a value (device.<attribute>, a quoted string, an integer, true or false), found {other}"
                ),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KQuantity;

    use super::*;

    fn attrs(pairs: &[(&str, &str)]) -> Vec<Attribute> {
        pairs.iter().map(|(n, v)| Attribute::string(n, v)).collect()
    }

    /// The prototype's `TestMeetsConstraints` cases.
    #[test]
    fn the_prototypes_cases() {
        let ok = |c: Option<&str>, a: &[(&str, &str)]| meets(c, &attrs(a));
        assert_eq!(ok(None, &[]), Ok(true));
        assert_eq!(ok(Some(""), &[]), Ok(true));
        let vendor = "device.vendor == 'example.com'";
        assert_eq!(ok(Some(vendor), &[("vendor", "example.com")]), Ok(true));
        assert_eq!(ok(Some(vendor), &[("vendor", "example.org")]), Ok(false));
        let both = "device.vendor == 'example.com' && device.model == 'foozer-1000'";
        assert_eq!(
            ok(
                Some(both),
                &[("vendor", "example.com"), ("model", "foozer-1000")]
            ),
            Ok(true)
        );
        assert_eq!(
            ok(
                Some(both),
                &[("vendor", "example.org"), ("model", "foozer-1000")]
            ),
            Ok(false)
        );
        // The prototype could not compare quantities at all; here they
        // compare as quantities.
        let mem = vec![Attribute {
            name: "memory".into(),
            quantity_value: Some(KQuantity("10Gi".into())),
            ..Attribute::default()
        }];
        assert_eq!(meets(Some("device.memory >= '10Gi'"), &mem), Ok(true));
        assert_eq!(meets(Some("device.memory > '10Gi'"), &mem), Ok(false));
        assert_eq!(meets(Some("device.memory < '11000Mi'"), &mem), Ok(true));
    }

    #[test]
    fn or_not_and_comparisons() {
        let a = vec![
            Attribute::string("model", "foozer-1000"),
            Attribute {
                name: "cores".into(),
                int_value: Some(8),
                ..Attribute::default()
            },
            Attribute::sem_ver("firmwareVersion", "4.2.1-gen3"),
            Attribute::string("bandwidth", "10G"),
        ];
        let t = |e: &str| meets(Some(e), &a);
        assert_eq!(
            t("device.model == 'x' || device.model == \"foozer-1000\""),
            Ok(true)
        );
        assert_eq!(t("!(device.model != 'foozer-1000')"), Ok(true));
        assert_eq!(t("device.cores >= 8 && device.cores < 9"), Ok(true));
        assert_eq!(t("device.firmwareVersion >= '4.2.1-gen10'"), Ok(false));
        assert_eq!(t("device.firmwareVersion < '4.10'"), Ok(true));
        // Strings compare as text, as CEL does: '10G' < '1G'.
        assert_eq!(t("device.bandwidth >= '1G'"), Ok(false));
        assert_eq!(t("true"), Ok(true));
        assert_eq!(
            t("device.missing == 'x'"),
            Err("no such key: missing".into())
        );
        assert_eq!(
            t("device.cores == 'eight'"),
            Err("no such overload: int == string".into())
        );
        assert_eq!(
            t("device.model"),
            Err("the expression is a string, not a bool".into())
        );
    }

    #[test]
    fn deep_nesting_is_refused_not_a_stack_overflow() {
        // Found while writing the fuzz targets: each of these recursed once
        // per level when parsed, evaluated, printed or dropped.
        for deep in [
            format!("{}true{}", "(".repeat(50_000), ")".repeat(50_000)),
            format!("{}true", "!".repeat(50_000)),
            vec!["device.a == 1"; 50_000].join(" && "),
            vec!["true"; 50_000].join(" || "),
        ] {
            let e = parse(&deep).unwrap_err();
            assert!(e.message.contains("nests too deeply"), "{e}");
        }
        let at_limit = format!("{}true{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
        assert_eq!(parse(&at_limit).unwrap(), Some(Expr::Bool(true)));
        let chain = vec!["true"; MAX_DEPTH].join(" && ");
        assert_eq!(parse(&chain).unwrap().unwrap().eval(&[]), Ok(true));
        // Depth is restored after a closed group: siblings do not add up.
        let wide = vec![format!("{}true{}", "(".repeat(60), ")".repeat(60)); 3].join(" && ");
        assert!(parse(&wide).is_ok());
    }

    #[test]
    fn printed_expressions_read_back_the_same() {
        for text in [
            "(device.a == 'x') == true",
            "!device.b == false",
            "(!device.b) == false",
            "device.a == 'it\\'s' || !(device.n < 3 && device.v >= 'v1')",
        ] {
            let Ok(Some(e)) = parse(text) else { continue };
            assert_eq!(
                parse(&e.to_string()).unwrap(),
                Some(e.clone()),
                "{text} -> {e}"
            );
        }
    }

    #[test]
    fn parse_errors_say_where_and_what() {
        let e = |s: &str| parse(s).unwrap_err().to_string();
        // The prototype's testdata has `device.bandwidth = '1G'`.
        assert_eq!(
            e("device.bandwidth = '1G'"),
            "syntax error at column 18: '=' is not an operator: compare with '=='"
        );
        assert_eq!(
            e("device.vendor == 'example.com"),
            "syntax error at column 18: unterminated string: add the closing '"
        );
        assert_eq!(
            e("device.a == 'x' &&"),
            "syntax error at column 19: expected a value (device.<attribute>, a quoted string, an integer, true or false) at the end"
        );
        assert_eq!(
            e("pool.a == 'x'"),
            "syntax error at column 1: undeclared reference to 'pool': the only variable is device (device.<attribute>)"
        );
        assert_eq!(
            e("(device.a == 'x'"),
            "syntax error at column 17: expected ')' to close the '(' at column 1"
        );
        assert_eq!(
            e("device.a == 'x' 'y'"),
            "syntax error at column 17: unexpected string 'y' after a complete expression"
        );
        assert!(e("device.a.startsWith('x')").contains("column 9"));
        assert!(e("device.a in 'x'").contains("unexpected 'in' after a complete expression"));
        assert!(e("device.a == ['x']").contains("column 13: unexpected character '['"));
        assert_eq!(parse("   ").unwrap(), None);
    }

    #[test]
    fn display_round_trips() {
        let src = "!(device.a == 'it\\'s') || device.b >= 3 && true";
        let e = parse(src).unwrap().unwrap();
        assert_eq!(parse(&e.to_string()).unwrap().unwrap(), e);
    }
}
