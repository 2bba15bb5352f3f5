//! OpenSM's `routing_engine`: an ordered list of engines, each tried until one routes, then
//! minhop (`osm_opensm.c` `setup_routing_engines`, `osm_ucast_mgr.c` `osm_ucast_mgr_process`).
//!
//! The list is split on commas, spaces, tabs and newlines, and each name matched as OpenSM
//! matches it: case-sensitively. A name OpenSM does not know is skipped. A name OpenSM knows but
//! ibqos has no engine for is skipped as an engine that failed would be. `no_fallback` is no
//! engine: it stops the last resort, minhop, after every listed engine failed.

use std::sync::Arc;

use ibqos_qos::VlCount;

use super::dfsssp::{Dfsssp, Sssp};
use super::dnup::DownUp;
use super::dor::Dor;
use super::engine::{Engine, Layering, Routing};
use super::ftree::FatTree;
use super::lash::Lash;
use super::minhop::MinHop;
use super::nue::Nue;
use super::torus::Torus2QoS;
use super::updn::UpDown;
use super::{Routes, RoutingError, RoutingOptions};
use crate::topology::Topology;

/// The engines ibqos has, by the names OpenSM gives them.
pub const ENGINES: [&dyn Engine; 10] = [
    &MINHOP,
    &UPDN,
    &DNUP,
    &FTREE,
    &DOR,
    &LASH,
    &DFSSSP,
    &SSSP,
    &TORUS_2QOS,
    &NUE,
];
static MINHOP: MinHop = MinHop;
static UPDN: UpDown = UpDown;
static DNUP: DownUp = DownUp;
static FTREE: FatTree = FatTree;
static DOR: Dor = Dor;
static LASH: Lash = Lash;
static DFSSSP: Dfsssp = Dfsssp;
static SSSP: Sssp = Sssp;
static TORUS_2QOS: Torus2QoS = Torus2QoS;
static NUE: Nue = Nue;

/// The engines OpenSM 3.3.23 has and ibqos does not (`osm_opensm.c` `routing_modules`).
pub const OPENSM_ONLY_ENGINES: [&str; 1] = ["file"];

/// The list entry that turns the fallback to minhop off.
const NO_FALLBACK: &str = "no_fallback";

/// What one name of the list is.
#[derive(Debug, Clone, Copy)]
pub enum Listed {
    /// An engine ibqos has.
    Engine(&'static dyn Engine),
    /// An engine OpenSM has and ibqos does not: the next one routes in its place.
    OpenSmOnly,
    /// `no_fallback`.
    NoFallback,
    /// No engine: OpenSM logs "cannot find or setup routing engine" and skips it.
    Unknown,
}

/// One name of the list, and where it is in the option's value.
#[derive(Debug, Clone)]
pub struct Entry {
    pub name: String,
    /// Byte offset of the name in the value.
    pub offset: usize,
    pub listed: Listed,
}

/// The engines `routing_engine` lists, in order, and the options they route with.
#[derive(Debug, Clone, Default)]
pub struct EngineList {
    entries: Vec<Entry>,
    options: RoutingOptions,
}

/// Why an engine of the list did not route.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Skipped {
    #[error("OpenSM has no routing engine of this name")]
    Unknown,
    #[error("OpenSM has this routing engine, ibqos does not yet")]
    OpenSmOnly,
    #[error(transparent)]
    Failed(RoutingError),
}

/// One engine of the list that did not route, in the order they were tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub name: String,
    pub skipped: Skipped,
}

/// The routes, what the routing decided beside them, the engine that computed them, and the
/// engines tried before it.
#[derive(Debug, Clone)]
pub struct Routed {
    pub engine: &'static dyn Engine,
    pub routes: Routes,
    pub layering: Arc<dyn Layering>,
    pub attempts: Vec<Attempt>,
}

/// Every engine failed: what each said.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no routing engine could route the fabric: {}", describe(.attempts))]
pub struct Unrouted {
    pub attempts: Vec<Attempt>,
}

fn describe(attempts: &[Attempt]) -> String {
    let each: Vec<String> = attempts
        .iter()
        .map(|a| format!("{}: {}", a.name, a.skipped))
        .collect();
    each.join("; ")
}

