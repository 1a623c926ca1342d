//! Addresses: each simulated node's InternalIP and pod CIDR, and each pod's
//! IP in that CIDR.
//!
//! A real node gets its InternalIP from its network and its pod CIDR from
//! the node IPAM controller (`spec.podCIDR`); the CNI plugin then hands out
//! pod IPs from the CIDR. Here a node is numbered from its name (`node-7` is
//! 7, other names hash), and is given the first free pod CIDR from
//! `10.244.<n>.0/24` on (continuing through the rest of `10.0.0.0/8` past
//! 256 nodes) unless `spec.podCIDR` names one; its InternalIP, in
//! `172.16.0.0/12`, is derived from that CIDR, so no two nodes share
//! either (unless someone else reported the node's address). A pod keeps
//! the IP it was given; a new pod takes the first free address after the
//! one its uid hashes to, so the pods on one node never share an address.

use std::collections::BTreeSet;
use std::fmt;

use crate::ids::fnv;

/// An IPv4 address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Ipv4(pub u32);

impl Ipv4 {
    /// Parses dotted-quad text (`10.244.1.7`).
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let mut value = 0u32;
        let mut parts = 0;
        for part in text.split('.') {
            if part.is_empty() || part.len() > 3 || !part.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            value = value << 8 | u32::from(part.parse::<u8>().ok()?);
            parts += 1;
        }
        (parts == 4).then_some(Ipv4(value))
    }
}

impl fmt::Display for Ipv4 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d] = self.0.to_be_bytes();
        write!(f, "{a}.{b}.{c}.{d}")
    }
}

/// The number a node's addresses are derived from: the decimal number its
/// name ends with (`node-7`, `sim-0042`), if below 65,536; else a hash of
/// the name. Names of one fleet (`node-1` … `node-5000`) never collide.
pub(crate) fn node_number(name: &str) -> u32 {
    let digits = name.bytes().rev().take_while(u8::is_ascii_digit).count();
    match name[name.len() - digits..].parse::<u32>() {
        Ok(n) if digits > 0 && digits <= 5 && n < 65_536 => n,
        _ => (fnv(0, &[name]) % 65_536) as u32,
    }
}

/// The InternalIP of the node that holds pod CIDR `cidr`, in
/// `172.16.0.0/12`: derived from the CIDR, which no other node holds, so no
/// two nodes share one (deriving it from the name's number gave `node-a1`,
/// `node-b1` and `node-c1` the same). The default blocks, `for_node(n)`,
/// give `172.16.0.2 + n` (`node-7` alone in its fleet: `172.16.0.9`); a
/// block elsewhere its /24's number past those, unique among blocks of /24
/// or larger within one /12.
pub(crate) fn node_ip(cidr: Cidr) -> Ipv4 {
    let slash24 = cidr.base >> 8;
    let default_first = Cidr::for_node(0).base >> 8;
    let in_10 = cidr.base >> 24 == 10;
    let n = if in_10 {
        slash24.wrapping_sub(default_first) % CIDRS
    } else {
        CIDRS + slash24 % ((1 << 20) - CIDRS - 4)
    };
    Ipv4(0xac10_0000 + 2 + n)
}

/// Whether `ip` lies in `172.16.0.0/12`, where [`node_ip`] derives the
/// nodes' addresses.
pub(crate) fn is_derived_ip(ip: Ipv4) -> bool {
    ip.0 & 0xfff0_0000 == 0xac10_0000
}

/// How many node pod CIDRs there are (`/24`s of `10.0.0.0/8`).
pub(crate) const CIDRS: u32 = 1 << 16;

/// A block of pod addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cidr {
    base: u32,
    prefix: u32,
}

impl Cidr {
    /// An IPv4 CIDR (`10.244.3.0/24`) with room for at least one pod.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let (ip, prefix) = text.split_once('/')?;
        let prefix: u32 = prefix.parse().ok()?;
        if !(1..=30).contains(&prefix) {
            return None;
        }
        let mask = u32::MAX << (32 - prefix);
        Some(Cidr {
            base: Ipv4::parse(ip)?.0 & mask,
            prefix,
        })
    }

    /// The pod CIDR of the node numbered `n` when its spec names none:
    /// `10.244.<n>.0/24` for the first 256, then on through `10.0.0.0/8`.
    pub(crate) fn for_node(n: u32) -> Self {
        let second = (244 + n / 256) % 256;
        Cidr {
            base: 10 << 24 | second << 16 | (n % 256) << 8,
            prefix: 24,
        }
    }

    /// How many pod addresses it holds: all but the network address, the
    /// gateway (`.1`) and the broadcast address.
    fn slots(self) -> u32 {
        (1u32 << (32 - self.prefix)) - 3
    }

    fn address(self, slot: u32) -> Ipv4 {
        Ipv4(self.base + 2 + slot)
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", Ipv4(self.base), self.prefix)
    }
}

