//! Table tests of `PodTopologySpread`.
