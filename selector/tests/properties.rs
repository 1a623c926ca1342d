//! Property tests of the selector parsers: any string either parses or is
//! refused with an error (no panic), and what parses prints canonically:
//! the printed form parses back to the same selector and prints the same.
//! A few thousand cases by default; `WINDLASS_PROPTEST_CASES=N` runs N.

use proptest::prelude::*;
use proptest::test_runner::Config;
use windlass_selector::{FieldSelector, LabelSelector};

fn config() -> Config {
    let cases = std::env::var("WINDLASS_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_000);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// Selector-shaped text: keys, values, operators and punctuation, in any order.
fn selector_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            "[a-z0-9]{1,4}",
            prop::sample::select(vec![
                "=",
                "==",
                "!=",
                "!",
                ",",
                " ",
                "(",
                ")",
                " in ",
                " notin ",
                "in",
                ">",
                "<",
                "/",
                ".",
                "-",
                "_",
                "example.com/",
                "metadata.name",
                "\\",
                "é",
                "\t",
            ])
            .prop_map(str::to_owned),
        ],
        0..16,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn label_selectors_parse_or_refuse_and_print_canonically(text in selector_text()) {
        if let Ok(sel) = LabelSelector::parse(&text) {
            let printed = sel.to_string();
            let again = LabelSelector::parse(&printed)
                .unwrap_or_else(|e| panic!("{text:?} printed as {printed:?}: {e}"));
            prop_assert_eq!(&again, &sel);
            prop_assert_eq!(again.to_string(), printed);
        }
    }

    #[test]
    fn field_selectors_parse_or_refuse_and_print_canonically(text in selector_text()) {
        if let Ok(sel) = FieldSelector::parse(&text) {
            let printed = sel.to_string();
            let again = FieldSelector::parse(&printed)
                .unwrap_or_else(|e| panic!("{text:?} printed as {printed:?}: {e}"));
            prop_assert_eq!(&again, &sel);
            prop_assert_eq!(again.to_string(), printed);
        }
    }

    #[test]
    fn arbitrary_strings_never_panic(text in any::<String>()) {
        let _ = LabelSelector::parse(&text);
        let _ = FieldSelector::parse(&text);
    }
}
