//! The checks a CRD's `x-kubernetes-validations` must pass before the CRD
//! is stored, in the words of kube-apiserver's CRD validation: a rule and
//! its `messageExpression` compile (`compilation failed: ERROR: <input>:1:5:
//! ...`) and name no variable but `self` and `oldSelf`; `reason` is one of
//! the four kube supports; `message` is one line; `fieldPath` names a field
//! of the schema; `oldSelf` is not used where no old value can correlate.

use cel::common::ast::{EntryExpr, Expr, IdedExpr};
use serde_json::Value as Json;

use super::{compile, parse_field_path};
use crate::causes::{self as field, Causes};

const REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// The problems of the rules of the schema node `s`, named from `path`
/// (`spec.validation.openAPIV3Schema.properties[spec]`). `uncorrelatable`
/// is the path of the list whose items the node is under, when no old
/// value can be matched to a new one there.
pub(crate) fn rule_errors(s: &Json, path: &str, uncorrelatable: Option<&str>, errs: &mut Causes) {
    let Some(rules) = s["x-kubernetes-validations"].as_array() else {
        return;
    };
    for (i, rule) in rules.iter().enumerate() {
        let at = |f: &str| format!("{path}.x-kubernetes-validations[{i}].{f}");
        let source = rule["rule"].as_str().unwrap_or_default();
        let message = rule["message"].as_str().unwrap_or_default();
        let shown = go_rule(rule);
        if has_newlines(message.trim()) {
            field::invalid(
                errs,
                at("message"),
                &Json::from(message),
                "message must not contain line breaks",
            );
        } else if has_newlines(source.trim()) && message.trim().is_empty() {
            field::required(
                errs,
                at("message"),
                "message must be specified if rule contains line breaks",
            );
        }
        if let Some(m) = rule["messageExpression"].as_str()
            && !m.is_empty()
            && m.trim().is_empty()
        {
            field::required(
                errs,
                at("messageExpression"),
                "messageExpression must be non-empty if specified",
            );
        }
        if let Some(reason) = rule["reason"].as_str()
            && !REASONS.contains(&reason)
        {
            field::not_supported(errs, at("reason"), &Json::from(reason), &REASONS);
        }
        if let Some(fp) = rule["fieldPath"].as_str().filter(|f| !f.is_empty()) {
            let why = if fp.trim().is_empty() {
                Some("fieldPath must be non-empty if specified")
            } else if has_newlines(fp) {
                Some("fieldPath must not contain line breaks")
            } else if parse_field_path(s, fp).is_err() {
                Some("fieldPath must be a valid path")
            } else {
                None
            };
            if let Some(why) = why {
                field::invalid(errs, at("fieldPath"), &Json::from(fp), why);
            }
        }
        if source.trim().is_empty() {
            field::required(errs, at("rule"), "rule is not specified");
            continue;
        }
        match compile_checked(source) {
            Err(e) => {
                let why = format!("compilation failed: {e}");
                field::invalid_raw(errs, at("rule"), &shown, &why);
            }
            Ok(uses_old_self) => {
                if uses_old_self && let Some(list) = uncorrelatable {
                    let why = format!(
                        "oldSelf cannot be used on the uncorrelatable portion of the schema within {list}"
                    );
                    field::invalid(errs, at("rule"), &Json::from(source), &why);
                }
                if rule["optionalOldSelf"] == true && !uses_old_self {
                    field::invalid(
                        errs,
                        at("optionalOldSelf"),
                        &Json::Bool(true),
                        "may not be set if oldSelf is not used in rule",
                    );
                }
            }
        }
        if let Some(m) = rule["messageExpression"]
            .as_str()
            .filter(|m| !m.trim().is_empty())
            && let Err(e) = compile_checked(m)
        {
            let why = format!("messageExpression compilation failed: {e}");
            field::invalid_raw(errs, at("messageExpression"), &shown, &why);
        }
    }
}

