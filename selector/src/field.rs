//! Field selectors (`metadata.name=web`, `status.phase!=Running`), as in
//! `k8s.io/apimachinery/pkg/fields`, with `\` escapes for `,`, `=`, `!` and `\`.

use std::fmt;
use std::str::FromStr;

use crate::SelectorError;

/// One clause: a field path compared for equality or inequality.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldRequirement {
    field: String,
    value: String,
    negated: bool,
}

impl FieldRequirement {
    /// The dotted field path, e.g. `spec.nodeName`.
    pub fn field(&self) -> &str {
        &self.field
    }

    /// The value compared against.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// True for `!=`.
    pub fn is_negated(&self) -> bool {
        self.negated
    }
}

/// A parsed field selector. The empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// Parses the Kubernetes text form.
    pub fn parse(input: &str) -> Result<Self, SelectorError> {
        let mut requirements = Vec::new();
        for clause in split_unescaped(input, ',') {
            let clause = trim_unescaped(clause);
            if clause.is_empty() {
                if input.trim().is_empty() {
                    continue;
                }
                return Err(SelectorError::field(input, "empty clause"));
            }
            requirements.push(parse_clause(input, clause)?);
        }
        requirements.sort_by(|a: &FieldRequirement, b| a.field.cmp(&b.field));
        Ok(Self { requirements })
    }

    /// True when the selector matches everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The clauses, all of which must hold.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// True when every clause holds. `get` returns a field's value, or None
    /// when the object has no such field (which compares as "").
    pub fn matches<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|r| {
            let have = get(&r.field).unwrap_or_default();
            (have == r.value) != r.negated
        })
    }

    /// The same selector with each field renamed by `rename` where it
    /// answers (a server's field label conversion: `events.k8s.io`'s
    /// `regarding.name` is core's `involvedObject.name`).
    pub fn renamed(mut self, rename: impl Fn(&str) -> Option<&'static str>) -> Self {
        for r in &mut self.requirements {
            if let Some(to) = rename(&r.field) {
                r.field = to.to_owned();
            }
        }
        self.requirements.sort_by(|a, b| a.field.cmp(&b.field));
        self
    }

    /// The value an `=` clause pins `field` to, if any.
    pub fn pinned_value(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && !r.negated)
            .map(|r| r.value.as_str())
    }
}

impl FromStr for FieldSelector {
    type Err = SelectorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let op = if r.negated { "!=" } else { "=" };
            write!(f, "{}{op}{}", escape(&r.field), escape(&r.value))?;
        }
        Ok(())
    }
}

fn parse_clause(input: &str, clause: &str) -> Result<FieldRequirement, SelectorError> {
    // Find the first unescaped operator.
    let bytes = clause.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'!' if bytes.get(i + 1) == Some(&b'=') => {
                return requirement(input, &clause[..i], &clause[i + 2..], true);
            }
            b'=' => {
                let skip = if bytes.get(i + 1) == Some(&b'=') {
                    2
                } else {
                    1
                };
                return requirement(input, &clause[..i], &clause[i + skip..], false);
            }
            _ => i += 1,
        }
    }
    Err(SelectorError::field(
        input,
        format!("{clause:?} has no operator (=, == or !=)"),
    ))
}

fn requirement(
    input: &str,
    field: &str,
    value: &str,
    negated: bool,
) -> Result<FieldRequirement, SelectorError> {
    let field = unescape(trim_unescaped(field));
    if field.is_empty() {
        return Err(SelectorError::field(input, "a clause has no field name"));
    }
    Ok(FieldRequirement {
        field,
        value: unescape(trim_unescaped(value)),
        negated,
    })
}

/// `s` without surrounding whitespace, keeping an escaped space at the end
/// (`a\ `), which is part of the value.
fn trim_unescaped(s: &str) -> &str {
    let s = s.trim_start();
    let mut end = s.len();
    for (i, c) in s.char_indices().rev() {
        if !c.is_whitespace() {
            break;
        }
        let backslashes = s[..i].bytes().rev().take_while(|&b| b == b'\\').count();
        if backslashes % 2 == 1 {
            break;
        }
        end = i;
    }
    &s[..end]
}

fn split_unescaped(s: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            parts.push(&s[start..i]);
            start = i + 1;
        }
    }
    parts.push(&s[start..]);
    parts
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The text form of a field or value: separators and operators escaped,
/// and whitespace at either end too (parsing trims what is unescaped).
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let last = s.chars().count().saturating_sub(1);
    for (i, c) in s.chars().enumerate() {
        if matches!(c, '\\' | ',' | '=' | '!') || (c.is_whitespace() && (i == 0 || i == last)) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<&'a str> + 'a {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| *v)
    }

    #[test]
    fn equality_and_inequality() {
        let obj = [("metadata.name", "web"), ("status.phase", "Running")];
        for (sel, want) in [
            ("", true),
            ("metadata.name=web", true),
            ("metadata.name==web", true),
            ("metadata.name!=web", false),
            ("status.phase!=Pending,metadata.name=web", true),
            ("spec.nodeName=", true),
            ("spec.nodeName!=", false),
        ] {
            let parsed = FieldSelector::parse(sel).unwrap();
            assert_eq!(parsed.matches(fields(&obj)), want, "{sel}");
        }
    }

    #[test]
    fn renamed_fields_keep_their_values_and_operators() {
        let sel = FieldSelector::parse("regarding.name=web,type!=Normal").unwrap();
        let core = sel.renamed(|f| (f == "regarding.name").then_some("involvedObject.name"));
        assert_eq!(core.to_string(), "involvedObject.name=web,type!=Normal");
        let event = [("involvedObject.name", "web"), ("type", "Warning")];
        assert!(core.matches(fields(&event)));
    }

    #[test]
    fn escapes_round_trip() {
        let sel = FieldSelector::parse(r"metadata.name=a\,b\=c").unwrap();
        assert_eq!(sel.requirements()[0].value(), "a,b=c");
        assert_eq!(FieldSelector::parse(&sel.to_string()).unwrap(), sel);
        assert_eq!(sel.pinned_value("metadata.name"), Some("a,b=c"));
    }

    /// Found by the property tests: spaces at a value's ends are escaped
    /// when printed, and an escaped space is not trimmed when parsed.
    #[test]
    fn spaces_at_the_ends_round_trip() {
        for value in [" in", "in ", " ", "a b", "\t x \t"] {
            let sel = FieldSelector::parse(&format!("f={}", escape(value))).unwrap();
            assert_eq!(sel.requirements()[0].value(), value, "{value:?}");
            assert_eq!(FieldSelector::parse(&sel.to_string()).unwrap(), sel);
        }
        assert_eq!(
            FieldSelector::parse("f = v ").unwrap().requirements()[0].value(),
            "v"
        );
    }

    #[test]
    fn rejects_clauses_without_operator() {
        for bad in ["metadata.name", "a=b,,c=d", "=x"] {
            let err = FieldSelector::parse(bad).expect_err(bad);
            assert!(err.to_string().contains("invalid field selector"), "{err}");
        }
    }
}
