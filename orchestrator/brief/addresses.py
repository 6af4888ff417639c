"""Which addresses a user-typed URL may reach, and which hosts the operator allowed anyway.

A fetched URL is the one place the product connects where a user points it, so every address a host
resolves to is checked here before any socket opens: loopback, private, link-local (the cloud metadata
address 169.254.169.254 among them), unique-local, multicast, unspecified and every other non-global
range are refused, IPv4 and IPv6 alike, with an IPv6 address that carries an IPv4 one (mapped, NAT64,
6to4, Teredo) judged by the IPv4 address inside. `DEBATE_FETCH_ALLOW_HOSTS` is the only way past.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
DEFAULT_PORTS = (80, 443)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def parse_address(text: str) -> IPAddress | None:
    """`text` as an IP address (an IPv6 one with or without brackets or a zone), or None for a name."""
    text = text.strip().removeprefix("[").removesuffix("]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (IPv4-mapped, NAT64, 6to4, Teredo), if any."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return None


def why_forbidden(address: IPAddress) -> str | None:
    """Why `address` may not be fetched from (a few words), or None when it is a public address."""
    inner = embedded_ipv4(address)
    if inner is not None:
        reason = why_forbidden(inner)
        return f"{reason} (inside {address})" if reason else None
    if address.is_loopback:
        return "a loopback address"
    if address.is_unspecified:
        return "an unspecified address"
    if address.is_link_local:
        return "a link-local address (cloud metadata lives there)"
    if address.is_multicast:
        return "a multicast address"
    if isinstance(address, ipaddress.IPv6Address) and address in ipaddress.ip_network("fc00::/7"):
        return "a unique-local address"
    if address.is_private:
        return "a private address"
    if not address.is_global:
        return "a reserved address"
    return None


@dataclass(frozen=True)
class AllowedHosts:
    """DEBATE_FETCH_ALLOW_HOSTS: `host` (any address, ports 80/443) or `host:port` (that port too)."""

    hosts: frozenset[str] = frozenset()
    host_ports: frozenset[tuple[str, int]] = frozenset()

    @classmethod
    def parse(cls, text: str) -> AllowedHosts:
        """The comma-separated setting; an IPv6 address is written in brackets when a port follows."""
        hosts: set[str] = set()
        host_ports: set[tuple[str, int]] = set()
        for entry in filter(None, (part.strip().lower() for part in text.split(","))):
            host, port = _split_host_port(entry)
            if port is None:
                hosts.add(host)
            else:
                host_ports.add((host, port))
        return cls(frozenset(hosts), frozenset(host_ports))

    def allows_host(self, host: str, port: int) -> bool:
        """Whether the operator named `host` (at `port`, or bare with a default port)."""
        host = _normal_host(host)
        return (host, port) in self.host_ports or (host in self.hosts and port in DEFAULT_PORTS)

    def allows_port(self, host: str, port: int) -> bool:
        return port in DEFAULT_PORTS or (_normal_host(host), port) in self.host_ports


def _normal_host(host: str) -> str:
    host = host.strip().lower().removeprefix("[").removesuffix("]").rstrip(".")
    address = parse_address(host)
    return str(address) if address is not None else host


def _split_host_port(entry: str) -> tuple[str, int | None]:
    """`host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 address, as (normal host, port or None)."""
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        port = rest.removeprefix(":")
        return _normal_host(host), int(port) if port.isdigit() else None
    if entry.count(":") == 1:
        host, _, port = entry.partition(":")
        if port.isdigit():
            return _normal_host(host), int(port)
    return _normal_host(entry), None
