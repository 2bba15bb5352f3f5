//! The d-ary min-heap the Dijkstras of DFSSSP and Nue run on, sifting exactly as OpenSM's
//! `cl_heap` (`complib/cl_heap.c`). Which of two equally distant switches leaves the heap first
//! decides which one relaxes a third, so the tables match OpenSM's only with its sift rules:
//! - up: an element passes its parent only on a strictly smaller key;
//! - down: among children of equal key the last one is chosen, and the element moves only
//!   when its key is strictly larger than that child's;
//! - deleting an element (the root, to extract it) moves the last element to its place and
//!   sifts that one down, or up past a larger parent.
//!
//! Nue deletes by the place an item last held, as `cl_heap_delete` does by index, so each item
//! keeps the place cl_heap last told it: a deleted item's is the heap's new length.

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
        self.delete(0)
    }

    /// `cl_heap_delete`: removes the element at place `at` and returns its item, `None` when
    /// `at` is past the end.
    pub(super) fn delete(&mut self, at: usize) -> Option<usize> {
        if at >= self.elements.len() {
            return None;
        }
        let last = self.elements.pop()?;
        let len = self.elements.len();
        if at == len {
            self.position[last.1] = len;
            return Some(last.1);
        }
        let removed = std::mem::replace(&mut self.elements[at], last);
        self.position[removed.1] = len;
        self.position[last.1] = at;
        if at == 0 {
            self.down(0);
        } else {
            let parent = self.elements[(at - 1) / self.arity].0;
            if parent < last.0 {
                self.down(at);
            } else if parent > last.0 {
                self.up(at);
            }
        }
        Some(removed.1)
    }

    /// The place `item` last held: where it is while in the heap, the heap's length at the
    /// time it left otherwise (`heap_index` in OpenSM's callbacks).
    pub(super) fn position(&self, item: usize) -> usize {
        self.position[item]
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
    /// The deleted element's place goes to the last one, which rises past a larger parent; the
    /// deleted item is told the heap's new length, as cl_heap tells it.
    #[test]
    fn a_deleted_place_takes_the_last_element_up_or_down() {
        let keys = [1u64, 7, 6, 7, 8, 9, 9, 9, 9, 2];
        let mut heap = Heap::new(4, keys.len());
        for (item, key) in keys.iter().enumerate() {
            heap.insert(*key, item);
        }
        // Item 9 (key 2) rose to place 2, and item 2 (key 6) went down to place 9.
        assert_eq!((heap.position(9), heap.position(2)), (2, 9));
        // Item 5 sits at place 5, under place 1 (item 1, key 7): item 2 takes place 5, then
        // passes its parent.
        assert_eq!(heap.delete(5), Some(5));
        assert_eq!(heap.position(5), 9);
        assert_eq!((heap.position(2), heap.position(1)), (1, 5));
        assert_eq!(heap.delete(9), None);
        let out: Vec<u64> = drain(&mut heap).iter().map(|&i| keys[i]).collect();
        assert_eq!(out, [1, 2, 6, 7, 7, 8, 9, 9, 9]);
    }
}
