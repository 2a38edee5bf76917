//! The dynamic table (RFC 7541 §2.3.2, §4), shared by the encoder and the
//! decoder: a FIFO of fields, newest first in indexing, whose size (name +
//! value + 32 per entry) never exceeds its maximum.
//!
//! All names and values live back to back in one byte buffer, oldest first,
//! with a queue of (offset, lengths): inserting copies into the buffer
//! instead of allocating per entry. Eviction only drops the front of the
//! queue; the dead bytes it leaves at the front of the buffer are dropped
//! when they outweigh the live ones, so each byte is moved at most about
//! once in its life and the buffer holds less than twice the maximum size.

use std::collections::VecDeque;

/// Bytes RFC 7541 §4.1 counts per entry on top of its name and value.
pub(crate) const ENTRY_OVERHEAD: usize = 32;

/// The size of an entry (RFC 7541 §4.1).
pub(crate) fn entry_size(name: &[u8], value: &[u8]) -> usize {
    name.len() + value.len() + ENTRY_OVERHEAD
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Offset of the name in `Table::bytes`; the value follows it.
    start: usize,
    name_len: usize,
    value_len: usize,
}

impl Entry {
    fn size(&self) -> usize {
        self.name_len + self.value_len + ENTRY_OVERHEAD
    }
}

#[derive(Debug)]
pub(crate) struct Table {
    /// Names and values, oldest first, after a dead prefix of evicted bytes.
    bytes: Vec<u8>,
    /// Oldest at the front.
    entries: VecDeque<Entry>,
    /// Sum of the entries' sizes.
    size: usize,
    max_size: usize,
    /// Entries inserted since the table was created: the id of the next
    /// one. Ids let the encoder remember entries across insertions.
    inserted: u64,
}

impl Table {
    pub(crate) fn new(max_size: usize) -> Table {
        Table {
            bytes: Vec::new(),
            entries: VecDeque::new(),
            size: 0,
            max_size,
            inserted: 0,
        }
    }

    pub(crate) fn max_size(&self) -> usize {
        self.max_size
    }

    /// The number of entries.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The name and value at `index`, 0 being the newest entry (HPACK index
    /// 62).
    pub(crate) fn get(&self, index: usize) -> Option<(&[u8], &[u8])> {
        let position = self.entries.len().checked_sub(index)?.checked_sub(1)?;
        Some(self.field(self.entries[position]))
    }

    /// The id the next inserted entry will get.
    pub(crate) fn next_id(&self) -> u64 {
        self.inserted
    }

    /// The index (as in [`get`](Self::get)), name and value of the entry
    /// with this id, if it is still in the table.
    pub(crate) fn get_id(&self, id: u64) -> Option<(usize, &[u8], &[u8])> {
        let age = self.inserted.checked_sub(id)?.checked_sub(1)?;
        let index = usize::try_from(age).ok()?;
        let (name, value) = self.get(index)?;
        Some((index, name, value))
    }

    /// Changes the maximum size, evicting entries to fit. `evicted` sees
    /// each evicted entry's id, name and value.
    pub(crate) fn set_max_size(&mut self, max_size: usize, evicted: impl FnMut(u64, &[u8], &[u8])) {
        self.max_size = max_size;
        self.evict_to(max_size, evicted);
        let enough = max_size.saturating_mul(2);
        if self.bytes.capacity() > enough {
            // Shrunk: give back what it no longer needs.
            self.compact();
            self.bytes.shrink_to(enough);
        }
    }

    /// Inserts a field as the newest entry, evicting the oldest ones to make
    /// room. A field larger than the maximum size empties the table and is
    /// not inserted (§4.4); returns whether it was.
    pub(crate) fn insert(
        &mut self,
        name: &[u8],
        value: &[u8],
        evicted: impl FnMut(u64, &[u8], &[u8]),
    ) -> bool {
        let size = entry_size(name, value);
        if size > self.max_size {
            self.evict_to(0, evicted);
            return false;
        }
        self.evict_to(self.max_size - size, evicted);
        if self.dead() >= self.bytes.len() - self.dead() {
            self.compact();
        }
        let start = self.bytes.len();
        self.bytes.extend_from_slice(name);
        self.bytes.extend_from_slice(value);
        self.entries.push_back(Entry {
            start,
            name_len: name.len(),
            value_len: value.len(),
        });
        self.size += size;
        self.inserted += 1;
        true
    }

    /// Evicts the oldest entries until the size is at most `limit`.
    fn evict_to(&mut self, limit: usize, mut evicted: impl FnMut(u64, &[u8], &[u8])) {
        while self.size > limit {
            let Some(entry) = self.entries.pop_front() else {
                break;
            };
            let id = self.inserted - self.entries.len() as u64 - 1;
            let (name, value) = self.field(entry);
            evicted(id, name, value);
            self.size -= entry.size();
        }
    }

    fn field(&self, entry: Entry) -> (&[u8], &[u8]) {
        let name_end = entry.start + entry.name_len;
        let bytes = &self.bytes[entry.start..name_end + entry.value_len];
        bytes.split_at(entry.name_len)
    }

