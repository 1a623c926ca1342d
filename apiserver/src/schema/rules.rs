//! `x-kubernetes-validations`: a CRD's CEL rules, compiled once per schema
//! and evaluated on every create and update of its custom resources, worded
//! as kube-apiserver's apiextensions CEL validator words them. `self` is the
//! value at the rule's schema node; a transition rule (one naming
//! `oldSelf`) runs only on update and only where an old value correlates
//! (object properties and map keys always, list items only in
//! `x-kubernetes-list-type: map` lists, by key), unless `optionalOldSelf`.
//!
//! The interpreter is the `cel` crate (cel-rust). It parses but does not
//! type-check, so what cel-go refuses at compile time from types (a field
//! the schema does not declare, a rule that is not a bool) shows here only
//! when a rule runs; `check.rs` refuses what can be found without types.

mod check;
mod value;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use cel::objects::OptionalValue;
use cel::{Context, Env, ExecutionError, Program};
use serde_json::Value as Json;

use crate::causes::{self as field, Causes};

pub(crate) use check::rule_errors;

/// The environment every rule is compiled and run in: CEL's standard
/// library with its macros, and the strings extension kube also enables.
fn env() -> &'static Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Env::stdlib();
        env.add_extension(cel::extensions::strings)
            .expect("the strings extension declares each overload once");
        Arc::new(env)
    })
}

fn compile(source: &str) -> Result<Program, cel::ParseErrors> {
    env().compile(source)
}

/// A compiled rule or message expression.
struct Compiled {
    program: Program,
    uses_old_self: bool,
}

/// Every rule and message expression of one schema, compiled, by source.
pub(crate) struct Rules {
    programs: HashMap<String, Compiled>,
}

impl std::fmt::Debug for Rules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rules")
            .field("programs", &self.programs.len())
            .finish()
    }
}

/// Two rule sets compiled from the same sources are the same rules.
impl PartialEq for Rules {
    fn eq(&self, other: &Self) -> bool {
        self.programs.len() == other.programs.len()
            && self.programs.keys().all(|k| other.programs.contains_key(k))
    }
}

/// The `x-kubernetes-validations` lists of a node: its own, then those of
/// its `allOf` entries (which kube runs against the same value).
fn node_rules(s: &Json) -> impl Iterator<Item = &Json> {
    let own = s["x-kubernetes-validations"]
        .as_array()
        .into_iter()
        .flatten();
    let all_of = s["allOf"].as_array().into_iter().flatten().flat_map(|a| {
        a["x-kubernetes-validations"]
            .as_array()
            .into_iter()
            .flatten()
    });
    own.chain(all_of)
}

/// The schemas directly below `s`.
fn children(s: &Json) -> impl Iterator<Item = &Json> {
    let props = s["properties"]
        .as_object()
        .into_iter()
        .flat_map(|m| m.values());
    let more = [&s["items"], &s["additionalProperties"]]
        .into_iter()
        .filter(|c| c.is_object());
    props.chain(more)
}

impl Rules {
    /// The compiled rules of `schema`, or `None` when it has none. A rule
    /// that does not compile is left out: its CRD was refused for it
    /// (`rule_errors`), unless stored before rules were checked.
    pub(crate) fn compile(schema: &Json) -> Option<Self> {
        let mut programs = HashMap::new();
        let mut stack = vec![schema];
        while let Some(s) = stack.pop() {
            for rule in node_rules(s) {
                for source in [&rule["rule"], &rule["messageExpression"]] {
                    let Some(src) = source.as_str() else { continue };
                    if programs.contains_key(src) {
                        continue;
                    }
                    if let Ok(program) = compile(src) {
                        let uses_old_self = program.references().has_variable("oldSelf");
                        programs.insert(
                            src.to_owned(),
                            Compiled {
                                program,
                                uses_old_self,
                            },
                        );
                    }
                }
            }
            stack.extend(children(s));
        }
        (!programs.is_empty()).then_some(Self { programs })
    }

    /// What `obj` (and, on update, `old`) breaks of the rules of `schema`:
    /// one cause per failed rule, all of them.
    pub(crate) fn errors(&self, schema: &Json, obj: &Json, old: Option<&Json>) -> Causes {
        let mut errs = Causes::new();
        self.walk(schema, obj, old, "", true, &mut errs);
        errs
    }

