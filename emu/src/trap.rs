//! The traps the emulated SMAs send: trap 128 when a switch notes a link state change, trap
//! 256 when an SMP fails a port's M_Key check, and the TrapRepress that ends one.

use ibqos_fabric::{NodeId, PortRef};
use ibqos_mad::{
    Attribute, AttributeId, Method, Notice, NoticeRepr, NoticeType, Routing, Smp, SmpRepr, Status,
};

use crate::Emulator;
use crate::perf::{Carrier, Trace};

/// A trap an SMA sends: a LID-routed SubnTrap(Notice) to the MasterSMLID its port 0 holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trap {
    /// The port it arrives at: the port owning the MasterSMLID.
    pub to: PortRef,
    /// The issuer's LID, the source LID of the packet.
    pub slid: u16,
    /// The emulated time, in ns, at which it arrives.
    pub at_ns: u64,
    pub mad: Vec<u8>,
}

impl Emulator {
    /// The traps raised since the last call, each with the port and time it arrives at. A
    /// trap whose MasterSMLID has no route is lost, as on a real fabric.
    pub fn take_traps(&mut self) -> Vec<Trap> {
        std::mem::take(&mut self.outbox)
    }

    /// Traps sent and not yet repressed by a TrapRepress with their TransactionID. An SMA
    /// here sends each trap once: the repeats IBA allows until the SM represses it are not
    /// modelled, this count shows what an SM left unanswered.
    pub fn unrepressed_traps(&self) -> usize {
        self.unrepressed.len()
    }

    /// A TrapRepress that reaches the trap's issuer ends that trap. ibsim drops it before it
    /// travels, so it is not counted on the links.
    pub(crate) fn repress(&mut self, origin: PortRef, request: &SmpRepr, dlid: Option<u16>) {
        let mut uncounted = Trace::new(Carrier::Smp);
        let at = match request.routing {
            Routing::Directed(path) => self
                .directed(origin, path, &mut uncounted)
                .map(|(at, _)| at),
            Routing::Lid => dlid.and_then(|lid| self.lid_route(origin, lid, &mut uncounted)),
        };
        let Some(at) = at.filter(|at| !self.is_dead(at.node)) else {
            return;
        };
        if self.check_m_key(at, request).is_some() {
            self.count(request);
            self.unrepressed.remove(&(at.node, request.transaction_id));
        }
    }

    /// Trap 128 from `switch` to the MasterSMLID of its port 0, LID-routed: sent only once the
    /// SM has given the switch a LID and told it where the SM is, and lost where no route
    /// leads there (or the switch's SMA is dead), as on a real fabric.
    pub(crate) fn raise_link_state_trap(&mut self, switch: NodeId) {
        self.raise_trap(
            PortRef::new(switch, 0),
            NoticeRepr::TRAP_LINK_STATE_CHANGE,
            |notice, issuer| notice.set_trap128_lid_addr(issuer),
        );
    }

    /// Trap 256 (bad M_Key) from `port`, the port whose key `request` failed (a switch's port
    /// 0), to that port's MasterSMLID: the failed SMP's method, attribute and the key it carried
    /// (IBA 14.2.5.1), under the same conditions as trap 128.
    pub(crate) fn raise_bad_m_key_trap(&mut self, port: PortRef, request: &SmpRepr) {
        self.raise_trap(port, NoticeRepr::TRAP_BAD_M_KEY, |notice, issuer| {
            notice.set_trap256_lid_addr(issuer);
            notice.set_trap256_method(request.method.into());
            notice.set_trap256_attribute_id(request.attribute_id.into());
            notice.set_trap256_attribute_modifier(request.attribute_modifier);
            notice.set_trap256_m_key(request.m_key);
        });
    }

    /// Trap `number` from `port` (a CA port, or a switch's port 0) to the MasterSMLID that port
    /// holds, LID-routed, its DataDetails filled in by `details` with the issuer's LID.
    fn raise_trap(
        &mut self,
        port: PortRef,
        number: u16,
        details: impl FnOnce(&mut Notice<&mut [u8]>, u16),
    ) {
        let Some(info) = self.port_info(port) else {
            return;
        };
        let (issuer, sm_lid) = (info.lid, info.master_sm_lid);
        if issuer == 0 || sm_lid == 0 || self.is_dead(port.node) {
            return;
        }
        let mut way = Trace::new(Carrier::Smp);
        let Some(to) = self.lid_route(port, sm_lid, &mut way) else {
            return;
        };
        if self.dice.chance(self.models.faults.loss) {
            return;
        }
        // Counted when it arrives: where a lost trap was lost is not modelled.
        self.pmas.record(&way);
        let links = way.links();
        let tid = self.next_trap_tid;
        self.next_trap_tid += 1;
        let producer_type = if self.is_switch(port.node) {
            NoticeRepr::PRODUCER_SWITCH
        } else {
            NoticeRepr::PRODUCER_CA
        };
        let notice = NoticeRepr {
            is_generic: true,
            notice_type: NoticeType::Urgent,
            producer_type,
            trap_number: number,
            issuer_lid: issuer,
            notice_toggle: false,
            notice_count: 0,
            data_details: [0; 54],
        };
        let mut data = Attribute::Notice(notice).to_data();
        details(&mut Notice::new_unchecked(&mut data[..]), issuer);
        let trap = SmpRepr {
            method: Method::Trap,
            status: Status::OK,
            transaction_id: tid,
            attribute_id: AttributeId::Notice,
            attribute_modifier: 0,
            m_key: 0,
            routing: Routing::Lid,
            data,
        };
        let mut mad = vec![0; 256];
        trap.emit(&mut Smp::new_unchecked(&mut mad[..]));
        self.unrepressed.insert((port.node, tid));
        let at_ns = self.now_ns.saturating_add(self.travel_ns(port.node, links));
        self.outbox.push(Trap {
            to,
            slid: issuer,
            at_ns,
            mad,
        });
    }
}
