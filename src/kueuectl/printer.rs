//! Which printer `-o`/`--template` ask for (kubectl's `genericclioptions`
//! PrintFlags, plus custom-columns from `kubectl get`), and the template
//! printers' output and messages.

use serde_json::Value;

use super::{error::Error, goprint, gotemplate::GoTemplate, jsonpath::JsonPath};

/// A template printer: jsonpath, go-template or custom-columns.
pub enum Template {
    JsonPath { raw: String, path: JsonPath },
    Go { raw: String, tmpl: GoTemplate },
    Columns(Vec<(String, JsonPath)>),
}

const JSONPATH: &[&str] = &["jsonpath", "jsonpath-as-json", "jsonpath-file"];
const GO: &[&str] = &[
    "go-template",
    "go-template-file",
    "template",
    "templatefile",
];

/// The formats every command takes, sorted as kubectl lists them.
pub const FORMATS: &str = "go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,name,template,templatefile,yaml";

fn read(path: &str) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|e| {
        Error::Usage(format!(
            "error reading --template {path}, {}",
            go_io(&e, path)
        ))
    })
}

/// Go's `os.ReadFile` error text.
fn go_io(e: &std::io::Error, path: &str) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => format!("open {path}: no such file or directory"),
        std::io::ErrorKind::PermissionDenied => format!("open {path}: permission denied"),
        _ => format!("open {path}: {e}"),
    }
}

/// The template printer `-o` (and `--template`) name, if any; `None` for
/// the other formats. `columns`: custom-columns is accepted (list only).
pub fn template(
    output: Option<&str>,
    template_arg: Option<&str>,
    allow_missing: bool,
    columns: bool,
) -> Result<Option<Template>, Error> {
    let tmpl_arg = template_arg.filter(|t| !t.is_empty());
    // `--template` alone means go-template (kubectl's compatibility rule).
    let output = match (output, tmpl_arg) {
        (None, Some(_)) => "go-template",
        (Some(o), _) => o,
        (None, None) => return Ok(None),
    };
    let (format, inline) = match output.split_once('=') {
        Some((f, v)) => (f, Some(v)),
        None => (output, None),
    };
    let value = |inline: Option<&str>| -> Result<String, Error> {
        let v = match tmpl_arg {
            Some(t) => t.to_string(),
            None => inline.unwrap_or_default().to_string(),
        };
        if v.is_empty() {
            return Err(Error::Usage(
                "template format specified but no template given".into(),
            ));
        }
        Ok(v)
    };
    if JSONPATH.contains(&format) {
        let mut raw = value(inline)?;
        if format == "jsonpath-file" {
            raw = read(&raw)?;
        }
        let mut path = JsonPath::parse(&raw)
            .map_err(|e| Error::Usage(format!("error parsing jsonpath {raw}, {e}")))?;
        path.allow_missing_keys = allow_missing;
        path.output_json = format == "jsonpath-as-json";
        return Ok(Some(Template::JsonPath { raw, path }));
    }
    if GO.contains(&format) {
        let mut raw = value(inline)?;
        if format.ends_with("file") {
            raw = read(&raw)?;
        }
        let mut tmpl = GoTemplate::parse(&raw)
            .map_err(|e| Error::Usage(format!("error parsing template {raw}, {e}")))?;
        tmpl.allow_missing_keys = allow_missing;
        return Ok(Some(Template::Go { raw, tmpl }));
    }
    if columns && (format == "custom-columns" || format == "custom-columns-file") {
        let spec = inline.unwrap_or_default();
        let cols = if format == "custom-columns" {
            columns_spec(spec)?
        } else {
            columns_file(&read(spec)?)?
        };
        return Ok(Some(Template::Columns(cols)));
    }
    Ok(None)
}

/// kubectl's `RelaxedJSONPathExpression`: `a.b`, `.a.b`, `{a.b}`, `{.a.b}`.
fn relaxed(expr: &str) -> Result<String, Error> {
    if expr.is_empty() {
        return Ok(String::new());
    }
    let bad = || {
        Error::Usage("unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'".into())
    };
    let inner = match expr.strip_prefix('{').and_then(|e| e.strip_suffix('}')) {
        Some(i) if !i.contains(['{', '}']) => i,
        _ if expr.contains(['{', '}']) => return Err(bad()),
        _ => expr,
    };
    let inner = inner.strip_prefix('.').unwrap_or(inner);
    if inner.is_empty() {
        return Err(bad());
    }
    Ok(format!("{{.{inner}}}"))
}

fn column(header: &str, expr: &str) -> Result<(String, JsonPath), Error> {
    let spec = relaxed(expr)?;
    let mut p = JsonPath::parse(&spec).map_err(|e| Error::Usage(e.to_string()))?;
    p.allow_missing_keys = true;
    Ok((header.to_string(), p))
}

fn columns_spec(spec: &str) -> Result<Vec<(String, JsonPath)>, Error> {
    if spec.is_empty() {
        return Err(Error::Usage(
            "custom-columns format specified but no custom columns given".into(),
        ));
    }
    spec.split(',')
        .map(|part| match part.split_once(':') {
            Some((h, e)) => column(h, e),
            None => Err(Error::Usage(format!(
                "unexpected custom-columns spec: {part}, expected <header>:<json-path-expr>"
            ))),
        })
        .collect()
}

