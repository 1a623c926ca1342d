//! Label selectors (`app=web`, `tier in (a,b)`, `!canary`, `gen>3`), as in
//! `k8s.io/apimachinery/pkg/labels`.

use std::fmt;
use std::str::FromStr;

use crate::SelectorError;

/// How a requirement compares a label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `k=v`, `k==v`, `k in (v1,v2)`: the label is present with one of the values.
    In,
    /// `k!=v`, `k notin (v1,v2)`: the label is absent or has none of the values.
    NotIn,
    /// `k`: the label is present.
    Exists,
    /// `!k`: the label is absent.
    DoesNotExist,
    /// `k>n`: the label is an integer greater than n.
    GreaterThan,
    /// `k<n`: the label is an integer less than n.
    LessThan,
}

/// One comma-separated clause of a label selector.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    key: String,
    op: Operator,
    /// Sorted and deduplicated, so equal selectors print equally.
    values: Vec<String>,
}

impl Requirement {
    /// The label key this clause looks at.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The comparison.
    pub fn operator(&self) -> Operator {
        self.op
    }

    /// The values compared against (empty for `Exists`/`DoesNotExist`).
    pub fn values(&self) -> &[String] {
        &self.values
    }

    fn matches(&self, value: Option<&str>) -> bool {
        match (self.op, value) {
            (Operator::In, Some(v)) => self.values.iter().any(|w| w == v),
            (Operator::In, None) => false,
            (Operator::NotIn, Some(v)) => !self.values.iter().any(|w| w == v),
            (Operator::NotIn, None) => true,
            (Operator::Exists, v) => v.is_some(),
            (Operator::DoesNotExist, v) => v.is_none(),
            (Operator::GreaterThan | Operator::LessThan, None) => false,
            (op, Some(v)) => {
                let (Ok(have), Some(Ok(bound))) = (
                    v.parse::<i64>(),
                    self.values.first().map(|b| b.parse::<i64>()),
                ) else {
                    return false;
                };
                if op == Operator::GreaterThan {
                    have > bound
                } else {
                    have < bound
                }
            }
        }
    }
}

/// A parsed label selector. The empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// The selector that matches every object.
    pub fn everything() -> Self {
        Self::default()
    }

    /// Parses the Kubernetes text form.
    pub fn parse(input: &str) -> Result<Self, SelectorError> {
        Parser::new(input).parse()
    }

    /// True when the selector has no requirements and so matches everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The clauses, all of which must hold.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// True when every requirement holds for the labels `get` looks up.
    pub fn matches<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|r| r.matches(get(&r.key)))
    }

    /// The single value an `In` requirement with one value pins `key` to, if
    /// any: lets callers use a label index instead of a scan.
    pub fn pinned_value(&self, key: &str) -> Option<&str> {
        self.requirements.iter().find_map(|r| {
            (r.key == key && r.op == Operator::In && r.values.len() == 1)
                .then(|| r.values[0].as_str())
        })
    }
}

impl FromStr for LabelSelector {
    type Err = SelectorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// The text form of a `metav1.LabelSelector` (`matchLabels`,
/// `matchExpressions`), as `LabelSelectorAsSelector(..).String()` prints
/// it: requirements sorted by key, values sorted (`app=web,tier in
/// (a,b),!canary`). `None` for an operator kube does not know.
pub fn selector_text(selector: &serde_json::Map<String, serde_json::Value>) -> Option<String> {
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
    let labels = selector.get("matchLabels").and_then(|m| m.as_object());
    let mut parts: Vec<(String, String)> = labels
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), format!("{k}={}", text(v))))
        .collect();
    let expressions = selector.get("matchExpressions").and_then(|e| e.as_array());
    for e in expressions.into_iter().flatten() {
        let key = text(&e["key"]);
        let mut values: Vec<String> = e["values"]
            .as_array()
            .into_iter()
            .flatten()
            .map(text)
            .collect();
        values.sort();
        let shown = match e["operator"].as_str().unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.clone(),
            "DoesNotExist" => format!("!{key}"),
            _ => return None,
        };
        parts.push((key, shown));
    }
    parts.sort();
    let parts: Vec<String> = parts.into_iter().map(|(_, p)| p).collect();
    Some(parts.join(","))
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            match r.op {
                Operator::Exists => write!(f, "{}", r.key)?,
                Operator::DoesNotExist => write!(f, "!{}", r.key)?,
                Operator::GreaterThan => write!(f, "{}>{}", r.key, r.values[0])?,
                Operator::LessThan => write!(f, "{}<{}", r.key, r.values[0])?,
                Operator::In if r.values.len() == 1 => write!(f, "{}={}", r.key, r.values[0])?,
                Operator::NotIn if r.values.len() == 1 => write!(f, "{}!={}", r.key, r.values[0])?,
                Operator::In => write!(f, "{} in ({})", r.key, r.values.join(","))?,
                Operator::NotIn => write!(f, "{} notin ({})", r.key, r.values.join(","))?,
            }
        }
        Ok(())
    }
}