impl EngineList {
    /// The list `routing_engine` gives; `None` (unset) and an empty value are OpenSM's default,
    /// minhop alone.
    pub fn parse(value: Option<&str>) -> EngineList {
        let value = value.unwrap_or_default();
        let mut entries = Vec::new();
        let mut start = None;
        let separators = [',', ' ', '\t', '\n'];
        for (at, c) in value.char_indices().chain([(value.len(), ',')]) {
            match (separators.contains(&c), start) {
                (false, None) => start = Some(at),
                (true, Some(from)) => {
                    entries.push(Entry::new(&value[from..at], from));
                    start = None;
                }
                _ => {}
            }
        }
        EngineList {
            entries,
            options: RoutingOptions::default(),
        }
    }

    /// The same list, routing with `options` in place of OpenSM's defaults.
    pub fn with_options(self, options: RoutingOptions) -> EngineList {
        EngineList { options, ..self }
    }

    /// The options every engine of the list routes with.
    pub fn options(&self) -> &RoutingOptions {
        &self.options
    }

    /// The names in the order listed.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The engine that routes in place of entry `index` when it does not: the next engine of
    /// the list that ibqos has, else minhop unless the list says `no_fallback`; `None` for
    /// none. (An engine ibqos has may still fail on the fabric, and pass on again.)
    pub fn fallback_after(&self, index: usize) -> Option<&'static str> {
        let next = self
            .entries
            .iter()
            .skip(index + 1)
            .find_map(|e| match e.listed {
                Listed::Engine(engine) => Some(engine.name()),
                _ => None,
            });
        next.or_else(|| (!self.no_fallback()).then(|| MINHOP.name()))
    }

    /// Whether whichever engine of the list routes, its routing is
    /// [`Unlayered`](super::Unlayered) ([`Engine::is_unlayered`]): minhop, the last resort, is.
    pub fn is_unlayered(&self) -> bool {
        self.entries.iter().all(|e| match e.listed {
            Listed::Engine(engine) => engine.is_unlayered(),
            _ => true,
        })
    }

    /// Whether the list says `no_fallback`: nothing routes when every listed engine failed.
    fn no_fallback(&self) -> bool {
        self.entries
            .iter()
            .any(|e| matches!(e.listed, Listed::NoFallback))
    }

    /// Routes `topo` with the first engine of the list that succeeds on a fabric running
    /// `available` data VLs, then minhop unless the list says `no_fallback`.
    pub fn route(&self, topo: &Topology, available: VlCount) -> Result<Routed, Unrouted> {
        let mut attempts = Vec::new();
        let mut tried_minhop = false;
        for entry in &self.entries {
            let engine = match entry.listed {
                Listed::Engine(engine) => engine,
                Listed::NoFallback => continue,
                Listed::OpenSmOnly | Listed::Unknown => {
                    let skipped = match entry.listed {
                        Listed::Unknown => Skipped::Unknown,
                        _ => Skipped::OpenSmOnly,
                    };
                    attempts.push(Attempt {
                        name: entry.name.clone(),
                        skipped,
                    });
                    continue;
                }
            };
            tried_minhop |= engine.name() == MINHOP.name();
            match try_engine(engine, topo, available, &self.options) {
                Ok(routing) => return Ok(Routed::new(engine, routing, attempts)),
                Err(skipped) => attempts.push(Attempt {
                    name: entry.name.clone(),
                    skipped,
                }),
            }
        }
        // The last resort; minhop failing once fails again on the same fabric.
        if !self.no_fallback() && !tried_minhop {
            match try_engine(&MINHOP, topo, available, &self.options) {
                Ok(routing) => return Ok(Routed::new(&MINHOP, routing, attempts)),
                Err(skipped) => attempts.push(Attempt {
                    name: MINHOP.name().to_owned(),
                    skipped,
                }),
            }
        }
        Err(Unrouted { attempts })
    }
}

/// The routing of one engine, or why it gave none.
fn try_engine(
    engine: &dyn Engine,
    topo: &Topology,
    available: VlCount,
    options: &RoutingOptions,
) -> Result<Routing, Skipped> {
    engine
        .unicast(topo, options, available)
        .map_err(Skipped::Failed)
}

