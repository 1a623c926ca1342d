//! The server's modules form floors: each uses only those below it.

use std::collections::BTreeSet;
use std::path::Path;

use windlass_tests::modules::{cycles, graph};

#[test]
fn modules_import_no_cycles_but_the_write_path_recursion() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = graph(&src).expect("read the sources");
    assert!(graph.contains_key("write") && graph.contains_key("admission"));
    // A write's consequences are writes: creating a namespace creates its
    // default ServiceAccount, and a CRD's APIService, through `write.rs`;
    // `system.rs` builds those objects and calls back into `write.rs`.
    let known: BTreeSet<String> = ["system", "write"].map(String::from).into();
    let found = cycles(&graph);
    assert!(
        found.iter().all(|c| *c == known),
        "import cycles among the server's modules: {found:?}"
    );
}
