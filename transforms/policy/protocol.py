"""HTTP code → protocol status → fetch status (Nutch's lib-http and Fetcher). Pure, no Beam."""

from typing import Optional

__all__ = ['protocol_status', 'fetch_status', 'CONTENT_KEPT', 'NOT_ATTEMPTED']

_BY_CODE = {200: 'success', 302: 'temp_moved', 303: 'temp_moved', 307: 'temp_moved',
            304: 'notmodified', 400: 'gone', 401: 'access_denied', 404: 'notfound', 410: 'gone'}

_FETCH = {
    'success': 'fetch_success',
    'moved': 'fetch_redir_perm',
    'temp_moved': 'fetch_redir_temp',
    'exception': 'fetch_retry',
    'retry': 'fetch_retry',
    'gone': 'fetch_gone',
    'notfound': 'fetch_gone',
    'access_denied': 'fetch_gone',
    'robots_denied': 'fetch_gone',
    'notmodified': 'fetch_notmodified',
    # Refused by our own address policy: no request was sent and the server said nothing, so
    # the URL is not gone; updatedb keeps its record as it was (nutch-differences D42).
    'blocked': 'fetch_retry',
}

# Protocol statuses of a URL that was never requested: updatedb leaves its record as it was
# (no retry counted) and it is due again (D17, D42).
NOT_ATTEMPTED = frozenset({'notfetching', 'blocked'})

# Protocol statuses whose response body is stored in content/ (Nutch: success and redirects).
CONTENT_KEPT = frozenset({'success', 'moved', 'temp_moved'})


def protocol_status(http_code: Optional[int]) -> str:
    """Nutch's lib-http mapping; None (no response: timeout, refused...) is an exception."""
    if http_code is None:
        return 'exception'
    if http_code in _BY_CODE:
        return _BY_CODE[http_code]
    if 300 <= http_code < 400:
        return 'moved'
    return 'exception'


def fetch_status(protocol: str) -> str:
    """The crawl_fetch status of a protocol status (failed, redir_exceeded, notfetching and any
    unknown one are retried)."""
    return _FETCH.get(protocol, 'fetch_retry')