struct Parser<'a> {
    input: &'a str,
    rest: &'a str,
}

impl<'a> Parser<'a> {
    fn new(input: &'a str) -> Self {
        Self { input, rest: input }
    }

    fn err(&self, reason: impl Into<String>) -> SelectorError {
        SelectorError::label(self.input, reason)
    }

    fn skip_ws(&mut self) {
        self.rest = self.rest.trim_start();
    }

    fn eat(&mut self, token: &str) -> bool {
        self.skip_ws();
        match self.rest.strip_prefix(token) {
            Some(rest) => {
                self.rest = rest;
                true
            }
            None => false,
        }
    }

    /// A key or value: everything up to whitespace or an operator character.
    fn word(&mut self) -> &'a str {
        self.skip_ws();
        let end = self
            .rest
            .find(|c: char| c.is_whitespace() || "=!,()<>".contains(c))
            .unwrap_or(self.rest.len());
        let (word, rest) = self.rest.split_at(end);
        self.rest = rest;
        word
    }

    fn parse(mut self) -> Result<LabelSelector, SelectorError> {
        let mut requirements = Vec::new();
        self.skip_ws();
        if self.rest.is_empty() {
            return Ok(LabelSelector { requirements });
        }
        loop {
            requirements.push(self.requirement()?);
            self.skip_ws();
            if self.rest.is_empty() {
                break;
            }
            if !self.eat(",") {
                return Err(self.err(format!("expected ',' before {:?}", self.rest)));
            }
        }
        // Canonical order makes equal selectors compare and hash equal.
        requirements.sort_by(|a: &Requirement, b| a.key.cmp(&b.key));
        Ok(LabelSelector { requirements })
    }

    fn requirement(&mut self) -> Result<Requirement, SelectorError> {
        if self.eat("!") {
            let key = self.key()?;
            return Ok(Requirement {
                key,
                op: Operator::DoesNotExist,
                values: Vec::new(),
            });
        }
        let key = self.key()?;
        self.skip_ws();
        let (op, values) = if self.rest.is_empty() || self.rest.starts_with(',') {
            (Operator::Exists, Vec::new())
        } else if self.eat("==") || self.eat("=") {
            (Operator::In, vec![self.value()?])
        } else if self.eat("!=") {
            (Operator::NotIn, vec![self.value()?])
        } else if self.eat(">") {
            (Operator::GreaterThan, vec![self.integer()?])
        } else if self.eat("<") {
            (Operator::LessThan, vec![self.integer()?])
        } else {
            let word = self.word();
            let op = match word {
                "in" => Operator::In,
                "notin" => Operator::NotIn,
                _ => {
                    return Err(self.err(format!(
                        "expected an operator (=, ==, !=, in, notin, >, <) after {key:?}, found {word:?}"
                    )));
                }
            };
            (op, self.value_set()?)
        };
        Ok(Requirement { key, op, values })
    }

    fn key(&mut self) -> Result<String, SelectorError> {
        let key = self.word();
        validate_key(key).map_err(|reason| self.err(reason))?;
        Ok(key.to_owned())
    }

    fn value(&mut self) -> Result<String, SelectorError> {
        let value = self.word();
        validate_value(value).map_err(|reason| self.err(reason))?;
        Ok(value.to_owned())
    }

    fn integer(&mut self) -> Result<String, SelectorError> {
        let value = self.word();
        value
            .parse::<i64>()
            .map_err(|_| self.err(format!("{value:?} is not an integer")))?;
        Ok(value.to_owned())
    }

    fn value_set(&mut self) -> Result<Vec<String>, SelectorError> {
        if !self.eat("(") {
            return Err(self.err("expected '(' to open a value set"));
        }
        let mut values = Vec::new();
        loop {
            values.push(self.value()?);
            if self.eat(")") {
                break;
            }
            if !self.eat(",") {
                return Err(self.err("expected ',' or ')' in a value set"));
            }
        }
        values.sort();
        values.dedup();
        Ok(values)
    }
}