/// Compiles `source` and checks the names it uses; `Ok(uses oldSelf)`.
fn compile_checked(source: &str) -> Result<bool, String> {
    // cel-go indents the snippet under an error by one more space.
    let program = compile(source).map_err(|e| e.to_string().replace("\n| ", "\n | "))?;
    let mut scope = vec!["self", "oldSelf"];
    if let Some((id, name)) = undeclared(program.expression(), &mut scope) {
        let (line, col) = program
            .source_info()
            .offset_for(id)
            .map_or((1, 1), |(start, _)| line_col(source, start as usize));
        return Err(format!(
            "ERROR: <input>:{line}:{col}: undeclared reference to '{name}' (in container '')"
        ));
    }
    Ok(program.references().has_variable("oldSelf"))
}

/// 1-based line and column of the character at `offset`.
fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let before: Vec<char> = source.chars().take(offset).collect();
    let line = before.iter().filter(|c| **c == '\n').count() + 1;
    let col = before.iter().rev().take_while(|c| **c != '\n').count() + 1;
    (line, col)
}

/// Names CEL knows without a declaration: types and extension namespaces.
const KNOWN: [&str; 17] = [
    "bool",
    "bytes",
    "double",
    "int",
    "uint",
    "string",
    "list",
    "map",
    "null_type",
    "type",
    "dyn",
    "optional_type",
    "optional",
    "strings",
    "math",
    "lists",
    "cel",
];

/// The first identifier of `e` that is neither in `scope` (the rule's
/// variables and the comprehension variables around it) nor known.
fn undeclared<'e>(e: &'e IdedExpr, scope: &mut Vec<&'e str>) -> Option<(u64, &'e str)> {
    match &e.expr {
        Expr::Ident(name) => {
            let known = scope.contains(&name.as_str())
                || KNOWN.contains(&name.as_str())
                || name.starts_with('@');
            (!known).then_some((e.id, name.as_str()))
        }
        Expr::Select(s) => undeclared(&s.operand, scope),
        Expr::Call(c) => c
            .target
            .iter()
            .map(|t| &**t)
            .chain(c.args.iter())
            .find_map(|x| undeclared(x, scope)),
        Expr::List(l) => l.elements.iter().find_map(|x| undeclared(x, scope)),
        Expr::Map(m) => m.entries.iter().find_map(|en| match &en.expr {
            EntryExpr::MapEntry(me) => {
                undeclared(&me.key, scope).or_else(|| undeclared(&me.value, scope))
            }
            EntryExpr::StructField(f) => undeclared(&f.value, scope),
        }),
        Expr::Struct(st) => st.entries.iter().find_map(|en| match &en.expr {
            EntryExpr::MapEntry(me) => {
                undeclared(&me.key, scope).or_else(|| undeclared(&me.value, scope))
            }
            EntryExpr::StructField(f) => undeclared(&f.value, scope),
        }),
        Expr::Comprehension(c) => {
            if let Some(found) =
                undeclared(&c.iter_range, scope).or_else(|| undeclared(&c.accu_init, scope))
            {
                return Some(found);
            }
            let depth = scope.len();
            scope.push(&c.iter_var);
            if let Some(v2) = &c.iter_var2 {
                scope.push(v2);
            }
            scope.push(&c.accu_var);
            let found = [&c.loop_cond, &c.loop_step, &c.result]
                .into_iter()
                .find_map(|x| undeclared(x, scope));
            scope.truncate(depth);
            found
        }
        Expr::Literal(_) | Expr::Unspecified => None,
    }
}

fn has_newlines(s: &str) -> bool {
    s.contains(['\n', '\r'])
}

/// The rule as Go's `%#v` prints kube's internal `ValidationRule`, which
/// its CRD validation shows as the bad value. Go prints a set pointer as
/// its address; here it is the value pointed at.
fn go_rule(rule: &Json) -> String {
    let s = |k: &str| format!("{:?}", rule[k].as_str().unwrap_or_default());
    let reason = match rule["reason"].as_str() {
        Some(r) => format!("(*apiextensions.FieldValueErrorReason)({r:?})"),
        None => "(*apiextensions.FieldValueErrorReason)(nil)".to_owned(),
    };
    let optional = match rule["optionalOldSelf"].as_bool() {
        Some(b) => format!("(*bool)({b})"),
        None => "(*bool)(nil)".to_owned(),
    };
    format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{reason}, FieldPath:{}, OptionalOldSelf:{optional}}}",
        s("rule"),
        s("message"),
        s("messageExpression"),
        s("fieldPath"),
    )
}
