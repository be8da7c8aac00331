"""Which network addresses the crawler may connect to (server-side request forgery). Pure.

A public page can point anywhere: a link, a redirect, a `<base>`, a meta refresh or a robots.txt
redirect to `http://169.254.169.254/latest/meta-data/` would make the crawler fetch a cloud
VM's credentials and store them. `AddressPolicy` decides, for an IP address or a URL's host,
whether a request may go there:

* deny entries are address classes (`loopback`, `private`, `link-local`, `multicast`,
  `reserved`, `unspecified`, `shared`) or CIDRs; allow entries are CIDRs and win over deny ones
  (an intranet crawl allows its own ranges);
* an IPv4-mapped IPv6 address (`::ffff:169.254.169.254`) is judged as the IPv4 address it maps;
* a host is judged by what it *is* when it is an address literal in any spelling browsers accept
  (`2130706433`, `0x7f000001`, `0177.0.0.1`, `127.1`, `[::1]`), and `localhost` and
  `*.localhost` names (RFC 6761) count as loopback. Other names are judged by the address they
  resolve to, at connect time (transforms/fetcher/http.py), so DNS rebinding cannot slip through.
"""

import ipaddress
from typing import Iterable, Optional, Sequence, Union

__all__ = ['AddressPolicy', 'ADDRESS_CLASSES', 'parse_ipv4', 'host_address']

IP = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]

def _networks(*cidrs: str):
    return tuple(ipaddress.ip_network(c) for c in cidrs)


_PRIVATE = _networks('10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7')
_SHARED = _networks('100.64.0.0/10')                      # carrier-grade NAT (RFC 6598)
# "This network", IETF protocol assignments, documentation, benchmarking, broadcast, and the
# IPv6 documentation and discard-only prefixes; 240.0.0.0/4 is is_reserved already.
_RESERVED = _networks('0.0.0.0/8', '192.0.0.0/24', '192.0.2.0/24', '198.18.0.0/15',
                      '198.51.100.0/24', '203.0.113.0/24', '255.255.255.255/32',
                      '2001:db8::/32', '100::/64')


def _within(ip: IP, networks) -> bool:
    return any(ip.version == n.version and ip in n for n in networks)


ADDRESS_CLASSES = {
    'loopback': lambda ip: ip.is_loopback,
    'private': lambda ip: _within(ip, _PRIVATE),
    'link-local': lambda ip: ip.is_link_local,           # incl. 169.254.169.254 (metadata)
    'multicast': lambda ip: ip.is_multicast,
    'unspecified': lambda ip: ip.is_unspecified,
    'reserved': lambda ip: ip.is_reserved or _within(ip, _RESERVED),
    'shared': lambda ip: _within(ip, _SHARED),
}


def parse_ipv4(host: str) -> Optional[ipaddress.IPv4Address]:
    """The IPv4 address a host spells, the way browsers read it (WHATWG URL "IPv4 parser"):
    1 to 4 dot-separated numbers, each decimal, octal (leading 0) or hex (0x); the last one fills
    the remaining bytes. None when the host is not such a literal."""
    parts = host.split('.')
    if parts and parts[-1] == '':
        parts = parts[:-1]                    # one trailing dot is allowed
    if not 1 <= len(parts) <= 4:
        return None
    numbers = []
    for part in parts:
        if not part:
            return None
        try:
            if part[:2] in ('0x', '0X'):
                value = int(part[2:], 16) if part[2:] else 0
            elif len(part) > 1 and part[0] == '0':
                value = int(part[1:], 8)
            else:
                value = int(part, 10) if part.isdigit() else None
        except ValueError:
            return None
        if value is None:
            return None
        numbers.append(value)
    if any(n > 255 for n in numbers[:-1]) or numbers[-1] >= 256 ** (5 - len(numbers)):
        return None
    value = numbers[-1]
    for i, n in enumerate(numbers[:-1]):
        value += n * 256 ** (3 - i)
    return ipaddress.IPv4Address(value)


def host_address(host: str) -> Optional[IP]:
    """The IP address a URL host is a literal of (IPv6 in brackets), else None."""
    host = host.strip().lower()
    if host.startswith('[') and host.endswith(']'):
        try:
            return ipaddress.IPv6Address(host[1:-1].split('%', 1)[0])
        except ValueError:
            return None
    return parse_ipv4(host)


def _entries(items: Iterable[str], what: str, classes_ok: bool):
    classes, networks = [], []
    for item in items:
        item = item.strip().lower()
        if not item:
            continue
        if item in ADDRESS_CLASSES:
            if not classes_ok:
                raise ValueError(f'{what}: {item!r} is an address class; give CIDRs here')
            classes.append(item)
            continue
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            names = ', '.join(ADDRESS_CLASSES) if classes_ok else 'CIDRs'
            raise ValueError(f'{what}: {item!r} is not a CIDR'
                             + (f' or an address class ({names})' if classes_ok else ''))
    return classes, networks


class AddressPolicy:
    """Deny classes/CIDRs, allow CIDRs (allow wins). Picklable."""

    def __init__(self, deny: Sequence[str] = (), allow: Sequence[str] = ()):
        self.deny_classes, self.deny_networks = _entries(deny, 'http.address.deny', True)
        _, self.allow_networks = _entries(allow, 'http.address.allow', False)

    def denied(self, ip: IP) -> Optional[str]:
        """Why a connection to `ip` is refused (e.g. 'link-local 169.254.169.254'), or None."""
        mapped = getattr(ip, 'ipv4_mapped', None)
        candidates = ([mapped] if mapped is not None else []) + [ip]
        if any(_within(c, self.allow_networks) for c in candidates):
            return None
        for c in candidates:
            for name in self.deny_classes:
                if ADDRESS_CLASSES[name](c):
                    return f'{name} address {c}'
            for network in self.deny_networks:
                if _within(c, (network,)):
                    return f'address {c} in denied {network}'
        return None

    def denied_host(self, host: str) -> Optional[str]:
        """Why a URL host is refused before any lookup (an address literal, or a localhost
        name when loopback is denied), or None (a name: judged when it is resolved)."""
        name = host.strip().lower().rstrip('.')
        last = name.rpartition('.')[2]
        if name[:1] == '[' or last[:1].isdigit():       # an address literal, or invalid
            ip = host_address(host)
            return self.denied(ip) if ip is not None else None
        if name == 'localhost' or name.endswith('.localhost'):
            return self.denied(ipaddress.IPv4Address('127.0.0.1')) and f'loopback name {name}'
        return None