/// A qualified name: an optional DNS subdomain prefix and `/`, then a name of
/// at most 63 alphanumerics, `-`, `_` or `.`, starting and ending alphanumeric.
fn validate_key(key: &str) -> Result<(), String> {
    if key.is_empty() {
        return Err("a label key is empty".into());
    }
    let name = match key.split_once('/') {
        Some((prefix, name)) => {
            if prefix.is_empty() || prefix.len() > 253 {
                return Err(format!(
                    "label key prefix {prefix:?} must be 1-253 characters"
                ));
            }
            if !prefix
                .split('.')
                .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
                || prefix.chars().any(|c| c.is_ascii_uppercase())
            {
                return Err(format!(
                    "label key prefix {prefix:?} must be a lowercase DNS subdomain"
                ));
            }
            name
        }
        None => key,
    };
    if !is_name_part(name) {
        return Err(format!(
            "label key {key:?}: the name part must be 1-63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric"
        ));
    }
    Ok(())
}

/// Label values: empty, or a name part.
fn validate_value(value: &str) -> Result<(), String> {
    if value.is_empty() || is_name_part(value) {
        Ok(())
    } else {
        Err(format!(
            "label value {value:?} must be at most 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric"
        ))
    }
}

fn is_name_part(s: &str) -> bool {
    let bytes = s.as_bytes();
    !s.is_empty()
        && s.len() <= 63
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<&'a str> {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| *v)
    }

    #[test]
    fn every_operator_matches_as_kubernetes_does() {
        let set = [("app", "web"), ("tier", "front"), ("gen", "5")];
        let cases = [
            ("", true),
            ("app=web", true),
            ("app==web", true),
            ("app=db", false),
            ("app!=db", true),
            ("missing!=x", true),
            ("tier in (front,back)", true),
            ("tier in (back)", false),
            ("tier notin (back)", true),
            ("missing notin (a)", true),
            ("missing in (a)", false),
            ("app", true),
            ("missing", false),
            ("!missing", true),
            ("!app", false),
            ("gen>3", true),
            ("gen<3", false),
            ("app>3", false),
            ("app=web, tier in (front),!canary", true),
            ("app=web,tier=back", false),
        ];
        for (sel, want) in cases {
            let parsed = LabelSelector::parse(sel).unwrap_or_else(|e| panic!("{sel}: {e}"));
            assert_eq!(parsed.matches(labels(&set)), want, "{sel}");
        }
    }

    #[test]
    fn prints_canonically_and_round_trips() {
        let sel = LabelSelector::parse(" tier in (b, a,a) , app = web ,!x,gen>2").unwrap();
        assert_eq!(sel.to_string(), "app=web,gen>2,tier in (a,b),!x");
        assert_eq!(LabelSelector::parse(&sel.to_string()).unwrap(), sel);
        assert_eq!(sel.pinned_value("app"), Some("web"));
        assert_eq!(sel.pinned_value("tier"), None);
    }

    #[test]
    fn qualified_keys_and_empty_values() {
        let sel = LabelSelector::parse("app.kubernetes.io/name=web,empty=").unwrap();
        let set = [("app.kubernetes.io/name", "web"), ("empty", "")];
        assert!(sel.matches(labels(&set)));
    }

    #[test]
    fn rejects_malformed_input_with_reasons() {
        for bad in [
            "=x",
            "app=",
            "app in (a",
            "app in a",
            "app foo (a)",
            "app=web,,tier=x",
            "app=-bad-",
            "UPPER.example/x=1",
            "gen>three",
            "app=web tier=x",
        ] {
            // "app=" is valid (empty value); everything else must fail.
            if bad == "app=" {
                assert!(LabelSelector::parse(bad).is_ok());
                continue;
            }
            let err = LabelSelector::parse(bad).expect_err(bad);
            assert!(err.to_string().contains("invalid label selector"), "{err}");
        }
    }
}
