//! Table tests of `InterPodAffinity`.
