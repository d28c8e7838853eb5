//! What a command prints: objects as JSON or YAML, lists paged from the
//! apiserver (`KUEUECTL_LIST_REQUEST_LIMIT`), streamed as tables or
//! collected for `-o json|yaml`, and the apiserver's own tables.

use std::io::Write;

use kube::{
    api::{DynamicObject, ListParams, ObjectList},
    discovery::ApiResource,
    Api, Resource,
};
use serde::Serialize;
use serde_json::{json, Value};

use super::{
    args::{DryRun, ListFlags, WriteFlags},
    error::Error,
    printer::{self, Template, FORMATS},
    table::Table,
};

/// Page size of every list (upstream's `KUEUECTL_LIST_REQUEST_LIMIT`).
pub const LIST_LIMIT_ENV: &str = "KUEUECTL_LIST_REQUEST_LIMIT";
pub(super) const DEFAULT_LIST_LIMIT: u32 = 100;

pub(super) fn list_limit() -> Result<u32, Error> {
    match std::env::var(LIST_LIMIT_ENV) {
        Ok(v) if !v.is_empty() => v.parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(|| {
            Error::Usage(format!(
                "{LIST_LIMIT_ENV} must be a positive integer, got {v:?}"
            ))
        }),
        _ => Ok(DEFAULT_LIST_LIMIT),
    }
}

/// `kind.group/name`, lower-cased as kubectl's name printer writes it.
pub(super) fn qualified_name<K: Resource<DynamicType = ()>>(name: &str) -> String {
    let kind = K::kind(&()).to_lowercase();
    let group = K::group(&());
    if group.is_empty() {
        format!("{kind}/{name}")
    } else {
        format!("{kind}.{group}/{name}")
    }
}

/// An object as upstream's printers take it: JSON with managedFields
/// dropped (kubectl's default, `--show-managed-fields` keeps them).
pub(super) fn printable<T: Serialize>(obj: &T, show_managed_fields: bool) -> Result<Value, Error> {
    let mut v = serde_json::to_value(obj)?;
    if !show_managed_fields {
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
        }
    }
    Ok(v)
}

/// kubectl's JSON printer: four-space indentation, a newline after.
pub(super) fn write_json(v: &Value, out: &mut dyn Write) -> Result<(), Error> {
    let mut ser = serde_json::Serializer::with_formatter(
        &mut *out,
        serde_json::ser::PrettyFormatter::with_indent(b"    "),
    );
    v.serialize(&mut ser)?;
    writeln!(out)?;
    Ok(())
}

/// kubectl's YAML printer (sigs.k8s.io/yaml: keys sorted, as a
/// `serde_json::Value` keeps them); `---` before every document after the
/// first.
pub(super) fn write_yaml(v: &Value, first: bool, out: &mut dyn Write) -> Result<(), Error> {
    if !first {
        writeln!(out, "---")?;
    }
    write!(out, "{}", serde_yaml::to_string(v)?)?;
    Ok(())
}

/// Prints an object as `-o` asks: json, yaml, name, or (none) the name
/// with the operation and the dry-run suffix.
pub(super) fn print_object<K: Resource<DynamicType = ()> + Serialize>(
    obj: &K,
    write: &WriteFlags,
    operation: &str,
    dry: DryRun,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let name = obj.meta().name.clone().unwrap_or_default();
    if let Some(t) = printer::template(
        write.output.as_deref(),
        write.templates.template.as_deref(),
        write.templates.allow_missing_template_keys,
        false,
    )? {
        // Templates see managedFields: upstream drops them for json/yaml only.
        write!(out, "{}", t.render(&serde_json::to_value(obj)?)?)?;
        return Ok(());
    }
    match write.output.as_deref() {
        Some("json") => write_json(&printable(obj, write.show_managed_fields)?, out)?,
        Some("yaml") => write_yaml(&printable(obj, write.show_managed_fields)?, true, out)?,
        Some("name") => writeln!(out, "{}", qualified_name::<K>(&name))?,
        None | Some("") => {
            let op = if operation.is_empty() {
                String::new()
            } else {
                format!(" {operation}")
            };
            writeln!(out, "{}{op}{}", qualified_name::<K>(&name), dry.suffix())?
        }
        Some(other) => {
            return Err(Error::Usage(format!(
                "unable to match a printer suitable for the output format \"{other}\", allowed formats are: {FORMATS}"
            )))
        }
    }
    Ok(())
}

pub(super) enum ListOutput {
    Table { wide: bool },
    Structured(PageFormat),
    Name,
}

/// How a page printed as a list object is written.
pub(super) enum PageFormat {
    Json,
    Yaml,
    Template(Template),
}

