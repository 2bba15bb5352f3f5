//! The d-ary min-heap DFSSSP's Dijkstra runs on, sifting exactly as OpenSM's `cl_heap`
//! (`complib/cl_heap.c`). Which of two equally distant switches leaves the heap first decides
//! which one relaxes a third, so the tables match OpenSM's only with its sift rules:
//! - up: an element passes its parent only on a strictly smaller key;
//! - down: among children of equal key the last one is chosen, and the element moves only
//!   when its key is strictly larger than that child's;
//! - extracting the root moves the last element to the root and sifts it down.

/// A min-heap of `(key, item)` that knows where each item is, so a key can change in place.
#[derive(Debug)]
pub(super) struct Heap {
    arity: usize,
    elements: Vec<(u64, usize)>,
    /// Where each item sits in `elements` (meaningful only while it is in the heap).
    position: Vec<usize>,
}

impl Heap {
    /// An empty heap of `arity` children per element, for items `0..items`.
    pub(super) fn new(arity: usize, items: usize) -> Heap {
        Heap {
            arity,
            elements: Vec::with_capacity(items),
            position: vec![0; items],
        }
    }

    /// `cl_heap_insert`: appends and sifts up.
    pub(super) fn insert(&mut self, key: u64, item: usize) {
        self.elements.push((key, item));
        let at = self.elements.len() - 1;
        self.position[item] = at;
        self.up(at);
    }

    /// `cl_heap_modify_key` on the element holding `item`.
    pub(super) fn modify_key(&mut self, item: usize, key: u64) {
        let at = self.position[item];
        let old = std::mem::replace(&mut self.elements[at].0, key);
        if key < old {
            self.up(at);
        } else if key > old {
            self.down(at);
        }
    }

    /// `cl_heap_extract_root`: the item of least key, `None` when empty.
    pub(super) fn extract_root(&mut self) -> Option<usize> {
        let last = self.elements.pop()?;
        if self.elements.is_empty() {
            return Some(last.1);
        }
        let root = std::mem::replace(&mut self.elements[0], last);
        self.position[last.1] = 0;
        self.down(0);
        Some(root.1)
    }

    fn place(&mut self, at: usize, element: (u64, usize)) {
        self.elements[at] = element;
        self.position[element.1] = at;
    }

    fn up(&mut self, at: usize) {
        let moving = self.elements[at];
        let mut hole = at;
        while hole > 0 {
            let parent = (hole - 1) / self.arity;
            if moving.0 >= self.elements[parent].0 {
                break;
            }
            self.place(hole, self.elements[parent]);
            hole = parent;
        }
        self.place(hole, moving);
    }

    fn down(&mut self, at: usize) {
        let moving = self.elements[at];
        let len = self.elements.len();
        let mut hole = at;
        while hole * self.arity + 1 < len {
            let first = hole * self.arity + 1;
            let mut least = first;
            for child in first + 1..(first + self.arity).min(len) {
                if self.elements[child].0 <= self.elements[least].0 {
                    least = child;
                }
            }
            if moving.0 <= self.elements[least].0 {
                break;
            }
            self.place(hole, self.elements[least]);
            hole = least;
        }
        self.place(hole, moving);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(heap: &mut Heap) -> Vec<usize> {
        std::iter::from_fn(|| heap.extract_root()).collect()
    }

    /// Equal keys leave in cl_heap's order, not in insertion order: after the root goes, the
    /// last element is sifted down past the last of the equal children.
    #[test]
    fn equal_keys_leave_in_cl_heaps_order() {
        let mut heap = Heap::new(4, 7);
        for item in 0..7 {
            heap.insert(5, item);
        }
        // [0 1 2 3 4 5 6]: 0 leaves, 6 goes to the root and stays (not larger than a child);
        // then 6 leaves, 5 goes to the root, and so on from the back.
        assert_eq!(drain(&mut heap), [0, 6, 5, 4, 3, 2, 1]);
    }

    #[test]
    fn a_lowered_key_rises_past_equal_keys_only_when_smaller() {
        let mut heap = Heap::new(4, 6);
        for item in 0..6 {
            heap.insert(10, item);
        }
        heap.modify_key(5, 3);
        heap.modify_key(2, 3);
        heap.modify_key(4, 7);
        // 5 rises to the root; 2 (key 3) does not pass it. The keys of 10 then leave from
        // the back of the array, the last of equal children chosen each time.
        assert_eq!(drain(&mut heap), [5, 2, 4, 3, 1, 0]);
    }

    #[test]
    fn keys_leave_in_order() {
        let keys = [9u64, 3, 7, 3, 1, 8, 2, 6, 5, 4, 0, 7];
        let mut heap = Heap::new(4, keys.len());
        for (item, key) in keys.iter().enumerate() {
            heap.insert(*key, item);
        }
        let out: Vec<u64> = drain(&mut heap).iter().map(|&i| keys[i]).collect();
        let mut sorted = keys.to_vec();
        sorted.sort();
        assert_eq!(out, sorted);
    }
}
