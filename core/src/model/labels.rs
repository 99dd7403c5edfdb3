//! Debug-label names, interned once per process so samples carry small ids and the app's
//! threads allocate only when a label name is seen for the first time.

use crate::runtime::sync::RwLock;
use std::collections::HashMap;

struct Table {
    ids: HashMap<Box<[u8]>, u32>,
    names: Vec<Box<str>>,
}

static TABLE: RwLock<Option<Table>> = RwLock::new(None);

/// The id of `name` (bytes of the app's label string), interning it on first sight.
pub fn intern(name: &[u8]) -> u32 {
    if let Some(&id) = TABLE.read().as_ref().and_then(|t| t.ids.get(name)) {
        return id;
    }
    let mut guard = TABLE.write();
    let t = guard.get_or_insert_with(|| Table {
        ids: HashMap::new(),
        names: Vec::new(),
    });
    if let Some(&id) = t.ids.get(name) {
        return id;
    }
    let id = t.names.len() as u32;
    t.names.push(String::from_utf8_lossy(name).into());
    t.ids.insert(name.into(), id);
    id
}

/// The label path as `Outer/Inner` (writer thread).
pub fn path_string(ids: &[u32]) -> String {
    let guard = TABLE.read();
    let mut out = String::new();
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            out.push('/');
        }
        match guard.as_ref().and_then(|t| t.names.get(*id as usize)) {
            Some(n) => out.push_str(n),
            None => out.push('?'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn same_name_same_id_and_paths_join_with_slashes() {
        let a = super::intern(b"labels-test-Frame");
        let b = super::intern(b"labels-test-Shadows");
        assert_ne!(a, b);
        assert_eq!(super::intern(b"labels-test-Frame"), a);
        assert_eq!(super::path_string(&[a, b]), "labels-test-Frame/labels-test-Shadows");
    }
}
