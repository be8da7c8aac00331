"""The test web: the project's loopback multi-host web server (transforms/localweb.py, also
used by the demo) under the name the tests use."""

from beamcrawl.transforms.testing.web import (LoggedRequest, Page, Request, TestWeb, html_page,
                                              redirect)

__all__ = ['Page', 'Request', 'LoggedRequest', 'TestWeb', 'html_page', 'redirect']
