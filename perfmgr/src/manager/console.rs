//! The console's `perfmgr` commands that change how the PerfMgr sweeps or show and forget its
//! redirections (`osm_console.c`): `set_rm_nodes`, `clear_rm_nodes`, `set_query_cpi`,
//! `clear_query_cpi`, `dump_redir` and `clear_redir`.

use std::fmt::{self, Write};

use ibqos_mad::PerfCapabilityMask;

use super::{PerfMgr, port_lid};
use crate::dump::{self, NodeSelector, RedirectedNode, RedirectedPort};

impl PerfMgr {
    /// `set_rm_nodes` (true) and `clear_rm_nodes`: whether a node gone from the subnet leaves
    /// the database, or stays there inactive.
    pub fn set_remove_nodes(&mut self, remove: bool) {
        self.config.remove_nodes = remove;
    }

    /// `set_query_cpi` (true) and `clear_query_cpi`: whether a PMA's ClassPortInfo is read
    /// before its counters.
    pub fn set_query_cpi(&mut self, query: bool) {
        self.config.query_cpi = query;
    }

    /// `dump_redir [name|guid]`: the ports whose PMA redirected the PerfMgr, of every
    /// monitored node or of the one `selector` names.
    pub fn dump_redirections(&self, selector: Option<&str>, out: &mut impl Write) -> fmt::Result {
        let nodes: Vec<RedirectedNode> = self
            .monitored
            .iter()
            .map(|(&guid, node)| {
                let current = self.subnet.get(&guid);
                let first = usize::from(node.first_port());
                let ports = node.ports.iter().enumerate().skip(first);
                let ports = ports.filter_map(|(number, port)| {
                    let redirect = port.redirect?;
                    let number = u8::try_from(number).ok()?;
                    Some(RedirectedPort {
                        port: number,
                        valid: port.valid,
                        original_lid: current.and_then(|n| port_lid(n, number)).unwrap_or(0),
                        lid: redirect.peer.lid,
                        p_key: redirect.p_key,
                        qp: redirect.peer.qp,
                        p_key_index: redirect.peer.pkey_index,
                    })
                });
                RedirectedNode {
                    guid,
                    name: node.name.clone(),
                    enhanced_port0: node.enhanced_port0,
                    ports: ports.collect(),
                }
            })
            .collect();
        dump::redirections(self.config.redirect, &nodes, selector, out)
    }

    /// `clear_redir [name|guid]`: every redirected port of every monitored node, or of the one
    /// `selector` names, is asked at its own LID again. As `clear_redir_entry` zeroes the port,
    /// its ClassPortInfo is read again before its counters.
    pub fn clear_redirections(
        &mut self,
        selector: Option<&str>,
        out: &mut impl Write,
    ) -> fmt::Result {
        if !self.config.redirect {
            writeln!(out, "Perfmgr redirection not enabled")?;
        }
        let guids: Vec<u64> = match selector.map(NodeSelector::parse) {
            None => self.monitored.keys().copied().collect(),
            Some(wanted) => {
                let found = self
                    .monitored
                    .iter()
                    .find(|(guid, node)| wanted.matches(**guid, &node.name));
                match found {
                    Some((&guid, _)) => vec![guid],
                    None => return wanted.not_found(out),
                }
            }
        };
        let mut gone = Vec::new();
        for guid in guids {
            let Some(node) = self.monitored.get_mut(&guid) else {
                continue;
            };
            let first = usize::from(node.first_port());
            for port in node.ports.iter_mut().skip(first) {
                if let Some(redirect) = port.redirect.take() {
                    port.valid = true;
                    port.cpi_valid = false;
                    port.cap_mask = PerfCapabilityMask(0);
                    gone.push(redirect);
                }
            }
        }
        for redirect in gone {
            self.unlink_redirect(redirect);
        }
        Ok(())
    }
}
