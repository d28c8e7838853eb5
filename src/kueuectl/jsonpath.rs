//! kubectl's JSONPath dialect (client-go's `util/jsonpath`), on JSON
//! values: `{.a.b}`, `{.items[*].x}`, slices, `..`, filters `[?(@.x=="y")]`,
//! unions, `{range}`/`{end}`, quoted literals; its quirks kept (map order is
//! sorted keys here where Go's is random), its messages word for word.

use std::borrow::Cow;

use serde_json::Value;

use super::goprint;

/// A parse or execution failure, in client-go's words.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct JsonPathError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, JsonPathError> {
    Err(JsonPathError(msg.into()))
}

#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Param {
    value: i64,
    known: bool,
    derived: bool,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Text(String),
    Field(String),
    Array([Param; 3]),
    Filter {
        left: Vec<Node>,
        right: Vec<Node>,
        op: String,
    },
    Int(i64),
    Float(f64),
    Bool(bool),
    Wildcard,
    Recursive,
    Union(Vec<Vec<Node>>),
    Identifier(String),
}

/// A parsed template: text and actions, in order.
#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(String),
    Action(Vec<Node>),
}

/// A parsed JSONPath template.
#[derive(Debug, Clone)]
pub struct JsonPath {
    parts: Vec<Part>,
    pub allow_missing_keys: bool,
    pub output_json: bool,
}

struct Parser<'a> {
    input: &'a str,
    pos: usize,
    start: usize,
}

fn is_terminator(c: Option<char>) -> bool {
    match c {
        None => true,
        Some(c) => matches!(
            c,
            ' ' | '\t' | '\r' | '\n' | '.' | ',' | '[' | ']' | '$' | '@' | '{' | '}'
        ),
    }
}

