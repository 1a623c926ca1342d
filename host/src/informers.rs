//! The host's informers, shared: every plugin asking for the same watch gets
//! the same informer (one list-watch, one cache), and it stops when the last
//! plugin lets go of it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::Semaphore;
use windlass_selector::LabelSelector;

use crate::client::ApiClient;
use crate::contract::Watch;
use crate::discovery::{Discovery, DiscoveryError};
use crate::index::SharedIndex;
use crate::informer::{Informer, InformerConfig, InformerSpec};
use crate::model::{CacheReader, CachedObject, IndexReader, KeyRef, KindRef, ObjectRef, Text};

/// Starts informers on demand and shares them.
pub struct Informers {
    client: ApiClient,
    discovery: Arc<Discovery>,
    config: InformerConfig,
    relists: Arc<Semaphore>,
    running: Mutex<HashMap<InformerSpec, Weak<Informer>>>,
}

impl std::fmt::Debug for Informers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Informers").finish_non_exhaustive()
    }
}

impl Informers {
    /// `max_relists` bounds how many informers list at the same time.
    pub fn new(
        client: ApiClient,
        discovery: Arc<Discovery>,
        config: InformerConfig,
        max_relists: usize,
    ) -> Self {
        Self {
            client,
            discovery,
            config,
            relists: Arc::new(Semaphore::new(max_relists.max(1))),
            running: Mutex::new(HashMap::new()),
        }
    }

    /// The informer for `watch`, started if nobody holds one yet.
    pub async fn get(&self, watch: &Watch) -> Result<Arc<Informer>, DiscoveryError> {
        let resource = self.discovery.resolve(&watch.kind).await?;
        let spec = InformerSpec {
            resource,
            namespace: watch.namespace.clone(),
            label_selector: watch.label_selector.clone(),
            field_selector: watch.field_selector.clone(),
        };
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(informer) = running.get(&spec).and_then(Weak::upgrade) {
            return Ok(informer);
        }
        running.retain(|_, weak| weak.strong_count() > 0);
        let informer = Arc::new(Informer::start(
            self.client.clone(),
            spec.clone(),
            self.config.clone(),
            self.relists.clone(),
        ));
        tracing::info!(informer = %spec, "informer started");
        running.insert(spec, Arc::downgrade(&informer));
        Ok(informer)
    }

    /// Every informer still in use.
    pub fn all(&self) -> Vec<Arc<Informer>> {
        let running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        running.values().filter_map(Weak::upgrade).collect()
    }

    /// Stops every informer, held or not: the host is stopping, and none
    /// may go on watching (and retrying, with a warning a line) a server
    /// that stops next.
    pub fn stop_all(&self) {
        for informer in self.all() {
            informer.stop();
        }
    }
}

/// What one plugin may read: the caches of the informers its manifest asked
/// for, by kind, and its own indexes. This is the plugin's `cache` import.
#[derive(Clone, Default)]
pub struct PluginView {
    informers: Vec<(KindRef, Arc<Informer>)>,
    indexes: Vec<(KindRef, Arc<SharedIndex>)>,
}

impl PluginView {
    pub fn new(informers: Vec<(KindRef, Arc<Informer>)>) -> Self {
        Self {
            informers,
            indexes: Vec::new(),
        }
    }

    /// The same view with the plugin's indexes.
    pub fn with_indexes(mut self, indexes: Vec<(KindRef, Arc<SharedIndex>)>) -> Self {
        self.indexes = indexes;
        self
    }

    /// Every informer the plugin uses.
    pub fn informers(&self) -> impl Iterator<Item = &Arc<Informer>> {
        self.informers.iter().map(|(_, i)| i)
    }

    fn of_kind<'a>(&'a self, kind: &'a KindRef) -> impl Iterator<Item = &'a Arc<Informer>> + 'a {
        self.informers
            .iter()
            .filter(move |(k, _)| k == kind)
            .map(|(_, i)| i)
    }
}

impl CacheReader for PluginView {
    fn holds(&self, kind: &KindRef) -> bool {
        self.informers.iter().any(|(k, _)| k == kind)
    }

    fn index(&self, kind: &KindRef) -> Option<&dyn IndexReader> {
        self.indexes
            .iter()
            .find(|(k, _)| k == kind)
            .map(|(_, i)| i.as_ref() as &dyn IndexReader)
    }

    fn get(&self, r: &ObjectRef) -> Option<Text> {
        self.get_object(r).map(|o| o.text().clone())
    }

    fn get_object(&self, r: &ObjectRef) -> Option<Arc<CachedObject>> {
        let key = KeyRef::new(r.namespace.as_deref(), &r.name);
        let kind = r.kind_ref();
        self.of_kind(&kind)
            .find_map(|i| i.cache().read(|s| s.get(key)))
    }

    fn list(&self, kind: &KindRef, namespace: Option<&str>, selector: &LabelSelector) -> Vec<Text> {
        let mut informers = self.of_kind(kind);
        let Some(first) = informers.next() else {
            return Vec::new();
        };
        let mut objects = first.cache().read(|s| s.list(namespace, selector));
        // Several watches of one kind (different selectors) may overlap:
        // merge their lists once, after reading them all.
        let before = objects.len();
        for other in informers {
            objects.extend(other.cache().read(|s| s.list(namespace, selector)));
        }
        if objects.len() > before {
            objects.sort_by(|a, b| a.key().cmp(&b.key()));
            objects.dedup_by(|a, b| a.key() == b.key());
        }
        objects.into_iter().map(|o| o.text().clone()).collect()
    }
}
