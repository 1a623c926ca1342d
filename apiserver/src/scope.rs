//! What a write is addressed to (`Req`): the resource, the version the
//! client spoke, the namespace, and whether it is a dry run. Every step of
//! the write path (defaults, admission, validation, the write itself)
//! takes it.

use crate::resources::Resource;
use crate::status::Target;

/// What a write is addressed to.
#[derive(Debug, Clone)]
pub(crate) struct Req<'a> {
    pub(crate) res: &'a Resource,
    pub(crate) version: &'a str,
    /// Empty for cluster-scoped resources.
    pub(crate) ns: &'a str,
    pub(crate) dry_run: bool,
    /// The subresource written through (`binding`, `ephemeralcontainers`),
    /// empty for the object itself; what an update may change depends on it.
    pub(crate) sub: &'a str,
}

impl<'a> Req<'a> {
    pub(crate) fn target(&self, name: &'a str) -> Target<'a> {
        Target {
            group: &self.res.group,
            resource: &self.res.plural,
            name,
        }
    }
}