fn is_alphanumeric(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

impl<'a> Parser<'a> {
    fn rest(&self) -> &'a str {
        &self.input[self.pos..]
    }
    fn next(&mut self) -> Option<char> {
        let c = self.rest().chars().next()?;
        self.pos += c.len_utf8();
        Some(c)
    }
    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }
    fn backup(&mut self, c: Option<char>) {
        if let Some(c) = c {
            self.pos -= c.len_utf8();
        }
    }
    fn consume(&mut self) -> &'a str {
        let s = &self.input[self.start..self.pos];
        self.start = self.pos;
        s
    }

    /// One action's nodes, from after `{` to its `}` (or the end).
    fn action(&mut self, cur: &mut Vec<Node>) -> Result<bool, JsonPathError> {
        loop {
            if self.rest().starts_with('}') {
                self.pos += 1;
                self.consume();
                return Ok(true);
            }
            if self.rest().starts_with("[?(") {
                self.filter(cur)?;
                continue;
            }
            if self.rest().starts_with("..") {
                if matches!(cur.last(), Some(Node::Recursive)) {
                    return err("invalid multiple recursive descent");
                }
                self.pos += 2;
                self.consume();
                cur.push(Node::Recursive);
                if self.peek().is_some_and(is_alphanumeric) {
                    self.field(cur);
                }
                continue;
            }
            let c = self.next();
            match c {
                None | Some('\r' | '\n') => return err("unclosed action"),
                Some(' ' | '@' | '$') => {
                    self.consume();
                }
                Some('[') => self.array(cur)?,
                Some(q @ ('"' | '\'')) => self.quote(cur, q)?,
                Some('.') => self.field(cur),
                Some(c) if c == '+' || c == '-' || c.is_ascii_digit() => {
                    self.backup(Some(c));
                    self.number(cur)?;
                }
                Some(c) if is_alphanumeric(c) => {
                    self.backup(Some(c));
                    while !is_terminator(self.peek()) {
                        self.next();
                    }
                    let v = self.consume();
                    cur.push(match v {
                        "true" => Node::Bool(true),
                        "false" => Node::Bool(false),
                        _ => Node::Identifier(v.to_string()),
                    });
                }
                Some(c) => {
                    return err(format!(
                        "unrecognized character in action: U+{:04X} '{c}'",
                        c as u32
                    ))
                }
            }
        }
    }

    fn field(&mut self, cur: &mut Vec<Node>) {
        self.consume();
        loop {
            let c = self.next();
            if c == Some('\\') {
                self.next();
            } else if is_terminator(c) {
                self.backup(c);
                break;
            }
        }
        let v = self.consume();
        if v == "*" {
            cur.push(Node::Wildcard);
        } else {
            cur.push(Node::Field(v.replace('\\', "")));
        }
    }

    fn number(&mut self, cur: &mut Vec<Node>) -> Result<(), JsonPathError> {
        if matches!(self.peek(), Some('+' | '-')) {
            self.next();
        }
        while self.peek().is_some_and(|c| c == '.' || c.is_ascii_digit()) {
            self.next();
        }
        let v = self.consume();
        if let Ok(i) = v.parse::<i64>() {
            cur.push(Node::Int(i));
        } else if let Ok(f) = v.parse::<f64>() {
            cur.push(Node::Float(f));
        } else {
            return err(format!("cannot parse number {v}"));
        }
        Ok(())
    }

    fn quote(&mut self, cur: &mut Vec<Node>, end: char) -> Result<(), JsonPathError> {
        loop {
            match self.next() {
                None | Some('\n') => return err("unterminated quoted string"),
                Some(c) if c == end && self.input.as_bytes()[self.pos - 2] != b'\\' => break,
                _ => {}
            }
        }
        let v = self.consume();
        let s = unquote(v)
            .ok_or_else(|| JsonPathError(format!("unquote string {v} error invalid syntax")))?;
        cur.push(Node::Text(s));
        Ok(())
    }

    fn array(&mut self, cur: &mut Vec<Node>) -> Result<(), JsonPathError> {
        loop {
            match self.next() {
                None | Some('\n') => return err("unterminated array"),
                Some(']') => break,
                _ => {}
            }
        }
        let text = self.consume();
        let mut text = &text[1..text.len() - 1];
        if text == "*" {
            text = ":";
        }
        let parts: Vec<&str> = text.split(',').collect();
        if parts.len() > 1 {
            let mut union = Vec::new();
            for p in parts {
                union.push(parse_action(&format!("[{}]", p.trim_matches(' ')))?);
            }
            cur.push(Node::Union(union));
            return Ok(());
        }
        if text.len() >= 2
            && text.starts_with('\'')
            && text.ends_with('\'')
            && !text[1..text.len() - 1].contains('\'')
        {
            cur.extend(parse_action(&format!(".{}", &text[1..text.len() - 1]))?);
            return Ok(());
        }
        let params = slice_params(text)
            .ok_or_else(|| JsonPathError(format!("invalid array index {text}")))??;
        cur.push(Node::Array(params));
        Ok(())
    }

    fn filter(&mut self, cur: &mut Vec<Node>) -> Result<(), JsonPathError> {
        self.pos += 3;
        self.consume();
        let (mut begin, mut end) = (false, false);
        let mut pair = '"';
        loop {
            match self.next() {
                None | Some('\n') => return err("unterminated filter"),
                Some(q @ ('"' | '\'')) => {
                    if !begin {
                        begin = true;
                        pair = q;
                        continue;
                    }
                    if self.input.as_bytes()[self.pos - 2] != b'\\' && q == pair {
                        end = true;
                    }
                }
                Some(')') if begin == end => break,
                _ => {}
            }
        }
        if self.next() != Some(']') {
            return err("unclosed array expect ]");
        }
        let text = self.consume();
        let text = &text[..text.len() - 2];
        match split_comparison(text) {
            None => cur.push(Node::Filter {
                left: parse_action(text)?,
                right: Vec::new(),
                op: "exists".into(),
            }),
            Some((l, op, r)) => cur.push(Node::Filter {
                left: parse_action(l)?,
                right: parse_action(r)?,
                op: op.into(),
            }),
        }
        Ok(())
    }
}

/// `^([^!<>=]+)([!<>=]+)(.+?)$`
fn split_comparison(text: &str) -> Option<(&str, &str, &str)> {
    let is_op = |c: char| matches!(c, '!' | '<' | '>' | '=');
    let i = text.find(is_op)?;
    if i == 0 {
        return None;
    }
    let j = text[i..].find(|c| !is_op(c)).map(|j| i + j)?;
    Some((&text[..i], &text[i..j], &text[j..])).filter(|(_, _, r)| !r.is_empty())
}

