//! Damage to a MAD on its way, for fault injection: the emulated fabric's fault model and the
//! fault decorator of any transport use the same rule.

use crate::Mad;

/// Cuts a MAD short, or changes 1 to 4 bytes of its common header, as `draw` chooses: called
/// with `n`, it returns a number drawn uniformly from `0..n` (`n` is never 0), so the caller's
/// seeded generator decides and a damaged run can be replayed.
///
/// Only the header: on a real link the ICRC and VCRC drop a packet whose bytes changed, so what
/// reaches an SM damaged is a MAD that a buggy or confused agent built wrong (bad version,
/// class, method, TID, attribute, status). Changing the attribute data instead would hand the
/// SM well-formed lies (a wrong GUID) that no SM can tell from the truth.
pub fn damage(mad: &mut Vec<u8>, mut draw: impl FnMut(u64) -> u64) {
    let len = mad.len() as u64;
    if draw(2) == 0 && len > 0 {
        mad.truncate(draw(len) as usize);
        return;
    }
    let header = len.min(Mad::<&[u8]>::LEN as u64);
    if header == 0 {
        return;
    }
    for _ in 0..=draw(4) {
        let at = draw(header) as usize;
        // 1..=255: the byte always changes.
        mad[at] ^= draw(255) as u8 + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Draws that cycle through `values`, each taken modulo the range asked.
    fn cycling(values: &[u64]) -> impl FnMut(u64) -> u64 + '_ {
        let mut i = 0;
        move |n| {
            i += 1;
            values[(i - 1) % values.len()] % n
        }
    }

    #[test]
    fn a_cut_keeps_fewer_bytes() {
        let mut mad = vec![7; 256];
        damage(&mut mad, cycling(&[0, 100]));
        assert_eq!(mad.len(), 100);
    }

    #[test]
    fn a_flip_changes_only_header_bytes() {
        // One flip (a count draw of 0) at each byte the draw can name, by a range of masks.
        for at in 0..100 {
            let mut mad = vec![0x5a; 256];
            damage(&mut mad, cycling(&[1, 0, at, at * 7 + 3]));
            assert_eq!(mad.len(), 256);
            let changed: Vec<usize> = (0..256).filter(|&i| mad[i] != 0x5a).collect();
            assert_eq!(changed, [at as usize % 24], "draw {at}");
        }
        let mut empty = Vec::new();
        damage(&mut empty, cycling(&[0]));
        assert!(empty.is_empty());
    }
}
