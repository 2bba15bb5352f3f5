//! torus-2QoS's master spanning tree for multicast (`torus_master_stree`, `osm_torus.c:9117`):
//! every MLID's tree is the part of it that leads to the members.
//!
//! The root is the switch at the middle of each dimension (`find_stree_root`: radix / 2). From
//! it a branch runs each way along x, then from every switch of that x line a branch each way
//! along y, then from every switch of that x-y plane along z (`build_master_stree_branch`).
//! A branch stops at the end of its ring, so no branch crosses a dateline: on a complete torus
//! OpenSM's growth never meets a switch already in the tree, and this is its tree.

use super::build::{Coord, Torus};

/// Each torus switch's branches, by its index in [`Torus::switches`]: the port group toward
/// each child and the child's index, in group order; and the root's index.
pub(super) struct Branches {
    pub root: usize,
    pub children: Vec<Vec<(usize, usize)>>,
}

/// The master tree of `torus`.
pub(super) fn master_tree(torus: &Torus) -> Branches {
    let middle: Coord = torus.radix.map(|r| r / 2);
    let mut children = vec![Vec::new(); torus.switches.len()];
    for (child, sw) in torus.switches.iter().enumerate() {
        let Some((parent, group)) = parent(torus, middle, sw.coord) else {
            continue;
        };
        children[parent].push((group, child));
    }
    for branches in &mut children {
        branches.sort_unstable();
    }
    Branches {
        root: torus.at(middle),
        children,
    }
}

/// The switch one step toward the root from `coord`, z first, then y, then x, and the group of
/// its ports that leads back to `coord`: its negative group `2d` when `coord` is below it in
/// dimension `d`, its positive group `2d + 1` when above; `None` at the root.
fn parent(torus: &Torus, middle: Coord, coord: Coord) -> Option<(usize, usize)> {
    let d = (0..3).rev().find(|&d| coord[d] != middle[d])?;
    let mut up = coord;
    let below = coord[d] < middle[d];
    up[d] = if below { coord[d] + 1 } else { coord[d] - 1 };
    Some((torus.at(up), 2 * d + usize::from(!below)))
}