/// `^(-?[\d]*)(:-?[\d]*)?(:-?[\d]*)?$` and the params client-go makes of it.
fn slice_params(text: &str) -> Option<Result<[Param; 3], JsonPathError>> {
    let groups: Vec<&str> = text.split(':').collect();
    if groups.len() > 3 {
        return None;
    }
    let ok = |g: &str| {
        let g = g.strip_prefix('-').unwrap_or(g);
        g.chars().all(|c| c.is_ascii_digit())
    };
    if !groups.iter().all(|g| ok(g)) {
        return None;
    }
    let mut params = [Param::default(); 3];
    for i in 0..3 {
        match groups.get(i) {
            Some(g) if !g.is_empty() => match g.parse::<i64>() {
                Ok(v) => {
                    params[i] = Param {
                        value: v,
                        known: true,
                        derived: false,
                    }
                }
                Err(_) => {
                    return Some(err(format!("array index {g} is not a number")));
                }
            },
            // `[:x]` / `[x:]`: the side left empty is unknown.
            Some(_) if i > 0 => {}
            Some(_) => {}
            None if i == 1 => {
                params[1] = Param {
                    value: params[0].value + 1,
                    known: true,
                    derived: true,
                }
            }
            None => {}
        }
    }
    Some(Ok(params))
}

/// Go's `strconv.UnquoteChar` over a quoted literal (client-go's
/// `UnquoteExtend`, which also takes single quotes).
pub(super) fn unquote(s: &str) -> Option<String> {
    let quote = s.chars().next()?;
    if s.len() < 2 || !s.ends_with(quote) || !matches!(quote, '"' | '\'') {
        return None;
    }
    let body = &s[1..s.len() - 1];
    let mut out = String::new();
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c == quote {
            return None;
        }
        if c != '\\' {
            out.push(c);
            continue;
        }
        let e = chars.next()?;
        let hex = |chars: &mut std::iter::Peekable<std::str::Chars>, n: usize| {
            let h: String = (0..n).filter_map(|_| chars.next()).collect();
            (h.len() == n).then(|| u32::from_str_radix(&h, 16).ok())?
        };
        match e {
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'f' => out.push('\x0c'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\x0b'),
            '\\' => out.push('\\'),
            q if q == quote => out.push(q),
            'x' => out.push(char::from_u32(hex(&mut chars, 2)?)?),
            'u' => out.push(char::from_u32(hex(&mut chars, 4)?)?),
            'U' => out.push(char::from_u32(hex(&mut chars, 8)?)?),
            d @ '0'..='7' => {
                let rest: String = (0..2).filter_map(|_| chars.next()).collect();
                let v = u32::from_str_radix(&format!("{d}{rest}"), 8).ok()?;
                out.push(char::from_u32(v).filter(|_| v <= 255)?);
            }
            _ => return None,
        }
    }
    Some(out)
}

/// The nodes of one action given without its braces.
fn parse_action(text: &str) -> Result<Vec<Node>, JsonPathError> {
    let parts = parse(&format!("{{{text}}}"))?;
    Ok(match parts.into_iter().next() {
        Some(Part::Action(nodes)) => nodes,
        _ => Vec::new(),
    })
}

fn parse(text: &str) -> Result<Vec<Part>, JsonPathError> {
    let mut p = Parser {
        input: text,
        pos: 0,
        start: 0,
    };
    let mut parts = Vec::new();
    loop {
        match p.rest().find('{') {
            None => {
                p.pos = text.len();
                if p.pos > p.start {
                    parts.push(Part::Text(p.consume().to_string()));
                }
                return Ok(parts);
            }
            Some(i) => {
                p.pos += i;
                if p.pos > p.start {
                    parts.push(Part::Text(p.consume().to_string()));
                }
                p.pos += 1;
                p.consume();
                let mut nodes = Vec::new();
                let closed = p.action(&mut nodes)?;
                parts.push(Part::Action(nodes));
                if !closed {
                    return Ok(parts);
                }
            }
        }
    }
}

type Vals<'a> = Vec<Cow<'a, Value>>;

impl JsonPath {
    /// Parses a template; a failure reads as client-go's.
    pub fn parse(template: &str) -> Result<JsonPath, JsonPathError> {
        Ok(JsonPath {
            parts: parse(template)?,
            allow_missing_keys: false,
            output_json: false,
        })
    }