impl Routed {
    fn new(engine: &'static dyn Engine, routing: Routing, attempts: Vec<Attempt>) -> Routed {
        Routed {
            engine,
            routes: routing.routes,
            layering: routing.layering,
            attempts,
        }
    }
}

impl Entry {
    fn new(name: &str, offset: usize) -> Entry {
        let listed = if let Some(engine) = ENGINES.iter().find(|e| e.name() == name) {
            Listed::Engine(*engine)
        } else if OPENSM_ONLY_ENGINES.contains(&name) {
            Listed::OpenSmOnly
        } else if name == NO_FALLBACK {
            Listed::NoFallback
        } else {
            Listed::Unknown
        };
        Entry {
            name: name.to_owned(),
            offset,
            listed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{assign_lids, fat_tree, ring};

    /// A two-level tree of four leaves and two spines: up*/down* leaves the spines' LIDs unset
    /// on the other spine, so its tables differ from minhop's.
    fn small_tree() -> Topology {
        let mut topo = fat_tree(4, 2, 4, 8).unwrap();
        assign_lids(&mut topo, 0).unwrap();
        topo
    }

    fn names(list: &EngineList) -> Vec<(&str, usize)> {
        list.entries()
            .iter()
            .map(|e| (e.name.as_str(), e.offset))
            .collect()
    }

    #[test]
    fn the_list_splits_as_opensm_splits_it() {
        let list = EngineList::parse(Some(" ftree, updn,,minhop\tno_fallback"));
        assert_eq!(
            names(&list),
            [
                ("ftree", 1),
                ("updn", 8),
                ("minhop", 14),
                ("no_fallback", 21)
            ]
        );
        assert!(EngineList::parse(None).entries().is_empty());
        assert!(EngineList::parse(Some(" , ")).entries().is_empty());
    }

    #[test]
    fn names_match_case_sensitively() {
        let list = EngineList::parse(Some("updn,Updn,dnup,file,no_fallback"));
        let kinds: Vec<&str> = list
            .entries()
            .iter()
            .map(|e| match e.listed {
                Listed::Engine(engine) => engine.name(),
                Listed::OpenSmOnly => "opensm only",
                Listed::NoFallback => "no fallback",
                Listed::Unknown => "unknown",
            })
            .collect();
        assert_eq!(
            kinds,
            ["updn", "unknown", "dnup", "opensm only", "no fallback"]
        );
    }

    /// An engine that says it is unlayered routes with [`Unlayered`](super::super::Unlayered),
    /// and a list is unlayered only when each of its engines is.
    #[test]
    fn the_engines_that_say_they_are_unlayered_are() {
        let topo = small_tree();
        let options = RoutingOptions::default();
        let unlayered: Vec<&str> = ENGINES
            .iter()
            .filter(|engine| engine.is_unlayered())
            .map(|engine| engine.name())
            .collect();
        assert_eq!(unlayered, ["minhop", "updn", "dnup", "ftree", "dor"]);
        for engine in ENGINES.iter().filter(|engine| engine.is_unlayered()) {
            let routing = engine.unicast(&topo, &options, VlCount::Eight).unwrap();
            assert_eq!(
                format!("{:?}", routing.layering),
                "Unlayered",
                "{}",
                engine.name()
            );
        }
        assert!(EngineList::parse(Some("ftree,updn")).is_unlayered());
        assert!(EngineList::parse(Some("ftree,file,no_fallback")).is_unlayered());
        assert!(!EngineList::parse(Some("ftree,lash")).is_unlayered());
        assert!(EngineList::parse(None).is_unlayered());
    }

    /// The engine that routed and the names passed over before it.
    fn routed_by(value: &str) -> Result<(&'static str, Vec<String>), Unrouted> {
        let routed = EngineList::parse(Some(value)).route(&small_tree(), VlCount::Eight)?;
        let passed = routed.attempts.iter().map(|a| a.name.clone()).collect();
        Ok((routed.engine.name(), passed))
    }

    #[test]
    fn the_first_engine_that_routes_routes() {
        assert_eq!(routed_by("updn,minhop"), Ok(("updn", vec![])));
        assert_eq!(routed_by("minhop,updn"), Ok(("minhop", vec![])));
        let passed = vec!["file".to_string(), "foo".to_string()];
        assert_eq!(routed_by("file,foo,updn"), Ok(("updn", passed)));
        assert_eq!(routed_by(""), Ok(("minhop", vec![])));
        assert_eq!(routed_by("file"), Ok(("minhop", vec!["file".into()])));
    }

    /// A ring has no root by OpenSM's rule: updn fails and passes to the next engine, or to
    /// minhop, unless the list says `no_fallback`.
    #[test]
    fn updn_without_roots_passes_on() {
        let mut topo = ring(6, 1).unwrap();
        assign_lids(&mut topo, 0).unwrap();
        let route = |value| EngineList::parse(Some(value)).route(&topo, VlCount::Eight);
        let failed = [Attempt {
            name: "updn".into(),
            skipped: Skipped::Failed(RoutingError::NoRoots),
        }];
        for value in ["updn", "updn,dnup"] {
            let routed = route(value).unwrap();
            assert_eq!(routed.attempts, failed, "{value}");
        }
        assert_eq!(route("updn").unwrap().engine.name(), "minhop");
        assert_eq!(route("updn,dnup").unwrap().engine.name(), "dnup");
        assert_eq!(route("updn,no_fallback").unwrap_err().attempts, failed);
    }

    #[test]
    fn no_fallback_leaves_the_fabric_unrouted_when_every_engine_fails() {
        let unrouted = routed_by("no_fallback,file").unwrap_err();
        assert_eq!(
            unrouted.attempts,
            [Attempt {
                name: "file".into(),
                skipped: Skipped::OpenSmOnly,
            }]
        );
        assert_eq!(routed_by("updn,no_fallback"), Ok(("updn", vec![])));
    }

    #[test]
    fn each_engine_computes_its_own_tables() {
        let topo = small_tree();
        let list = |value| EngineList::parse(Some(value));
        let tables = |value| list(value).route(&topo, VlCount::One).unwrap().routes;
        let defaults = RoutingOptions::default();
        let alone = |engine: &dyn Engine| {
            let routing = engine.unicast(&topo, &defaults, VlCount::One);
            routing.unwrap().routes
        };
        assert_eq!(tables("file,updn"), alone(&UPDN));
        assert_eq!(tables("minhop"), alone(&MINHOP));
        assert_eq!(tables("dnup"), alone(&DNUP));
        assert_ne!(tables("updn"), tables("minhop"));
    }

    #[test]
    fn what_routes_in_place_of_each_name() {
        let list = EngineList::parse(Some("file,foo,updn,nue"));
        let fallbacks: Vec<_> = (0..4).map(|i| list.fallback_after(i)).collect();
        assert_eq!(
            fallbacks,
            [Some("updn"), Some("updn"), Some("nue"), Some("minhop")]
        );
        let list = EngineList::parse(Some("file,no_fallback"));
        assert_eq!(list.fallback_after(0), None);
    }

    /// An engine whose routes need four VLs, as a layered engine's might: it fails on fewer.
    #[derive(Debug)]
    struct FourLayers;

    impl Engine for FourLayers {
        fn name(&self) -> &'static str {
            "four-layers"
        }

        fn unicast(
            &self,
            topo: &Topology,
            options: &RoutingOptions,
            vls: VlCount,
        ) -> Result<Routing, RoutingError> {
            if vls < VlCount::Four {
                return Err(RoutingError::TooFewVls {
                    needed: VlCount::Four,
                    available: vls,
                });
            }
            MINHOP.unicast(topo, options, vls)
        }
    }

    #[test]
    fn the_engine_routes_on_the_vls_the_list_is_given() {
        let topo = small_tree();
        assert_eq!(
            try_engine(&FourLayers, &topo, VlCount::Two, &RoutingOptions::default()).err(),
            Some(Skipped::Failed(RoutingError::TooFewVls {
                needed: VlCount::Four,
                available: VlCount::Two,
            }))
        );
        assert!(
            try_engine(
                &FourLayers,
                &topo,
                VlCount::Four,
                &RoutingOptions::default()
            )
            .is_ok()
        );
    }
}
