//! The server's modules form floors: each uses only those below it.

use std::path::Path;

use windlass_tests::modules::{cycles, graph};

#[test]
fn modules_import_no_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = graph(&src).expect("read the sources");
    assert!(graph.contains_key("write") && graph.contains_key("admission"));
    // A write's consequences are writes (a namespace's default
    // ServiceAccount, a CRD's APIService): `system.rs` makes them and is
    // reached from the write path through `State::follow_up`, wired at
    // start, not through an import.
    let found = cycles(&graph);
    assert!(
        found.is_empty(),
        "import cycles among the server's modules: {found:?}"
    );
}
