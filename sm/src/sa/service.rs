//! ServiceRecords (IBA 15.2.5.14): services that ports register with the SA, for a lease, and
//! that clients look up, as OpenSM keeps them (osm_sa_service_record.c, osm_service.c).
//!
//! A record is identified by (ServiceID, ServiceGID, ServiceP_Key): a Set of an existing one
//! replaces it. A lease runs from the Set; an expired record is gone (OpenSM ages them on a 1 s
//! timer; here at the time passed in).

use std::time::{Duration, Instant};

use ibqos_mad::sa::{Record, ServiceRecordRepr};
use ibqos_mad::{Method, Status};

use super::{Query, Records};

/// ComponentMask bits OpenSM compares (IB_SR_COMPMASK_*); the data arrays count from bit 7.
mod bit {
    pub const ID: u64 = 1 << 0;
    pub const GID: u64 = 1 << 1;
    pub const P_KEY: u64 = 1 << 2;
    pub const LEASE: u64 = 1 << 4;
    pub const KEY: u64 = 1 << 5;
    pub const NAME: u64 = 1 << 6;
    pub const DATA8: u32 = 7;
    pub const DATA16: u32 = 23;
    pub const DATA32: u32 = 31;
    pub const DATA64: u32 = 35;
}

/// The default partition's full key, the P_Key of a service registered without one.
const DEFAULT_P_KEY: u16 = 0xffff;

#[derive(Debug, Clone)]
struct Service {
    record: ServiceRecordRepr,
    /// When the lease ends; `None` for an infinite lease.
    expires: Option<Instant>,
}

/// The services registered with the SA.
#[derive(Debug, Default)]
pub(super) struct Services {
    services: Vec<Service>,
}

impl Services {
    /// A ServiceRecord request: Set registers, Delete removes, Get and GetTable look up.
    pub fn answer(&mut self, now: Instant, query: &Query<'_>) -> Result<Records, Status> {
        self.expire(now);
        let mut records = Records::new(ServiceRecordRepr::SIZE);
        let request =
            ServiceRecordRepr::parse_bytes(query.template).map_err(|_| Status::SA_REQ_INVALID)?;
        let mask = query.component_mask;
        match query.method {
            Method::Set | Method::Delete if mask & (bit::ID | bit::GID) != bit::ID | bit::GID => {
                Err(Status::SA_REQ_INVALID)
            }
            Method::Set | Method::Delete
                if mask & bit::P_KEY != 0 && request.p_key & 0x7fff != DEFAULT_P_KEY & 0x7fff =>
            {
                // A P_Key the ports do not share (osm_sa_service_record.c `validate_sr`).
                Err(Status::SA_REQ_INVALID)
            }
            Method::Set => {
                let mut record = request;
                if mask & bit::P_KEY == 0 {
                    record.p_key = DEFAULT_P_KEY;
                }
                if mask & bit::LEASE == 0 {
                    record.lease = ServiceRecordRepr::INFINITE_LEASE;
                }
                let expires = (record.lease != ServiceRecordRepr::INFINITE_LEASE)
                    .then(|| now + Duration::from_secs(u64::from(record.lease)));
                let service = Service { record, expires };
                // A new service goes first, a replaced one stays where it is: OpenSM inserts
                // at the head of its list (`osm_svcr_insert_to_db`), and a GetTable walks it
                // from there, newest first.
                match self.position(&record) {
                    Some(at) => self.services[at] = service,
                    None => self.services.insert(0, service),
                }
                records.push(&record);
                Ok(records)
            }
            Method::Delete => {
                let mut key = request;
                if mask & bit::P_KEY == 0 {
                    key.p_key = DEFAULT_P_KEY;
                }
                let at = self.position(&key).ok_or(Status::SA_NO_RECORDS)?;
                records.push(&self.services.remove(at).record);
                Ok(records)
            }
            _ => {
                for service in &self.services {
                    if matches(mask, &request, &service.record) {
                        let mut record = service.record;
                        if !query.trusted {
                            record.key = [0; 16];
                        }
                        records.push(&record);
                    }
                }
                Ok(records)
            }
        }
    }