    /// Each action's values (client-go's `FindResults`), as custom-columns
    /// reads them.
    pub fn find_values(&self, data: &Value) -> Result<Vec<Vec<Value>>, JsonPathError> {
        let mut groups = Vec::new();
        self.find(&self.parts, data, &mut groups)?;
        Ok(groups
            .into_iter()
            .map(|g| g.into_iter().map(Cow::into_owned).collect())
            .collect())
    }

    /// The template applied to `data`: nothing is written on a failure.
    pub fn execute(&self, data: &Value) -> Result<String, JsonPathError> {
        let mut groups = Vec::new();
        self.find(&self.parts, data, &mut groups)?;
        let mut out = String::new();
        for g in groups {
            self.print(&g, &mut out)?;
        }
        Ok(out)
    }

    fn find<'a>(
        &self,
        parts: &[Part],
        data: &'a Value,
        groups: &mut Vec<Vals<'a>>,
    ) -> Result<(), JsonPathError> {
        let has = |nodes: &[Node], id: &str| {
            nodes
                .iter()
                .any(|n| matches!(n, Node::Identifier(i) if i == id))
        };
        let mut i = 0;
        while i < parts.len() {
            match &parts[i] {
                Part::Text(t) => groups.push(vec![Cow::Owned(Value::String(t.clone()))]),
                Part::Action(nodes) if has(nodes, "end") => {
                    // An `end` the caller's range did not match.
                    return err("not in range, nothing to end");
                }
                Part::Action(nodes) if has(nodes, "range") => {
                    let results = self.list(vec![Cow::Borrowed(data)], nodes)?;
                    let body_end = matching_end(parts, i + 1);
                    let body = &parts[i + 1..body_end.unwrap_or(parts.len())];
                    if results.is_empty() {
                        let mut ignored = Vec::new();
                        self.find(body, &Value::Null, &mut ignored)?;
                    }
                    for r in results {
                        let mut sub = Vec::new();
                        self.find(body, &r, &mut sub)?;
                        groups.extend(
                            sub.into_iter().map(|g| {
                                g.into_iter().map(|v| Cow::Owned(v.into_owned())).collect()
                            }),
                        );
                    }
                    // No `end`: client-go goes on with the node after the range.
                    i = body_end.unwrap_or(i);
                }
                Part::Action(nodes) => {
                    groups.push(self.list(vec![Cow::Borrowed(data)], nodes)?);
                }
            }
            i += 1;
        }
        Ok(())
    }

    fn list<'a>(&self, mut cur: Vals<'a>, nodes: &[Node]) -> Result<Vals<'a>, JsonPathError> {
        for n in nodes {
            cur = self.walk(cur, n)?;
        }
        Ok(cur)
    }

    fn walk<'a>(&self, input: Vals<'a>, node: &Node) -> Result<Vals<'a>, JsonPathError> {
        let same = |v: Value| input.iter().map(|_| Cow::Owned(v.clone())).collect();
        match node {
            Node::Text(t) => Ok(vec![Cow::Owned(Value::String(t.clone()))]),
            Node::Int(i) => Ok(same(Value::from(*i))),
            Node::Float(f) => Ok(same(
                serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
            )),
            Node::Bool(b) => Ok(same(Value::Bool(*b))),
            Node::Identifier(id) if id == "range" => Ok(input),
            Node::Identifier(id) if id == "end" => Ok(Vec::new()),
            Node::Identifier(id) => err(format!("unrecognized identifier {id}")),
            Node::Field(name) => self.field(input, name),
            Node::Array(params) => array(input, params),
            Node::Wildcard => Ok(input.into_iter().flat_map(children).collect()),
            Node::Recursive => Ok(recursive(input)),
            Node::Union(lists) => {
                let mut out = Vec::new();
                for l in lists {
                    out.extend(self.list(input.clone(), l)?);
                }
                Ok(out)
            }
            Node::Filter { left, right, op } => self.filter(input, left, right, op),
        }
    }

    fn field<'a>(&self, input: Vals<'a>, name: &str) -> Result<Vals<'a>, JsonPathError> {
        let mut out = Vec::new();
        for v in input {
            match v {
                Cow::Borrowed(Value::Object(m)) => out.extend(m.get(name).map(Cow::Borrowed)),
                Cow::Owned(Value::Object(mut m)) => out.extend(m.remove(name).map(Cow::Owned)),
                _ => {}
            }
        }
        if out.is_empty() && !self.allow_missing_keys {
            return err(format!("{name} is not found"));
        }
        Ok(out)
    }

    fn filter<'a>(
        &self,
        input: Vals<'a>,
        left: &[Node],
        right: &[Node],
        op: &str,
    ) -> Result<Vals<'a>, JsonPathError> {
        let mut out = Vec::new();
        for v in input {
            let items: Vals<'a> = match v {
                Cow::Borrowed(Value::Array(a)) => a.iter().map(Cow::Borrowed).collect(),
                Cow::Owned(Value::Array(a)) => a.into_iter().map(Cow::Owned).collect(),
                other => {
                    return err(format!(
                        "{} is not array or slice and cannot be filtered",
                        goprint::plain(&other)
                    ))
                }
            };
            for item in items {
                let lefts = self.list(vec![item.clone()], left);
                if op == "exists" {
                    if lefts.is_ok_and(|l| !l.is_empty()) {
                        out.push(item);
                    }
                    continue;
                }
                let lefts = lefts?;
                let l = match lefts.len() {
                    0 => continue,
                    1 => lefts[0].clone(),
                    _ => return err("can only compare one element at a time"),
                };
                let rights = self.list(vec![item.clone()], right)?;
                let r = match rights.len() {
                    0 => continue,
                    1 => rights[0].clone(),
                    _ => return err("can only compare one element at a time"),
                };
                let pass = match op {
                    "<" => less(&l, &r)?,
                    ">" => !(less(&l, &r)? || equal(&l, &r)?),
                    "==" => equal(&l, &r)?,
                    "!=" => !equal(&l, &r)?,
                    "<=" => less(&l, &r)? || equal(&l, &r)?,
                    ">=" => !less(&l, &r)?,
                    other => return err(format!("unrecognized filter operator {other}")),
                };
                if pass {
                    out.push(item);
                }
            }
        }
        Ok(out)
    }

    fn print(&self, group: &[Cow<'_, Value>], out: &mut String) -> Result<(), JsonPathError> {
        if self.output_json {
            let all = Value::Array(group.iter().map(|v| v.as_ref().clone()).collect());
            out.push_str(&goprint::json(&all, Some("    ")));
            out.push('\n');
            return Ok(());
        }
        for (i, v) in group.iter().enumerate() {
            match v.as_ref() {
                Value::Object(_) | Value::Array(_) => out.push_str(&goprint::json(v, None)),
                Value::Null => out.push_str("null"),
                other => out.push_str(&goprint::plain(other)),
            }
            if i + 1 != group.len() {
                out.push(' ');
            }
        }
        Ok(())
    }
}