pub(super) fn list_output(flags: &ListFlags) -> Result<ListOutput, Error> {
    if let Some(t) = printer::template(
        flags.output.as_deref(),
        flags.templates.template.as_deref(),
        flags.templates.allow_missing_template_keys,
        true,
    )? {
        return Ok(ListOutput::Structured(PageFormat::Template(t)));
    }
    match flags.output.as_deref() {
        None | Some("") => Ok(ListOutput::Table { wide: false }),
        Some("wide") => Ok(ListOutput::Table { wide: true }),
        Some("json") => Ok(ListOutput::Structured(PageFormat::Json)),
        Some("yaml") => Ok(ListOutput::Structured(PageFormat::Yaml)),
        Some("name") => Ok(ListOutput::Name),
        Some(other) => Err(Error::Usage(format!(
            "unable to match a printer suitable for the output format \"{other}\", allowed formats are: custom-columns,custom-columns-file,{FORMATS},wide"
        ))),
    }
}

pub(super) fn no_resources(namespace: Option<&str>) {
    match namespace {
        Some(ns) => eprintln!("No resources found in {ns} namespace."),
        None => eprintln!("No resources found"),
    }
}

/// The list parameters of `-l`/`--field-selector` (and a selector of the
/// command's own), a page of `KUEUECTL_LIST_REQUEST_LIMIT`.
pub(super) fn list_params(
    flags: &ListFlags,
    extra_labels: Option<&str>,
) -> Result<ListParams, Error> {
    let labels = match (flags.selector.as_deref(), extra_labels) {
        (Some(a), Some(b)) if !a.is_empty() => Some(format!("{a},{b}")),
        (Some(a), None) => Some(a.to_string()),
        (_, Some(b)) => Some(b.to_string()),
        _ => None,
    };
    let mut lp = ListParams::default().limit(list_limit()?);
    if let Some(l) = &labels {
        lp = lp.labels(l);
    }
    if let Some(f) = &flags.field_selector {
        lp = lp.fields(f);
    }
    Ok(lp)
}

/// One list request's pages, read one at a time (limit/continue), so a
/// page is printed and dropped before the next is read.
pub(super) struct Pages<K: Clone> {
    api: Api<K>,
    lp: ListParams,
    done: bool,
}

impl<K> Pages<K>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    pub(super) fn new(api: Api<K>, lp: ListParams) -> Self {
        Pages {
            api,
            lp,
            done: false,
        }
    }

    pub(super) async fn next(&mut self) -> Result<Option<ObjectList<K>>, Error> {
        if self.done {
            return Ok(None);
        }
        let page = self.api.list(&self.lp).await?;
        match page.metadata.continue_.clone().filter(|c| !c.is_empty()) {
            Some(c) => self.lp = self.lp.clone().continue_token(&c),
            None => self.done = true,
        }
        Ok(Some(page))
    }
}

/// Every page of a list (for the commands that need them all at once).
pub(super) async fn list_pages<K>(api: &Api<K>, lp: ListParams) -> Result<Vec<K>, Error>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut pages = Pages::new(api.clone(), lp);
    let mut items = Vec::new();
    while let Some(page) = pages.next().await? {
        items.extend(page.items);
    }
    Ok(items)
}

/// `-o json|yaml` of a list, as upstream prints it: each page as the typed
/// list of its group version (`WorkloadList`, ...) with the page's list
/// metadata, items as the server sent them (managedFields dropped), the
/// command's filters applied to the page. Returns how many items passed.
pub(super) async fn print_structured_pages<K>(
    api: &Api<K>,
    lp: ListParams,
    keep: impl Fn(&K) -> bool,
    output: &PageFormat,
    show_managed_fields: bool,
    out: &mut dyn Write,
) -> Result<usize, Error>
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let ar = ApiResource::erase::<K>(&());
    let raw: Api<DynamicObject> = Api::all_with(api.clone().into_client(), &ar);
    // The typed Api's URL carries the namespace; the raw one must too.
    let raw = match api.namespace() {
        Some(ns) => Api::namespaced_with(raw.into_client(), ns, &ar),
        None => raw,
    };
    let mut pages = Pages::new(raw, lp);
    let mut total = 0;
    let mut first = true;
    // Templates see managedFields: upstream drops them for json/yaml only.
    let keep_managed = show_managed_fields || matches!(output, PageFormat::Template(_));
    let mut rows = Vec::new();
    while let Some(page) = pages.next().await? {
        let mut items = Vec::with_capacity(page.items.len());
        for obj in page.items {
            let mut v = printable(&obj, keep_managed)?;
            let typed: K = serde_json::from_value(v.clone())?;
            if !keep(&typed) {
                continue;
            }
            if let Some(o) = v.as_object_mut() {
                o.entry("apiVersion")
                    .or_insert_with(|| Value::String(ar.api_version.clone()));
                o.entry("kind")
                    .or_insert_with(|| Value::String(ar.kind.clone()));
            }
            items.push(v);
        }
        total += items.len();
        // ListMeta as Go prints it: empty fields omitted.
        let mut meta = serde_json::Map::new();
        let m = &page.metadata;
        for (key, value) in [
            ("resourceVersion", m.resource_version.clone()),
            ("continue", m.continue_.clone()),
        ] {
            if let Some(v) = value.filter(|v| !v.is_empty()) {
                meta.insert(key.into(), Value::String(v));
            }
        }
        if let Some(n) = m.remaining_item_count {
            meta.insert("remainingItemCount".into(), json!(n));
        }
        let list = json!({
            "apiVersion": ar.api_version,
            "kind": format!("{}List", ar.kind),
            "metadata": meta,
            "items": items,
        });
        match output {
            PageFormat::Json => write_json(&list, out)?,
            PageFormat::Yaml => write_yaml(&list, first, out)?,
            PageFormat::Template(t @ Template::Columns(_)) => {
                for item in list["items"].as_array().into_iter().flatten() {
                    rows.push(t.row(item)?);
                }
            }
            PageFormat::Template(t) => write!(out, "{}", t.render(&list)?)?,
        }
        first = false;
    }
    // Custom columns are laid out once, as kubectl's tabwriter flushes.
    if let PageFormat::Template(t @ Template::Columns(_)) = output {
        write!(out, "{}", printer::columns_table(&t.headers(), &rows))?;
    }
    Ok(total)
}

