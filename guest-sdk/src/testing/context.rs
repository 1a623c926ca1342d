//! The thread-local link between a running `Harness` call and the native
//! versions of the `cache` reads, `instance::settings` and `log::log`.

use std::cell::RefCell;
use std::rc::Rc;

use super::State;
use crate::log::Level;
use crate::{Error, KindRef, Object, ObjectRef};

thread_local! {
    static CURRENT: RefCell<Option<Rc<State>>> = const { RefCell::new(None) };
}

/// Makes `state` the current harness until dropped (also on panic).
pub(crate) struct Enter(Option<Rc<State>>);

impl Enter {
    pub(crate) fn new(state: &Rc<State>) -> Self {
        Enter(CURRENT.with(|c| c.replace(Some(Rc::clone(state)))))
    }
}

impl Drop for Enter {
    fn drop(&mut self) {
        let prev = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = prev);
    }
}

fn with_state<T>(f: impl FnOnce(&State) -> Result<T, Error>) -> Result<T, Error> {
    let state = CURRENT.with(|c| c.borrow().clone());
    match state {
        Some(s) => f(&s),
        None => Err(Error::permanent(
            "windlass_sdk::cache is only available inside the windlass host or a \
             windlass_sdk::testing::Harness call",
        )),
    }
}

pub(crate) fn cache_get(r: &ObjectRef) -> Result<Option<Object>, Error> {
    with_state(|s| {
        s.check_read(&r.api_version, &r.kind)?;
        Ok(s.store.borrow().get(r).map(super::as_sent))
    })
}

pub(crate) fn cache_list(
    kind: &KindRef,
    namespace: Option<&str>,
    label_selector: Option<&str>,
) -> Result<Vec<Object>, Error> {
    with_state(|s| {
        s.check_read(&kind.api_version, &kind.kind)?;
        s.list(kind, namespace, label_selector)
    })
}

pub(crate) fn log(level: Level, message: &str) {
    eprintln!("[plugin {level:?}] {message}");
    let state = CURRENT.with(|c| c.borrow().clone());
    if let Some(s) = state {
        s.logs.borrow_mut().push((level, message.to_owned()));
    }
}

pub(crate) fn cache_lookup(kind: &KindRef, key: &str) -> Result<Vec<Vec<u8>>, Error> {
    with_state(|s| {
        s.check_indexed(kind)?;
        Ok(s.entries(kind)
            .into_iter()
            .filter(|(_, e)| e.keys.iter().any(|k| k == key))
            .map(|(_, e)| e.summary)
            .collect())
    })
}

pub(crate) fn cache_lookup_objects(kind: &KindRef, key: &str) -> Result<Vec<Object>, Error> {
    with_state(|s| {
        s.check_indexed(kind)?;
        Ok(s.entries(kind)
            .into_iter()
            .filter(|(_, e)| e.keys.iter().any(|k| k == key))
            .map(|(o, _)| o)
            .collect())
    })
}

pub(crate) fn cache_totals(kind: &KindRef, keys: &[&str]) -> Result<Vec<Vec<i64>>, Error> {
    with_state(|s| {
        s.check_indexed(kind)?;
        let entries = s.entries(kind);
        Ok(keys
            .iter()
            .map(|key| {
                let mut sums: Vec<i64> = Vec::new();
                for (_, e) in entries
                    .iter()
                    .filter(|(_, e)| e.keys.iter().any(|k| k == key))
                {
                    if sums.len() < e.amounts.len() {
                        sums.resize(e.amounts.len(), 0);
                    }
                    for (sum, a) in sums.iter_mut().zip(&e.amounts) {
                        *sum = sum.saturating_add(*a);
                    }
                }
                sums
            })
            .collect())
    })
}

pub(crate) fn settings() -> Option<String> {
    CURRENT.with(|c| c.borrow().as_ref().and_then(|s| s.settings.clone()))
}
