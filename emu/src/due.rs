//! What an emulated fabric holds until it is due: answers and traps on their way, each with the
//! emulated time it arrives.

use std::collections::BTreeMap;

/// Items by the emulated time (ns) they are due; items due at the same time leave in the order
/// they were pushed.
#[derive(Debug, Clone)]
pub struct DueQueue<T> {
    items: BTreeMap<(u64, u64), T>,
    pushed: u64,
}

impl<T> Default for DueQueue<T> {
    fn default() -> Self {
        DueQueue {
            items: BTreeMap::new(),
            pushed: 0,
        }
    }
}

impl<T> DueQueue<T> {
    /// Holds `item` until `at_ns`.
    pub fn push(&mut self, at_ns: u64, item: T) {
        self.pushed += 1;
        self.items.insert((at_ns, self.pushed), item);
    }

    /// When the next item is due.
    pub fn next_ns(&self) -> Option<u64> {
        self.items.first_key_value().map(|((at_ns, _), _)| *at_ns)
    }

    /// Keeps only the items `keep` accepts (the rest are lost on their way).
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        self.items.retain(|_, item| keep(item));
    }

    /// The next item and its time, if it is due by `by_ns`.
    pub fn pop_due(&mut self, by_ns: u64) -> Option<(u64, T)> {
        let entry = self.items.first_entry()?;
        let at_ns = entry.key().0;
        (at_ns <= by_ns).then(|| (at_ns, entry.remove()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_leave_by_time_then_in_push_order() {
        let mut queue = DueQueue::default();
        queue.push(20, "late");
        queue.push(10, "first");
        queue.push(10, "second");
        assert_eq!(queue.next_ns(), Some(10));
        assert_eq!(queue.pop_due(9), None);
        assert_eq!(queue.pop_due(15), Some((10, "first")));
        assert_eq!(queue.pop_due(15), Some((10, "second")));
        assert_eq!(queue.pop_due(15), None);
        assert_eq!(queue.pop_due(20), Some((20, "late")));
        assert_eq!(queue.next_ns(), None);
    }

    #[test]
    fn retain_drops_what_it_does_not_keep_and_keeps_the_order() {
        let mut queue = DueQueue::default();
        queue.push(10, 1);
        queue.push(10, 2);
        queue.push(5, 3);
        queue.retain(|item| *item != 3);
        assert_eq!(queue.pop_due(10), Some((10, 1)));
        assert_eq!(queue.pop_due(10), Some((10, 2)));
        assert_eq!(queue.pop_due(10), None);
    }
}
