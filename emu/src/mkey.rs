//! M_Key protection (IBA 14.2.4): which SMPs an SMA answers when it holds a management key, and
//! the lease that gives a fabric back to a new SM when the one that knew the keys is gone.
//!
//! The key that governs an SMP is in the PortInfo of the port the SMP arrives at on a CA or
//! router, and of port 0 on a switch (its management port). An SMP passes if that M_Key is 0 or
//! the SMP carries it. Otherwise M_KeyProtectBits decide (IBA 14.2.4.1): at level 0 a Get is
//! answered in full, at level 1 too but with PortInfo.M_Key reading 0, and at levels 2 and 3 a
//! Get fails like a Set or a TrapRepress. The Linux SMAs that implement the check in software
//! (qib, hfi1 `check_mkey`) and OpenSM's man page (level 3 "identical to 2, maintained for
//! backwards compatibility") treat 3 as 2, and so does this one.
//!
//! A failed check is an M_Key violation. The SMP is dropped with no answer, and the port's
//! M_KeyViolations counts it (up to 0xFFFF). A lease of M_KeyLeasePeriod seconds starts unless one
//! is running or the period is 0. When a lease runs out, the port's protect bits go back to 0, so a
//! new SM can read the key. Only an SMP that carries the valid key stops the lease (C14-19). A Get
//! that a lower protection level lets through with a wrong key does not (C14-17, as the Linux qib
//! fix "M_Key lease timeout handling" reads them).
//!
//! Lease time is the emulated time of [`Emulator::advance_to`] (which [`Emulator::exchange`]
//! calls): a lease starts at the latest time the emulator was advanced to and ends only when it
//! is advanced past its end.
//! A TrapRepress is checked like any SMP: one without the key does not end its trap.
//!
//! A violation also raises trap 256 (bad M_Key) to the MasterSMLID the port holds (the `trap`
//! module), as a real SMA does (IBA 14.2.5.1, C14-19.1).

use std::collections::BTreeMap;

use ibqos_mad::{Attribute, Method, PortInfoRepr, SmpRepr};

use super::{Arrival, Emulator};
use ibqos_fabric::PortRef;

const NS_PER_S: u64 = 1_000_000_000;

/// What an SMP that passed its M_Key check may see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    /// Everything, PortInfo.M_Key included.
    Full,
    /// Everything but the key: a Get without it at protection level 1 reads PortInfo.M_Key as 0.
    KeyHidden,
}

impl Access {
    /// `attribute` as this access shows it in a response.
    pub(super) fn show(self, attribute: Attribute) -> Attribute {
        match (self, attribute) {
            (Access::KeyHidden, Attribute::PortInfo(info)) => {
                Attribute::PortInfo(PortInfoRepr { m_key: 0, ..info })
            }
            (_, attribute) => attribute,
        }
    }
}

/// The lease timers that are running: when each ends, in emulated ns, by the port that holds
/// the key (a switch's port 0).
pub(super) type Leases = BTreeMap<PortRef, u64>;

/// How an SMA's M_Key check treats one SMP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// The port has no M_Key or the SMP carries it: answered in full, and a running lease stops.
    Valid,
    /// Answered without the key: a method the check does not cover, or a Get that the
    /// protection level lets through. A running lease runs on.
    Answered(Access),
    /// Dropped: an M_Key violation.
    Violation,
}

/// The check of an SMP carrying `m_key` with `method` against the PortInfo of the port whose
/// key governs it.
fn verdict(held: &PortInfoRepr, m_key: u64, method: Method) -> Verdict {
    // The check covers the methods an SMA acts on (IBA 14.2.4.1); anything else gets its
    // "unsupported method" answer whatever the key.
    if !matches!(method, Method::Get | Method::Set | Method::TrapRepress) {
        return Verdict::Answered(Access::Full);
    }
    if held.m_key == 0 || m_key == held.m_key {
        return Verdict::Valid;
    }
    match (method, held.m_key_protect_bits) {
        (Method::Get, 0) => Verdict::Answered(Access::Full),
        (Method::Get, 1) => Verdict::Answered(Access::KeyHidden),
        _ => Verdict::Violation,
    }
}

