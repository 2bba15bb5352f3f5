//! glibc's `srandom` and `random`, number for number.
//!
//! OpenSM's `scatter_ports` reseeds the C library's generator with `srandom(seed)` before every
//! routing and picks among tied ports with `random()`. OpenSM on Linux links glibc, so the same
//! seed gives the same tables only with glibc's generator: the default TYPE_3 state, an additive
//! lagged Fibonacci generator over 31 words (lags 31 and 3), seeded by the Park-Miller minimal
//! standard generator and stirred 310 times before the first output.

/// The words of TYPE_3 state (glibc's `DEG_3`).
const DEGREE: usize = 31;
/// How far the front pointer leads the rear one (glibc's `SEP_3`).
const SEPARATION: usize = 3;

/// glibc's `random()` after `srandom(seed)`, as its default TYPE_3 state runs.
#[derive(Debug, Clone)]
pub(super) struct GlibcRandom {
    state: [u32; DEGREE],
    front: usize,
    rear: usize,
}

impl GlibcRandom {
    /// The generator `srandom(seed)` leaves.
    pub(super) fn new(seed: u32) -> GlibcRandom {
        // glibc stores the seed in an int32_t state word, so seeds of 2^31 and up are negative,
        // and it replaces 0 (a fixed point of the seeding) with 1.
        let seed = if seed == 0 { 1 } else { seed as i32 };
        let mut state = [0u32; DEGREE];
        let mut word = i64::from(seed);
        state[0] = seed as u32;
        for slot in state.iter_mut().skip(1) {
            // 16807 * word mod (2^31 - 1) by Schrage's method, with C's truncating division,
            // exactly as glibc computes it (a negative seed stays negative one step).
            let (hi, lo) = (word / 127_773, word % 127_773);
            word = 16_807 * lo - 2_836 * hi;
            if word < 0 {
                word += 2_147_483_647;
            }
            *slot = word as u32;
        }
        let mut generator = GlibcRandom {
            state,
            front: SEPARATION,
            rear: 0,
        };
        for _ in 0..10 * DEGREE {
            generator.next();
        }
        generator
    }

    /// The next `random()`: 0 ..= 2^31 - 1.
    pub(super) fn next(&mut self) -> u32 {
        let sum = self.state[self.front].wrapping_add(self.state[self.rear]);
        self.state[self.front] = sum;
        self.front = (self.front + 1) % DEGREE;
        self.rear = (self.rear + 1) % DEGREE;
        sum >> 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first outputs of glibc 2.41 (Debian trixie) after `srandom(seed)`, printed by
    /// python3 -c "import ctypes; c = ctypes.CDLL(None); c.random.restype = ctypes.c_long
    /// [(c.srandom(s), print(s, [c.random() for _ in range(8)])) for s in (1, 7, 42, 2**31 + 1)]"
    const GLIBC: [(u32, [u32; 8]); 4] = [
        (
            1,
            [
                1804289383, 846930886, 1681692777, 1714636915, 1957747793, 424238335, 719885386,
                1649760492,
            ],
        ),
        (
            7,
            [
                1045618677, 1863967299, 1272579899, 461085871, 21961325, 1105564443, 2138782586,
                68574097,
            ],
        ),
        (
            42,
            [
                71876166, 708592740, 1483128881, 907283241, 442951012, 537146758, 1366999021,
                1854614940,
            ],
        ),
        (
            0x8000_0001,
            [
                1081815585, 5219348, 1080917272, 1083470877, 6449426, 1081973922, 11673412, 7991820,
            ],
        ),
    ];

    #[test]
    fn the_outputs_are_glibcs() {
        for (seed, expected) in GLIBC {
            let mut generator = GlibcRandom::new(seed);
            let outputs: Vec<u32> = (0..8).map(|_| generator.next()).collect();
            assert_eq!(outputs, expected, "srandom({seed})");
        }
    }

    #[test]
    fn seed_0_is_seed_1() {
        let mut zero = GlibcRandom::new(0);
        let mut one = GlibcRandom::new(1);
        for _ in 0..40 {
            assert_eq!(zero.next(), one.next());
        }
    }
}
