//! The host's modules form floors (see docs/architecture.md, "The house"):
//! each uses only those below it.

use std::path::Path;

use windlass_tests::modules::{cycles, graph};

#[test]
fn modules_import_no_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = graph(&src).expect("read the sources");
    assert!(graph.contains_key("model") && graph.contains_key("writer"));
    let found = cycles(&graph);
    assert!(
        found.is_empty(),
        "import cycles among the host's modules: {found:?}"
    );
}