fn columns_file(text: &str) -> Result<Vec<(String, JsonPath)>, Error> {
    let mut lines = text.lines();
    let shape = "Expected format is one line of space separated headers, one line of space separated column specs.";
    let headers: Vec<&str> = lines
        .next()
        .ok_or_else(|| Error::Usage(format!("invalid template, missing header line. {shape}")))?
        .split_whitespace()
        .collect();
    let specs: Vec<&str> = lines
        .next()
        .ok_or_else(|| Error::Usage(format!("invalid template, missing spec line. {shape}")))?
        .split_whitespace()
        .collect();
    if headers.len() != specs.len() {
        return Err(Error::Usage(format!(
            "number of headers ({}) and field specifications ({}) don't match",
            headers.len(),
            specs.len()
        )));
    }
    headers
        .iter()
        .zip(specs)
        .map(|(h, s)| column(h, s))
        .collect()
}

impl Template {
    /// The text for one object (or one page's list), with kubectl's
    /// messages on a failure. Custom columns give their rows (the caller
    /// lays them out once every page is in).
    pub fn render(&self, obj: &Value) -> Result<String, Error> {
        match self {
            Template::JsonPath { raw, path } => path.execute(obj).map_err(|e| {
                Error::Usage(format!(
                    "error executing jsonpath {}: Error executing template: {e}. Printing more information for debugging the template:\n\ttemplate was:\n\t\t{raw}\n\tobject given to jsonpath engine was:\n\t\t{}\n\n\n",
                    goprint::quote(raw),
                    goprint::go_syntax(obj)
                ))
            }),
            Template::Go { raw, tmpl } => {
                let (out, err) = tmpl.execute(obj);
                match err {
                    None => Ok(out),
                    // kubectl writes what ran and its debugging text to stdout.
                    Some(e) => Err(Error::Template {
                        stdout: format!(
                            "{out}Error executing template: {e}. Printing more information for debugging the template:\n\ttemplate was:\n\t\t{raw}\n\traw data was:\n\t\t{}\n\tobject given to template engine was:\n\t\t{}\n\n",
                            goprint::json(obj, None),
                            goprint::plain(obj)
                        ),
                        message: format!("error executing template {}: {e}", goprint::quote(raw)),
                    }),
                }
            }
            Template::Columns(_) => Ok(String::new()),
        }
    }

    /// Custom columns' cells of one object.
    pub fn row(&self, obj: &Value) -> Result<Vec<String>, Error> {
        let Template::Columns(cols) = self else {
            return Ok(Vec::new());
        };
        cols.iter()
            .map(|(_, p)| {
                let found = p
                    .find_values(obj)
                    .map_err(|e| Error::Usage(e.to_string()))?;
                Ok(if found.is_empty() || found[0].is_empty() {
                    "<none>".to_string()
                } else {
                    found
                        .iter()
                        .flatten()
                        .map(goprint::plain)
                        .collect::<Vec<_>>()
                        .join(",")
                })
            })
            .collect()
    }

    pub fn headers(&self) -> Vec<String> {
        match self {
            Template::Columns(cols) => cols.iter().map(|(h, _)| h.clone()).collect(),
            _ => Vec::new(),
        }
    }
}

/// kubectl's tabwriter over custom columns: headers as given, cells
/// padded to the widest plus three.
pub fn columns_table(headers: &[String], rows: &[Vec<String>]) -> String {
    let mut t = super::table::Table::new(headers.to_vec());
    t.rows = rows.to_vec();
    t.render_as_given()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn custom_columns_golden() {
        let t = template(
            Some(
                "custom-columns=NAME:.metadata.name,cohort:spec.cohort,FL:{.spec.flavors[*].name}",
            ),
            None,
            true,
            true,
        )
        .unwrap()
        .unwrap();
        let items = [
            json!({"metadata": {"name": "alpha"}, "spec": {"cohort": "c", "flavors": [{"name": "f1"}, {"name": "f2"}]}}),
            json!({"metadata": {"name": "b"}, "spec": {}}),
        ];
        let rows: Vec<Vec<String>> = items.iter().map(|i| t.row(i).unwrap()).collect();
        assert_eq!(
            columns_table(&t.headers(), &rows),
            "NAME    cohort   FL\nalpha   c        f1,f2\nb       <none>   <none>\n"
        );
    }

    #[test]
    fn format_errors_read_as_kubectl() {
        let e = |o: &str| {
            template(Some(o), None, true, true)
                .err()
                .unwrap()
                .to_string()
        };
        assert_eq!(
            e("jsonpath="),
            "template format specified but no template given"
        );
        assert_eq!(
            e("jsonpath={.a"),
            "error parsing jsonpath {.a, unclosed action"
        );
        assert_eq!(
            e("go-template={{.a"),
            "error parsing template {{.a, template: output:1: unclosed action"
        );
        assert_eq!(
            e("custom-columns=NAME"),
            "unexpected custom-columns spec: NAME, expected <header>:<json-path-expr>"
        );
        assert_eq!(
            e("jsonpath-file=/nonexistent"),
            "error reading --template /nonexistent, open /nonexistent: no such file or directory"
        );
        assert!(template(Some("json"), None, true, true).unwrap().is_none());
        // --template alone is a go-template.
        assert!(matches!(
            template(None, Some("{{.a}}"), true, false).unwrap(),
            Some(Template::Go { .. })
        ));
    }

    #[test]
    fn jsonpath_error_carries_kubectl_debugging_text() {
        let t = template(Some("jsonpath={.x}"), None, false, false)
            .unwrap()
            .unwrap();
        assert_eq!(
            t.render(&json!({"a": 1})).unwrap_err().to_string(),
            "error executing jsonpath \"{.x}\": Error executing template: x is not found. Printing more information for debugging the template:\n\ttemplate was:\n\t\t{.x}\n\tobject given to jsonpath engine was:\n\t\tmap[string]interface {}{\"a\":1}\n\n\n"
        );
    }
}