    fn walk(
        &self,
        s: &Json,
        v: &Json,
        old: Option<&Json>,
        path: &str,
        resource: bool,
        errs: &mut Causes,
    ) {
        // Rules check values; a null is for the enclosing schema to judge.
        if v.is_null() {
            return;
        }
        let old = old.filter(|o| !o.is_null());
        self.run_node(s, v, old, path, resource, errs);
        match v {
            Json::Object(m) => {
                if let Some(props) = s["properties"].as_object() {
                    for (k, child) in props {
                        if let Some(x) = m.get(k) {
                            let o = old.and_then(|o| o.get(k));
                            let p = child_path(path, k);
                            self.walk(child, x, o, &p, value::is_embedded(child), errs);
                        }
                    }
                } else if s["additionalProperties"].is_object() {
                    let ap = &s["additionalProperties"];
                    for (k, x) in m {
                        let o = old.and_then(|o| o.get(k));
                        let p = format!("{}[{k}]", shown_path(path));
                        self.walk(ap, x, o, &p, value::is_embedded(ap), errs);
                    }
                }
            }
            Json::Array(items) if s["items"].is_object() => {
                let item = &s["items"];
                for (i, x) in items.iter().enumerate() {
                    let o = old.and_then(|o| correlated_item(s, o, x));
                    let p = format!("{}[{i}]", shown_path(path));
                    self.walk(item, x, o, &p, value::is_embedded(item), errs);
                }
            }
            _ => {}
        }
    }

    /// The rules of one node against its value.
    fn run_node(
        &self,
        s: &Json,
        v: &Json,
        old: Option<&Json>,
        path: &str,
        resource: bool,
        errs: &mut Causes,
    ) {
        let mut rules = node_rules(s).peekable();
        if rules.peek().is_none() {
            return;
        }
        let this = value::to_cel(s, v, resource);
        let before = old.map(|o| value::to_cel(s, o, resource));
        let type_name = Json::from(s["type"].as_str().unwrap_or_default());
        for rule in rules {
            let Some(compiled) = rule["rule"].as_str().and_then(|r| self.programs.get(r)) else {
                continue;
            };
            let optional = rule["optionalOldSelf"] == true;
            if compiled.uses_old_self && before.is_none() && !optional {
                continue;
            }
            let mut ctx = Context::with_env(env().clone());
            ctx.add_variable_from_value("self", this.clone());
            if compiled.uses_old_self {
                let old_self = match (&before, optional) {
                    (Some(b), false) => b.clone(),
                    (Some(b), true) => optional_value(OptionalValue::of(b.clone())),
                    (None, _) => optional_value(OptionalValue::none()),
                };
                ctx.add_variable_from_value("oldSelf", old_self);
            }
            let here = shown_path(path);
            match compiled.program.execute(&ctx) {
                Ok(cel::Value::Bool(true)) => {}
                Ok(_) => {
                    let at = match rule["fieldPath"].as_str().and_then(|f| relative(s, f)) {
                        Some(rel) => format!("{}{rel}", child_path(path, "")),
                        None => here,
                    };
                    let detail = self
                        .message_from_expression(rule, &ctx)
                        .unwrap_or_else(|| default_message(rule));
                    failed(errs, &at, &type_name, &detail, rule["reason"].as_str());
                }
                Err(e) => {
                    let detail = runtime_message(&e, &rule_error_string(rule));
                    field::invalid(errs, &here, &type_name, &detail);
                }
            }
        }
    }

    /// The message `messageExpression` gives, when it gives a usable one
    /// (kube falls back to `message` on an error, a non-string, a blank or
    /// a multi-line result).
    fn message_from_expression(&self, rule: &Json, ctx: &Context) -> Option<String> {
        let compiled = self.programs.get(rule["messageExpression"].as_str()?)?;
        match compiled.program.execute(ctx) {
            Ok(cel::Value::String(s)) => {
                let t = s.trim();
                (!t.is_empty() && !t.contains('\n')).then(|| t.to_owned())
            }
            _ => None,
        }
    }
}

fn optional_value(o: OptionalValue) -> cel::Value {
    cel::Value::Opaque(Arc::new(o))
}

