"""The test web: the project's loopback multi-host web server (transforms/testing/web.py, also
used by the demo) under the name the tests use."""

from beamcrawl.transforms.testing.web import (LoggedRequest, Page, Raw, Request, TestWeb, html_page,
                                              redirect)

__all__ = ['Page', 'Raw', 'Request', 'LoggedRequest', 'TestWeb', 'html_page', 'redirect']