/// Hands out pod addresses on one node, avoiding those in use.
pub(crate) struct Allocator {
    cidr: Cidr,
    used: BTreeSet<u32>,
}

impl Allocator {
    /// An allocator for `cidr` with nothing in use yet.
    pub(crate) fn new(cidr: Cidr) -> Self {
        Self {
            cidr,
            used: BTreeSet::new(),
        }
    }

    /// Marks `ip` as held by a running pod.
    pub(crate) fn hold(&mut self, ip: Ipv4) {
        self.used.insert(ip.0);
    }

    /// An address for the pod with uid `uid`: the first free one from the
    /// slot the uid hashes to. With the CIDR full (more pods than
    /// addresses) the hashed one is shared, as nothing routes here anyway.
    pub(crate) fn take(&mut self, uid: &str) -> Ipv4 {
        let slots = self.cidr.slots();
        let first = (fnv(1, &[uid]) % u64::from(slots)) as u32;
        let ip = (0..slots)
            .map(|i| self.cidr.address((first + i) % slots))
            .find(|ip| !self.used.contains(&ip.0))
            .unwrap_or_else(|| self.cidr.address(first));
        self.used.insert(ip.0);
        ip
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_are_numbered_by_name() {
        assert_eq!(node_number("node-7"), 7);
        assert_eq!(node_number("sim-0042"), 42);
        assert_eq!(node_number("node-65535"), 65_535);
        assert!(node_number("node-65536") < 65_536);
        assert_eq!(node_number("worker"), node_number("worker"));
        assert_eq!(node_ip(Cidr::for_node(1)).to_string(), "172.16.0.3");
        assert_eq!(node_ip(Cidr::for_node(300)).to_string(), "172.16.1.46");
        let elsewhere = |text| node_ip(Cidr::parse(text).unwrap());
        assert_ne!(elsewhere("192.168.3.0/24"), elsewhere("192.168.4.0/24"));
        assert_ne!(elsewhere("192.168.3.0/24"), node_ip(Cidr::for_node(3)));
        assert_ne!(elsewhere("10.1.0.0/16"), elsewhere("10.2.0.0/16"));
        assert_eq!(Cidr::for_node(1).to_string(), "10.244.1.0/24");
        assert_eq!(Cidr::for_node(256).to_string(), "10.245.0.0/24");
        assert_eq!(Cidr::for_node(65_535).to_string(), "10.243.255.0/24");
    }

    #[test]
    fn parses_addresses() {
        assert_eq!(Ipv4::parse("10.244.1.7"), Some(Ipv4(0x0af4_0107)));
        for bad in [
            "",
            "10.244.1",
            "10.244.1.256",
            "a.b.c.d",
            "1.2.3.4.5",
            "::1",
        ] {
            assert_eq!(Ipv4::parse(bad), None, "{bad}");
        }
        assert_eq!(
            Cidr::parse("10.1.2.3/16").unwrap().to_string(),
            "10.1.0.0/16"
        );
        assert_eq!(Cidr::parse("10.1.2.0/31"), None);
        assert_eq!(Cidr::parse("fd00::/64"), None);
    }

    #[test]
    fn pods_on_a_node_never_share_an_address() {
        let cidr = Cidr::parse("10.0.0.0/29").unwrap();
        let mut a = Allocator::new(cidr);
        a.hold(Ipv4::parse("10.0.0.2").unwrap());
        let mut got: Vec<String> = (0..4)
            .map(|i| a.take(&format!("uid-{i}")).to_string())
            .collect();
        got.sort();
        assert_eq!(got, ["10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"]);
        // Full: the hashed address is reused rather than none given.
        assert!(a.take("uid-x").to_string().starts_with("10.0.0."));
    }
}
