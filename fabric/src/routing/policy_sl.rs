//! What the routing engines do with the SL a configuration chooses for a path: the facts
//! `ibqos check`, `ibqos plan` and the SM warn from when a site's QoS levels cannot survive its
//! engine.
//!
//! OpenSM asks the engine that routed for each PathRecord's SL, giving it the SL the policy, a
//! partition's `sl=` or the default chose as a hint (`path_sl`, `osm_sa_path_record.c:810-831`).
//! The engines that break credit loops with VL layers answer with their layer, whatever the
//! hint; torus-2QoS keeps the hint's bit 3 as its QoS level.

/// What becomes of the SL a configuration chose, once the engine's `path_sl` has spoken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicySl {
    /// The engine has no `path_sl` (minhop, updn, dnup, ftree, dor, sssp, file), or it is Nue
    /// on one VL, which answers with the hint.
    Kept,
    /// LASH, DFSSSP and Nue on more than one VL answer with their layer's SL: each SL is a VL
    /// layer, and the SL2VL tables must keep the layers apart.
    Layered,
    /// torus-2QoS keeps bit 3 of the hint (its two QoS levels) and sets bits 0-2 from the
    /// path's datelines (`torus_path_sl`).
    Bit3Kept,
}

impl PolicySl {
    /// What the engine OpenSM names `engine` does with the chosen SL. Nue spends more than one
    /// VL only with qos on, `nue_max_num_vls` other than 1 (0 is "all") and more than one data VL
    /// on the switch ports: `nue_layered`.
    pub fn of(engine: &str, nue_layered: bool) -> PolicySl {
        match engine {
            "lash" | "dfsssp" => PolicySl::Layered,
            "nue" if nue_layered => PolicySl::Layered,
            "torus-2QoS" => PolicySl::Bit3Kept,
            _ => PolicySl::Kept,
        }
    }

    /// What a path chosen at `sl` can still tell apart: nothing when the engine replaces it,
    /// its bit 3 under torus-2QoS, all of it otherwise.
    pub fn surviving(self, sl: u8) -> Option<u8> {
        match self {
            PolicySl::Kept => Some(sl),
            PolicySl::Layered => None,
            PolicySl::Bit3Kept => Some(sl & 0x8),
        }
    }

    /// Whether a path chosen at `sl` reaches the fabric on another SL.
    pub fn replaces(self, sl: u8) -> bool {
        self.surviving(sl) != Some(sl)
    }
}

/// The data VLs torus-2QoS needs on every switch port linked to a switch (`verify_setup`,
/// `osm_torus.c:7010`) to route at all, and what becomes of it below.
pub const TORUS_ROUTES: (u8, &str) = (
    2,
    "it does not route (ERR 4E48), and the next engine routes in its place",
);

/// The data VLs torus-2QoS needs on every switch port linked to a switch for each of its
/// features: below one, OpenSM warns and routes without it.
pub const TORUS_FEATURES: [(u8, &str); 2] = [
    (
        4,
        "it cannot route around a failed switch without risking a credit loop",
    ),
    (8, "it has one QoS level, not two: SL bit 3 is lost"),
];

/// The data VLs torus-2QoS needs on every CA and router port to keep its two QoS levels on
/// separate VLs there: below, OpenSM warns and routes all the same.
pub const TORUS_ENDPORT_FEATURE: (u8, &str) = (
    2,
    "its two QoS levels share one VL on the links to end ports",
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_engine_keeps_replaces_or_cuts_the_chosen_sl() {
        let fate = |engine, nue_layered| PolicySl::of(engine, nue_layered).surviving(13);
        assert_eq!(fate("minhop", true), Some(13));
        assert_eq!(fate("dor", true), Some(13));
        assert_eq!(fate("lash", false), None);
        assert_eq!(fate("dfsssp", false), None);
        assert_eq!(fate("nue", true), None);
        assert_eq!(fate("nue", false), Some(13));
        assert_eq!(fate("torus-2QoS", false), Some(8));
        assert!(PolicySl::Bit3Kept.replaces(3) && !PolicySl::Bit3Kept.replaces(8));
        assert!(PolicySl::Layered.replaces(0) && !PolicySl::Kept.replaces(3));
    }
}