/// A table filled page by page: only the cells are kept (column widths
/// need every row, as kubectl's tabwriter buffers until its flush), the
/// objects are dropped with their page.
pub(super) struct TableSink {
    pub(super) table: Table,
    all_namespaces: bool,
}

impl TableSink {
    pub(super) fn new(table: Table, all_namespaces: bool) -> Self {
        TableSink {
            table,
            all_namespaces,
        }
    }

    pub(super) fn push(&mut self, namespace: Option<&str>, mut row: Vec<String>) {
        if self.all_namespaces {
            row.insert(0, namespace.unwrap_or_default().to_string());
        }
        self.table.rows.push(row);
    }

    pub(super) fn finish(mut self, out: &mut dyn Write) -> Result<(), Error> {
        if self.all_namespaces {
            self.table.columns.insert(0, "Namespace".to_string());
        }
        write!(out, "{}", self.table.render(true))?;
        Ok(())
    }
}

/// `list clusterqueue|localqueue|resourceflavor`: pages streamed, each
/// filtered, its rows (or names) kept; `rows` makes a table of a page.
pub(super) async fn stream_list<K>(
    api: Api<K>,
    flags: &ListFlags,
    keep: impl Fn(&K) -> bool,
    rows: impl Fn(&[&K], bool) -> Table,
    namespaced: Option<Option<&str>>,
    out: &mut dyn Write,
) -> Result<(), Error>
where
    K: Resource<DynamicType = ()>
        + Clone
        + Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let output = list_output(flags)?;
    let lp = list_params(flags, None)?;
    let all = matches!(namespaced, Some(None));
    let total = match &output {
        ListOutput::Structured(format) => {
            print_structured_pages(&api, lp, keep, format, flags.show_managed_fields, out).await?
        }
        ListOutput::Name => {
            let mut pages = Pages::new(api, lp);
            let mut total = 0;
            while let Some(page) = pages.next().await? {
                for i in page.items.iter().filter(|i| keep(i)) {
                    total += 1;
                    writeln!(
                        out,
                        "{}",
                        qualified_name::<K>(&i.meta().name.clone().unwrap_or_default())
                    )?;
                }
            }
            total
        }
        ListOutput::Table { wide } => {
            let mut pages = Pages::new(api, lp);
            let mut sink = TableSink::new(rows(&[], *wide), all);
            while let Some(page) = pages.next().await? {
                let kept: Vec<&K> = page.items.iter().filter(|i| keep(i)).collect();
                let t = rows(&kept, *wide);
                for (i, row) in kept.iter().zip(t.rows) {
                    sink.push(i.meta().namespace.as_deref(), row);
                }
            }
            let total = sink.table.rows.len();
            if total > 0 {
                sink.finish(out)?;
            }
            total
        }
    };
    if total == 0 {
        no_resources(namespaced.flatten());
    }
    Ok(())
}

// ------------------------------------------------------------------ create

/// A server-side `meta.k8s.io/v1` Table as kubectl prints it (columns of
/// priority 0, or all with `wide`).
pub fn server_table(table: &Value, wide: bool) -> Table {
    let defs = table["columnDefinitions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let keep: Vec<usize> = defs
        .iter()
        .enumerate()
        .filter(|(_, d)| wide || d["priority"].as_i64().unwrap_or(0) == 0)
        .map(|(i, _)| i)
        .collect();
    let mut t = Table::new(
        keep.iter()
            .map(|i| defs[*i]["name"].as_str().unwrap_or_default().to_string())
            .collect::<Vec<String>>(),
    );
    for row in table["rows"].as_array().into_iter().flatten() {
        let cells = row["cells"].as_array().cloned().unwrap_or_default();
        t.rows.push(
            keep.iter()
                .map(|i| match cells.get(*i) {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Null) | None => String::new(),
                    Some(v) => v.to_string(),
                })
                .collect(),
        );
    }
    t
}
