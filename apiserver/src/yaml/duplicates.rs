//! Keys a YAML body repeats within one mapping, in go-yaml's words (`line
//! 9: key "foo" already set in map`), which kube-apiserver passes on: as a
//! strict decoding error under `fieldValidation=Strict`, as one warning
//! each under `Warn`. `serde_yaml_ng` keeps the last value silently and
//! does not say where a key was, so the body's events are walked again
//! with positions (only for YAML bodies, which kubectl seldom sends).

use std::collections::HashSet;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// One open collection while walking.
enum Frame {
    Sequence,
    Mapping {
        keys: HashSet<String>,
        /// The next node is a key (else a value).
        at_key: bool,
    },
}

#[derive(Default)]
struct Walk {
    stack: Vec<Frame>,
    found: Vec<String>,
}

impl Walk {
    /// A node starts: in a mapping, a key or a value, in turn. Returns
    /// whether it is a key.
    fn node(&mut self) -> bool {
        match self.stack.last_mut() {
            Some(Frame::Mapping { at_key, .. }) => {
                let key = *at_key;
                *at_key = !key;
                key
            }
            _ => false,
        }
    }
}

impl MarkedEventReceiver for Walk {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        match ev {
            Event::Scalar(value, style, _, _) => {
                if self.node()
                    && let Some(Frame::Mapping { keys, .. }) = self.stack.last_mut()
                    && !keys.insert(value.clone())
                    && value != "<<"
                {
                    self.found.push(format!(
                        "line {}: key {} already set in map",
                        mark.line(),
                        go_key(&value, style)
                    ));
                }
            }
            Event::Alias(_) => {
                self.node();
            }
            Event::MappingStart(..) => {
                self.node();
                self.stack.push(Frame::Mapping {
                    keys: HashSet::new(),
                    at_key: true,
                });
            }
            Event::SequenceStart(..) => {
                self.node();
                self.stack.push(Frame::Sequence);
            }
            Event::MappingEnd | Event::SequenceEnd => {
                self.stack.pop();
            }
            _ => {}
        }
    }
}

/// A key as go-yaml prints it (`%#v`): strings quoted, plain scalars that
/// resolve to a bool, a number or null as they are.
fn go_key(value: &str, style: TScalarStyle) -> String {
    let plain = style == TScalarStyle::Plain;
    let bare = matches!(value, "true" | "false" | "null" | "~") || value.parse::<f64>().is_ok();
    if plain && bare {
        value.to_owned()
    } else {
        serde_json::to_string(value).unwrap_or_else(|_| format!("{value:?}"))
    }
}

/// The repeated keys of `body`, in document order; none when it is not
/// UTF-8 or does not parse (the decoder says why).
pub(crate) fn find(body: &[u8]) -> Vec<String> {
    let Ok(text) = std::str::from_utf8(body) else {
        return Vec::new();
    };
    let mut walk = Walk::default();
    match Parser::new_from_str(text).load(&mut walk, true) {
        Ok(()) => walk.found,
        Err(_) => Vec::new(),
    }
}

/// go-yaml's error for them, as kube's decoder wraps it.
pub(crate) fn error_text(found: &[String]) -> String {
    let mut text = String::from("yaml: unmarshal errors:");
    for line in found {
        text.push_str("\n  ");
        text.push_str(line);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_keys_are_found_with_their_lines() {
        // The body of kube's field-validation conformance test: line 9.
        let body = "\napiVersion: x.io/v1\nkind: X\nmetadata:\n  name: a\nspec:\n  unknown: uk1\n  foo: foo1\n  foo: foo2\n  cronSpec: x\n";
        assert_eq!(
            find(body.as_bytes()),
            [r#"line 9: key "foo" already set in map"#]
        );
        assert!(find(b"a: 1\nb: 2\n").is_empty());
        // The same key in sibling list items or nested maps is no repeat.
        assert!(
            find(b"ports:\n- name: a\n  port: 1\n- name: b\n  port: 2\nx:\n  name: c\n").is_empty()
        );
        // A block scalar's lines are not keys.
        assert!(find(b"data:\n  a: |\n    a: 1\n    a: 2\n  b: x\n").is_empty());
        // Inside a list item, in flow style, and every one of them.
        assert_eq!(
            find(b"- a: 1\n  a: 2\n- {b: 1, b: 2}\n"),
            [
                r#"line 2: key "a" already set in map"#,
                r#"line 3: key "b" already set in map"#
            ]
        );
        // Non-string keys as go-yaml prints them; quoted ones stay strings.
        assert_eq!(
            find(b"true: 1\ntrue: 2\n'1': a\n'1': b\n"),
            [
                "line 2: key true already set in map",
                r#"line 4: key "1" already set in map"#
            ]
        );
        assert_eq!(
            error_text(&find(b"a: 1\na: 2\n")),
            "yaml: unmarshal errors:\n  line 2: key \"a\" already set in map"
        );
    }
}