impl Emulator {
    /// The M_Key check of `request`, arrived at `at`: what the response may show, or `None`
    /// when the SMA drops it (after counting the violation and starting a lease).
    pub(super) fn check_m_key(&mut self, at: Arrival, request: &SmpRepr) -> Option<Access> {
        let port = if self.is_switch(at.node) {
            PortRef::new(at.node, 0)
        } else {
            at
        };
        let now_ns = self.now_ns;
        // A port the emulator does not hold has no key; the SMA answers it as it would without
        // the check.
        let Some(held) = self.sma_port_mut(port).map(|p| &mut p.info) else {
            return Some(Access::Full);
        };
        match verdict(held, request.m_key, request.method) {
            Verdict::Valid => {
                self.leases.remove(&port);
                Some(Access::Full)
            }
            Verdict::Answered(access) => Some(access),
            Verdict::Violation => {
                held.m_key_violations = held.m_key_violations.saturating_add(1);
                let period_s = held.m_key_lease_period;
                if period_s != 0 {
                    let end = now_ns.saturating_add(u64::from(period_s) * NS_PER_S);
                    self.leases.entry(port).or_insert(end);
                }
                // A TrapRepress that fails raises no trap: an SM that lost a port's key would
                // otherwise be sent a trap for each repress it tries.
                if request.method != Method::TrapRepress {
                    self.raise_bad_m_key_trap(port, request);
                }
                None
            }
        }
    }

    /// Every lease that ends by `now_ns` clears its port's M_KeyProtectBits.
    pub(super) fn expire_leases(&mut self, now_ns: u64) {
        let now_ns = self.now_ns.max(now_ns);
        let mut expired = Vec::new();
        self.leases.retain(|&port, &mut end| {
            let runs = end > now_ns;
            if !runs {
                expired.push(port);
            }
            runs
        });
        for port in expired {
            if let Some(p) = self.sma_port_mut(port) {
                p.info.m_key_protect_bits = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use ibqos_mad::AttributeId;

    use super::*;

    fn port(m_key: u64, protect: u8) -> PortInfoRepr {
        let Ok(Attribute::PortInfo(info)) = Attribute::parse(AttributeId::PortInfo, &[0; 64])
        else {
            panic!("an all-zero PortInfo parses");
        };
        PortInfoRepr {
            m_key,
            m_key_protect_bits: protect,
            ..info
        }
    }

    #[test]
    fn the_protection_levels() {
        use Access::{Full, KeyHidden};
        use Verdict::{Answered, Valid, Violation};
        const KEY: u64 = 0x1234;
        // Get, Set, TrapRepress with a wrong key at levels 0..=3 (IBA 14.2.4.1).
        let table = [
            (0, [Answered(Full), Violation, Violation]),
            (1, [Answered(KeyHidden), Violation, Violation]),
            (2, [Violation, Violation, Violation]),
            (3, [Violation, Violation, Violation]),
        ];
        let methods = [Method::Get, Method::Set, Method::TrapRepress];
        for (protect, verdicts) in table {
            for (method, expected) in methods.into_iter().zip(verdicts) {
                let held = port(KEY, protect);
                assert_eq!(
                    verdict(&held, 0x99, method),
                    expected,
                    "{protect} {method:?}"
                );
                assert_eq!(verdict(&held, KEY, method), Valid, "{protect} {method:?}");
                // A port without a key takes any.
                assert_eq!(verdict(&port(0, protect), 0x99, method), Valid);
            }
            // A method the check does not cover is answered (with "unsupported method").
            let send = verdict(&port(KEY, protect), 0x99, Method::Send);
            assert_eq!(send, Answered(Full));
        }
    }

    #[test]
    fn key_hidden_zeroes_only_the_port_info_key() {
        let info = Attribute::PortInfo(port(0x1234, 1));
        assert_eq!(
            Access::KeyHidden.show(info),
            Attribute::PortInfo(port(0, 1))
        );
        assert_eq!(Access::Full.show(info), info);
        let other = Attribute::parse(AttributeId::SmInfo, &[7; 64]).unwrap();
        assert_eq!(Access::KeyHidden.show(other), other);
    }
}