/// A field path as `field.Path` prints it: the root has no name.
fn shown_path(path: &str) -> String {
    if path.is_empty() {
        "<nil>".to_owned()
    } else {
        path.to_owned()
    }
}

/// `path.key` (just `key` at the root).
fn child_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// The old item an item of a `map` list correlates with: the one with the
/// same values at every `x-kubernetes-list-map-keys` key. Items of other
/// lists have none (kube cannot tell which old item a new one was).
fn correlated_item<'a>(list: &Json, old: &'a Json, item: &Json) -> Option<&'a Json> {
    if list["x-kubernetes-list-type"] != "map" {
        return None;
    }
    let keys: Vec<&str> = list["x-kubernetes-list-map-keys"]
        .as_array()?
        .iter()
        .filter_map(Json::as_str)
        .collect();
    old.as_array()?
        .iter()
        .find(|o| keys.iter().all(|k| o.get(*k) == item.get(*k)))
}

/// `fieldPath` (`.spec.a`, `['x.y']`, `.labels['k']`) as the path below the
/// rule's node it names, or why it names none.
pub(crate) fn parse_field_path(mut s: &Json, path: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = path;
    while !rest.is_empty() {
        let (name, after) = if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            if end == 0 {
                return Err("unexpected end of JSON path".into());
            }
            (r[..end].to_owned(), &r[end..])
        } else if let Some(r) = rest.strip_prefix("['") {
            let end = r.find("']").ok_or("unexpected end of JSON path")?;
            (r[..end].replace("\\'", "'"), &r[end + 2..])
        } else {
            return Err(format!("expected [ or . but got: {rest}"));
        };
        if let Some(props) = s["properties"].as_object() {
            s = props.get(&name).ok_or("does not refer to a valid field")?;
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&name);
        } else if s["additionalProperties"].is_object() {
            s = &s["additionalProperties"];
            out.push_str(&format!("[{name}]"));
        } else {
            return Err("does not refer to a valid field".into());
        }
        rest = after;
    }
    Ok(out)
}

fn relative(s: &Json, field_path: &str) -> Option<String> {
    parse_field_path(s, field_path).ok()
}

/// The rule as kube names it in messages: its message, else its source.
fn rule_error_string(rule: &Json) -> String {
    match rule["message"].as_str().map(str::trim) {
        Some(m) if !m.is_empty() => m.to_owned(),
        _ => rule["rule"].as_str().unwrap_or_default().trim().to_owned(),
    }
}

fn default_message(rule: &Json) -> String {
    match rule["message"].as_str().map(str::trim) {
        Some(m) if !m.is_empty() => m.to_owned(),
        _ => format!("failed rule: {}", rule_error_string(rule)),
    }
}

/// A failed rule as the cause its `reason` names (`FieldValueInvalid`
/// unless said otherwise); the value shown is the node's schema type.
fn failed(errs: &mut Causes, path: &str, type_name: &Json, detail: &str, reason: Option<&str>) {
    match reason {
        Some("FieldValueForbidden") => field::forbidden(errs, path, detail),
        Some("FieldValueRequired") => field::required(errs, path, detail),
        Some("FieldValueDuplicate") => field::duplicate(errs, path, &field::shown(type_name)),
        _ => field::invalid(errs, path, type_name, detail),
    }
}

/// A rule that could not be evaluated, in cel-go's words where they differ.
fn runtime_message(e: &ExecutionError, rule: &str) -> String {
    let what = match e {
        ExecutionError::NoSuchOverload(_) | ExecutionError::UnsupportedBinaryOperator(..) => {
            return format!(
                "'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {rule}"
            );
        }
        ExecutionError::NoSuchKey(k) => format!("no such key: {k}"),
        ExecutionError::DivisionByZero(_) => "division by zero".to_owned(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_owned(),
        ExecutionError::Overflow(..) => "integer overflow".to_owned(),
        other => {
            let text = other.to_string();
            let mut chars = text.chars();
            match chars.next() {
                Some(c) => c.to_lowercase().chain(chars).collect(),
                None => text,
            }
        }
    };
    format!("{what} evaluating rule: {rule}")
}

#[cfg(test)]
mod tests;