/// The index of the `{end}` closing a range whose body starts at `from`.
fn matching_end(parts: &[Part], from: usize) -> Option<usize> {
    let mut depth = 0;
    for (i, p) in parts.iter().enumerate().skip(from) {
        if let Part::Action(nodes) = p {
            for n in nodes {
                match n {
                    Node::Identifier(id) if id == "range" => depth += 1,
                    Node::Identifier(id) if id == "end" && depth == 0 => return Some(i),
                    Node::Identifier(id) if id == "end" => depth -= 1,
                    _ => {}
                }
            }
        }
    }
    None
}

fn children(v: Cow<'_, Value>) -> Vals<'_> {
    match v {
        Cow::Borrowed(Value::Object(m)) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            keys.into_iter().map(|k| Cow::Borrowed(&m[k])).collect()
        }
        Cow::Borrowed(Value::Array(a)) => a.iter().map(Cow::Borrowed).collect(),
        Cow::Owned(Value::Object(m)) => {
            let mut kv: Vec<(String, Value)> = m.into_iter().collect();
            kv.sort_by(|a, b| a.0.cmp(&b.0));
            kv.into_iter().map(|(_, v)| Cow::Owned(v)).collect()
        }
        Cow::Owned(Value::Array(a)) => a.into_iter().map(Cow::Owned).collect(),
        // Go indexes a string's bytes.
        v @ Cow::Borrowed(Value::String(_)) | v @ Cow::Owned(Value::String(_)) => v
            .as_str()
            .unwrap_or_default()
            .bytes()
            .map(|b| Cow::Owned(Value::from(b)))
            .collect(),
        _ => Vec::new(),
    }
}

