//! The shard names of a manifest being extended by a commit or a writer: which names it
//! lists (and where), and the next free name of a prefix, kept as shards are added instead
//! of found again by scanning the manifest for each new shard (a commit of n pending
//! shards costs O(n) lookups, not O(n²)).

use std::collections::HashMap;

use crate::shards::manifest::{Manifest, ShardEntry};
use crate::shards::store::ManifestStore;
use crate::shards::writer::next_index;

/// The names a manifest's shards have, each with its position, and for each prefix asked
/// about one past the highest index of the names `PREFIX-NNNNN.arrow` among them.
#[derive(Debug, Default)]
pub(crate) struct ShardNames {
    listed: HashMap<String, usize>,
    next: HashMap<String, usize>,
}

impl ShardNames {
    /// The names of `manifest`'s shards.
    pub(crate) fn of(manifest: &Manifest) -> Self {
        ShardNames {
            listed: (manifest.shards.iter().enumerate())
                .map(|(i, s)| (s.file.clone(), i))
                .collect(),
            next: HashMap::new(),
        }
    }

    /// The position in the manifest of the shard named `file`, if it is listed.
    pub(crate) fn position(&self, file: &str) -> Option<usize> {
        self.listed.get(file).copied()
    }

    /// Appends `entry` to `manifest`, the manifest these are the names of.
    pub(crate) fn push(&mut self, manifest: &mut Manifest, entry: ShardEntry) {
        if let Some((prefix, index)) = split_name(&entry.file)
            && let Some(next) = self.next.get_mut(prefix)
        {
            *next = (*next).max(index.saturating_add(1));
        }
        self.listed
            .insert(entry.file.clone(), manifest.shards.len());
        manifest.shards.push(entry);
    }

    /// A name for a new shard of `prefix`: `wanted` if free, else `PREFIX-NNNNN.arrow` one
    /// past the highest index listed, skipping names taken in `store`.
    pub(crate) fn free(
        &mut self,
        prefix: &str,
        wanted: Option<&str>,
        store: &impl ManifestStore,
    ) -> String {
        let listed = &self.listed;
        let free = |name: &str| !listed.contains_key(name) && !store.name_taken(name);
        if let Some(name) = wanted.filter(|n| free(n)) {
            return name.to_owned();
        }
        let next = *(self.next.entry(prefix.to_owned()))
            .or_insert_with(|| next_index(listed.keys().map(String::as_str), prefix));
        (next..)
            .map(|i| format!("{prefix}-{i:05}.arrow"))
            .find(|name| free(name))
            .expect("an unbounded range has a free name")
    }
}

/// The prefix and index of a name `PREFIX-NNNNN.arrow` (as [`next_index`] reads them).
fn split_name(file: &str) -> Option<(&str, usize)> {
    let (prefix, index) = file.strip_suffix(".arrow")?.rsplit_once('-')?;
    Some((prefix, index.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shards::store::LocalStore;

    fn entry(file: &str) -> ShardEntry {
        ShardEntry {
            file: file.to_owned(),
            rows: 1,
            batches: 1,
            bytes: 8,
            crc32c: 0,
            columns: Vec::new(),
        }
    }

    #[test]
    fn free_names_follow_the_highest_index_listed_and_skip_taken_ones() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore::new(dir.path());
        let mut manifest = Manifest::default();
        for file in ["w1-00003.arrow", "part-00000.arrow", "w1-x.arrow"] {
            manifest.shards.push(entry(file));
        }
        let mut names = ShardNames::of(&manifest);
        assert_eq!(names.position("part-00000.arrow"), Some(1));
        assert_eq!(
            names.free("w1", Some("w1-00000.arrow"), &store),
            "w1-00000.arrow"
        );
        assert_eq!(
            names.free("w1", Some("w1-00003.arrow"), &store),
            "w1-00004.arrow"
        );
        std::fs::write(dir.path().join("w1-00004.arrow"), b"").unwrap();
        assert_eq!(names.free("w1", None, &store), "w1-00005.arrow");
        names.push(&mut manifest, entry("w1-00005.arrow"));
        assert_eq!(names.free("w1", None, &store), "w1-00006.arrow");
        assert_eq!(names.position("w1-00005.arrow"), Some(3));
        assert_eq!(names.free("new", None, &store), "new-00000.arrow");
    }
}