    /// Drops the services whose lease has ended.
    pub fn expire(&mut self, now: Instant) {
        self.services
            .retain(|service| service.expires.is_none_or(|end| end > now));
    }

    /// When the next lease ends.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.services.iter().filter_map(|s| s.expires).min()
    }

    /// The service with the same (ServiceID, ServiceGID, ServiceP_Key).
    fn position(&self, key: &ServiceRecordRepr) -> Option<usize> {
        self.services.iter().position(|s| {
            (s.record.id, s.record.gid, s.record.p_key) == (key.id, key.gid, key.p_key)
        })
    }
}

/// Whether `record` has every component the mask names as the template has it.
fn matches(mask: u64, template: &ServiceRecordRepr, record: &ServiceRecordRepr) -> bool {
    let set = |bit: u32| mask & (1 << bit) != 0;
    let arrays_match =
        (0..16).all(|i| {
            !set(bit::DATA8 + i) || template.data8[i as usize] == record.data8[i as usize]
        }) && (0..8).all(|i| {
            !set(bit::DATA16 + i) || template.data16[i as usize] == record.data16[i as usize]
        }) && (0..4).all(|i| {
            !set(bit::DATA32 + i) || template.data32[i as usize] == record.data32[i as usize]
        }) && (0..2).all(|i| {
            !set(bit::DATA64 + i) || template.data64[i as usize] == record.data64[i as usize]
        });
    (mask & bit::ID == 0 || template.id == record.id)
        && (mask & bit::GID == 0 || template.gid == record.gid)
        && (mask & bit::P_KEY == 0 || template.p_key == record.p_key)
        && (mask & bit::LEASE == 0 || template.lease == record.lease)
        && (mask & bit::KEY == 0 || template.key == record.key)
        && (mask & bit::NAME == 0 || template.name == record.name)
        && arrays_match
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::subnet::PortKey;
    use ibqos_mad::Gid;

    fn service(id: u64, name: u8) -> ServiceRecordRepr {
        let mut record = ServiceRecordRepr::parse_bytes(&[0u8; ServiceRecordRepr::SIZE]).unwrap();
        record.id = id;
        record.gid = Gid::new(0xfe80_0000_0000_0000, 0x11);
        record.name[0] = name;
        record
    }

    fn ask(
        services: &mut Services,
        method: Method,
        mask: u64,
        record: &ServiceRecordRepr,
    ) -> Vec<(u64, u8)> {
        let mut template = vec![0u8; ServiceRecordRepr::SIZE];
        record.emit_bytes(&mut template);
        let query = Query {
            method,
            component_mask: mask,
            attribute_modifier: 0,
            template: &template,
            requester: PortKey::new(0x11, 1),
            trusted: true,
            sm_key: 1,
            rmpp_active: false,
        };
        let answer = services.answer(Instant::now(), &query).unwrap();
        answer
            .bytes
            .chunks(answer.size)
            .map(|bytes| {
                let record = ServiceRecordRepr::parse_bytes(bytes).unwrap();
                (record.id, record.name[0])
            })
            .collect()
    }

    #[test]
    fn a_table_lists_the_newest_service_first_and_a_replaced_one_in_its_place() {
        let mut services = Services::default();
        let set = bit::ID | bit::GID;
        for id in 1..=3 {
            ask(&mut services, Method::Set, set, &service(id, b'a'));
        }
        let blank = service(0, 0);
        assert_eq!(
            ask(&mut services, Method::GetTable, 0, &blank),
            [(3, b'a'), (2, b'a'), (1, b'a')]
        );
        ask(&mut services, Method::Set, set, &service(2, b'b'));
        assert_eq!(
            ask(&mut services, Method::GetTable, 0, &blank),
            [(3, b'a'), (2, b'b'), (1, b'a')]
        );
    }
}