/// `..`: every container under the input, itself first.
fn recursive(input: Vals<'_>) -> Vals<'_> {
    let mut out = Vec::new();
    for v in input {
        let kids = children(v.clone());
        if !kids.is_empty() {
            out.push(v);
            out.extend(recursive(kids));
        }
    }
    out
}

fn array<'a>(input: Vals<'a>, params: &[Param; 3]) -> Result<Vals<'a>, JsonPathError> {
    let mut out = Vec::new();
    for v in input {
        let len = match v.as_ref() {
            Value::Null => continue,
            Value::Array(a) => a.len() as i64,
            other => {
                return err(format!(
                    "{} is not array or slice",
                    goprint::type_name(other)
                ))
            }
        };
        let mut p = *params;
        if !p[0].known {
            p[0].value = 0;
        }
        if p[0].value < 0 {
            p[0].value += len;
        }
        if !p[1].known {
            p[1].value = len;
        }
        if p[1].value < 0 || (p[1].value == 0 && p[1].derived) {
            p[1].value += len;
        }
        if p[1].value == p[0].value {
            return Ok(out);
        }
        if p[0].value >= len || p[0].value < 0 {
            return err(format!(
                "array index out of bounds: index {}, length {len}",
                p[0].value
            ));
        }
        if p[1].value > len || p[1].value < 0 {
            return err(format!(
                "array index out of bounds: index {}, length {len}",
                p[1].value - 1
            ));
        }
        if p[0].value > p[1].value {
            return err(format!(
                "starting index {} is greater than ending index {}",
                p[0].value, p[1].value
            ));
        }
        let step = if p[2].known {
            if p[2].value <= 0 {
                return err("step must be > 0");
            }
            p[2].value as usize
        } else {
            1
        };
        let (a, b) = (p[0].value as usize, p[1].value as usize);
        let items: Vals<'a> = match v {
            Cow::Borrowed(Value::Array(arr)) => arr[a..b].iter().map(Cow::Borrowed).collect(),
            Cow::Owned(Value::Array(arr)) => arr
                .into_iter()
                .skip(a)
                .take(b - a)
                .map(Cow::Owned)
                .collect(),
            _ => Vec::new(),
        };
        out.extend(items.into_iter().step_by(step));
    }
    Ok(out)
}

#[derive(PartialEq)]
enum Kind {
    Bool,
    Int,
    Float,
    Str,
}

fn kind(v: &Value) -> Result<Kind, JsonPathError> {
    match v {
        Value::Bool(_) => Ok(Kind::Bool),
        Value::Number(n) if n.is_f64() => Ok(Kind::Float),
        Value::Number(_) => Ok(Kind::Int),
        Value::String(_) => Ok(Kind::Str),
        _ => err("invalid type for comparison"),
    }
}

/// Go template's `eq` of two basic values (client-go's fork).
fn equal(a: &Value, b: &Value) -> Result<bool, JsonPathError> {
    let (ka, kb) = (kind(a)?, kind(b)?);
    if ka != kb {
        return err("incompatible types for comparison");
    }
    Ok(match (a, b) {
        (Value::Number(x), Value::Number(y)) if ka == Kind::Float => x.as_f64() == y.as_f64(),
        (Value::Number(x), Value::Number(y)) => x.as_i64() == y.as_i64(),
        _ => a == b,
    })
}

