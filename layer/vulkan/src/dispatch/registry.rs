//! Per-object state keyed by the loader's dispatch key (the first pointer-sized word of a
//! dispatchable handle). Queues and command buffers share their device's key, physical devices
//! their instance's, so one map per object kind serves every child handle.

use framescope_core::sync::RwLock;
use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

/// The dispatch key of a dispatchable handle.
///
/// # Safety
/// `raw` must be a live dispatchable Vulkan handle created through the loader.
pub unsafe fn dispatch_key(raw: u64) -> usize {
    // SAFETY: dispatchable handles point at an object whose first word is the loader's
    // dispatch table pointer (loader interface contract).
    unsafe { *(raw as usize as *const usize) }
}

pub struct Registry<T> {
    map: RwLock<Option<HashMap<usize, Arc<T>>>>,
}

impl<T> Registry<T> {
    pub const fn new() -> Self {
        Registry { map: RwLock::new(None) }
    }

    pub fn insert(&self, key: usize, value: Arc<T>) {
        self.map.write().get_or_insert_with(HashMap::default).insert(key, value);
    }

    pub fn get(&self, key: usize) -> Option<Arc<T>> {
        self.map.read().as_ref().and_then(|m| m.get(&key).cloned())
    }

    pub fn remove(&self, key: usize) -> Option<Arc<T>> {
        self.map.write().as_mut().and_then(|m| m.remove(&key))
    }
}
