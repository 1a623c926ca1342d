//! Conversions between `Object` and the typed structs of k8s-openapi
//! (cargo feature `k8s-openapi`).

use k8s_openapi::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{Error, KindRef, Object};

impl KindRef {
    /// The kind of a k8s-openapi resource type, e.g. `KindRef::of::<Pod>()`.
    pub fn of<K: Resource>() -> Self {
        KindRef::new(K::API_VERSION, K::KIND)
    }
}

impl Object {
    /// Converts to a typed resource, checking `apiVersion` and `kind`.
    pub fn to_resource<K: Resource + DeserializeOwned>(&self) -> Result<K, Error> {
        if !self.is(K::API_VERSION, K::KIND) {
            return Err(Error::permanent(format!(
                "expected {} {}, got {} {}",
                K::API_VERSION,
                K::KIND,
                self.api_version(),
                self.kind()
            )));
        }
        self.to_typed()
    }

    /// Converts from a typed resource (its JSON carries `apiVersion` and `kind`).
    pub fn from_resource<K: Resource + Serialize>(resource: &K) -> Result<Self, Error> {
        let mut obj = Self::from_serialize(resource)?;
        if obj.api_version().is_empty() {
            obj.set("apiVersion", K::API_VERSION);
        }
        if obj.kind().is_empty() {
            obj.set("kind", K::KIND);
        }
        Ok(obj)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;

    use super::*;

    #[test]
    fn round_trip() {
        let obj = Object::new("v1", "Pod")
            .with_name("p")
            .with_namespace("default")
            .with("spec.containers", serde_json::json!([{"name": "c"}]));
        let pod: Pod = obj.to_resource().unwrap();
        assert_eq!(pod.metadata.name.as_deref(), Some("p"));
        let back = Object::from_resource(&pod).unwrap();
        assert!(back.is("v1", "Pod"));
        assert_eq!(back.get_str("spec.containers.0.name"), Some("c"));
        assert_eq!(KindRef::of::<Pod>(), KindRef::new("v1", "Pod"));
        let cm = Object::new("v1", "ConfigMap");
        assert!(cm.to_resource::<Pod>().is_err());
    }
}