fn less(a: &Value, b: &Value) -> Result<bool, JsonPathError> {
    let (ka, kb) = (kind(a)?, kind(b)?);
    if ka != kb {
        return err("incompatible types for comparison");
    }
    Ok(match (a, b) {
        (Value::Bool(_), _) => return err("invalid type for comparison"),
        (Value::Number(x), Value::Number(y)) if ka == Kind::Float => x.as_f64() < y.as_f64(),
        (Value::Number(x), Value::Number(y)) => x.as_i64() < y.as_i64(),
        (Value::String(x), Value::String(y)) => x < y,
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(t: &str, data: &Value) -> Result<String, String> {
        let mut p = JsonPath::parse(t).map_err(|e| e.0)?;
        p.allow_missing_keys = true;
        p.execute(data).map_err(|e| e.0)
    }

    fn list() -> Value {
        json!({
            "kind": "List",
            "items": [
                {"metadata": {"name": "a", "labels": {"app.kubernetes.io/name": "x"}},
                 "spec": {"cohort": "c1", "n": 1, "flavors": [{"name": "f1"}, {"name": "f2"}]}},
                {"metadata": {"name": "b"}, "spec": {"n": 2, "flavors": []}},
                {"metadata": {"name": "c"}, "spec": {"cohort": "c1", "n": 3}},
            ]
        })
    }

    #[test]
    fn golden_outputs() {
        let d = list();
        for (t, want) in [
            ("{.items[*].metadata.name}", "a b c"),
            ("{.items[0].metadata.name}", "a"),
            ("{.items[-1:].metadata.name}", "c"),
            ("{.items[0:2].metadata.name}", "a b"),
            ("{.items[::2].metadata.name}", "a c"),
            (
                "{range .items[*]}{.metadata.name}{\"\\t\"}{.spec.cohort}{\"\\n\"}{end}",
                "a\tc1\nb\t\nc\tc1\n",
            ),
            ("{.items[?(@.spec.cohort==\"c1\")].metadata.name}", "a c"),
            ("{.items[?(@.spec.n>1)].metadata.name}", "b c"),
            ("{.items[?(@.spec.cohort)].metadata.name}", "a c"),
            (
                "{.items[0].metadata.labels.app\\.kubernetes\\.io/name}",
                "x",
            ),
            ("{..name}", "a f1 f2 b c"),
            (
                "{.items[0].spec.flavors[*]}",
                r#"{"name":"f1"} {"name":"f2"}"#,
            ),
            (
                "{.items[0].metadata['name','labels']}",
                r#"a {"app.kubernetes.io/name":"x"}"#,
            ),
            ("{.items[*].spec.n}", "1 2 3"),
            ("{.items[0].spec.missing}", ""),
            ("x{.kind}y", "xListy"),
            ("{.kind}{'\\n'}", "List\n"),
            (
                "{range .items[*]}[{range .spec.flavors[*]}{.name},{end}]{end}",
                "[f1,f2,][][]",
            ),
            ("{.items[1].spec.flavors}", "[]"),
            ("{@.kind}", "List"),
            ("{.items[0].metadata.name} {.items[1].metadata.name}", "a b"),
        ] {
            assert_eq!(run(t, &d).as_deref(), Ok(want), "{t}");
        }
    }

    #[test]
    fn errors_read_as_client_go() {
        let d = list();
        let strict = |t: &str| {
            let p = JsonPath::parse(t).unwrap();
            p.execute(&d).unwrap_err().0
        };
        assert_eq!(strict("{.items[0].spec.missing}"), "missing is not found");
        assert_eq!(
            run("{.items[5]}", &d).unwrap_err(),
            "array index out of bounds: index 5, length 3"
        );
        assert_eq!(
            run("{.kind[0]}", &d).unwrap_err(),
            "string is not array or slice"
        );
        assert_eq!(
            run("{.items[*].spec.n[?(@.x)]}", &d).unwrap_err(),
            "1 is not array or slice and cannot be filtered"
        );
        assert_eq!(
            run("{.items[?(@.spec.n==\"1\")]}", &d).unwrap_err(),
            "incompatible types for comparison"
        );
        assert_eq!(
            run("{end}", &d).unwrap_err(),
            "not in range, nothing to end"
        );
        assert_eq!(run("{.a", &d).unwrap_err(), "unclosed action");
        assert_eq!(run("{.a[1}", &d).unwrap_err(), "unterminated array");
        assert_eq!(run("{.a[x]}", &d).unwrap_err(), "invalid array index x");
        assert_eq!(run("{foo}", &d).unwrap_err(), "unrecognized identifier foo");
        assert_eq!(
            run("{#}", &d).unwrap_err(),
            "unrecognized character in action: U+0023 '#'"
        );
    }

    #[test]
    fn as_json_prints_each_group_indented() {
        let mut p = JsonPath::parse("{.items[*].metadata.name}").unwrap();
        p.output_json = true;
        assert_eq!(
            p.execute(&list()).unwrap(),
            "[\n    \"a\",\n    \"b\",\n    \"c\"\n]\n"
        );
    }
}