    /// Length of the evicted bytes at the front of the buffer.
    fn dead(&self) -> usize {
        self.entries.front().map_or(self.bytes.len(), |e| e.start)
    }

    /// Drops the evicted bytes at the front of the buffer.
    fn compact(&mut self) {
        let dead = self.dead();
        if dead == 0 {
            return;
        }
        self.bytes.drain(..dead);
        for entry in &mut self.entries {
            entry.start -= dead;
        }
    }
}

/// For tests: what the codec itself does not need to know.
#[cfg(test)]
impl Table {
    pub(super) fn size(&self) -> usize {
        self.size
    }

    /// The buffer's length, for tests of its bound.
    pub(super) fn buffer_len(&self) -> usize {
        self.bytes.len()
    }

    /// All entries, newest first.
    pub(super) fn fields(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        (0..self.len())
            .filter_map(|i| self.get(i))
            .map(|(n, v)| (n.to_vec(), v.to_vec()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insert(table: &mut Table, name: &str, value: &str) -> bool {
        table.insert(name.as_bytes(), value.as_bytes(), |_, _, _| {})
    }

    fn fields(table: &Table) -> Vec<(String, String)> {
        table
            .fields()
            .into_iter()
            .map(|(n, v)| (String::from_utf8(n).unwrap(), String::from_utf8(v).unwrap()))
            .collect()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|&(n, v)| (n.into(), v.into())).collect()
    }

    #[test]
    fn newest_first_and_evicts_oldest() {
        // Each entry is 1 + 1 + 32 = 34 bytes: three fit in 102.
        let mut table = Table::new(102);
        assert!(insert(&mut table, "a", "1"));
        assert!(insert(&mut table, "b", "2"));
        assert!(insert(&mut table, "c", "3"));
        assert_eq!(table.size(), 102);
        assert_eq!(fields(&table), pairs(&[("c", "3"), ("b", "2"), ("a", "1")]));
        assert_eq!(table.get(3), None);

        let mut gone = Vec::new();
        table.insert(b"d", b"4", |id, n, v| {
            gone.push((id, n.to_vec(), v.to_vec()))
        });
        assert_eq!(gone, [(0, b"a".to_vec(), b"1".to_vec())]);
        assert_eq!(fields(&table), pairs(&[("d", "4"), ("c", "3"), ("b", "2")]));
        assert_eq!(table.size(), 102);
    }

    #[test]
    fn ids_follow_entries() {
        let mut table = Table::new(102);
        for name in ["a", "b", "c", "d"] {
            insert(&mut table, name, "");
        }
        assert_eq!(table.next_id(), 4);
        assert_eq!(table.get_id(0), None);
        assert_eq!(table.get_id(1), Some((2, &b"b"[..], &b""[..])));
        assert_eq!(table.get_id(3), Some((0, &b"d"[..], &b""[..])));
        assert_eq!(table.get_id(4), None);
        assert_eq!(table.get_id(u64::MAX), None);
    }

    #[test]
    fn too_large_entry_empties_the_table() {
        let mut table = Table::new(100);
        insert(&mut table, "a", "1");
        assert!(!insert(&mut table, "name", &"x".repeat(100)));
        assert_eq!((table.len(), table.size()), (0, 0));
        // An entry of exactly the maximum size fits.
        assert!(insert(&mut table, "n", &"x".repeat(67)));
        assert_eq!((table.len(), table.size()), (1, 100));
    }

    #[test]
    fn set_max_size_evicts() {
        let mut table = Table::new(200);
        for name in ["a", "b", "c", "d", "e"] {
            insert(&mut table, name, "v");
        }
        let mut evicted = 0;
        table.set_max_size(70, |_, _, _| evicted += 1);
        assert_eq!(evicted, 3);
        assert_eq!(fields(&table), pairs(&[("e", "v"), ("d", "v")]));
        table.set_max_size(0, |_, _, _| {});
        assert_eq!((table.len(), table.size()), (0, 0));
        assert!(!insert(&mut table, "a", ""));
        table.set_max_size(4096, |_, _, _| {});
        assert!(insert(&mut table, "a", ""));
    }

    #[test]
    fn buffer_stays_bounded_and_entries_intact() {
        let mut table = Table::new(300);
        let mut expected: Vec<(String, String)> = Vec::new();
        for i in 0..2000usize {
            let name = format!("n{}", i % 7);
            let value = "v".repeat(i * 31 % 120);
            insert(&mut table, &name, &value);
            expected.insert(0, (name, value));
            let mut size = 0;
            let live = expected
                .iter()
                .take_while(|(n, v)| {
                    size += n.len() + v.len() + ENTRY_OVERHEAD;
                    size <= 300
                })
                .count();
            expected.truncate(live);
            assert_eq!(fields(&table), expected);
            assert!(table.size() <= 300);
            assert!(table.buffer_len() <= 2 * 300, "{}", table.buffer_len());
        }
    }
}
