"""Headless Chromium for tests, driven over the DevTools protocol (a websocket, websocket-client):
load a page, collect its console errors and uncaught exceptions, evaluate JavaScript in it, and
take a screenshot. Debian's `chromium` package (`.ci/run` installs it)."""

import base64
import importlib.util
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from typing import Any, List, Optional

CHROMIUM = '/usr/bin/chromium'
FLAGS = ('--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync',
         '--remote-debugging-port=0', '--remote-allow-origins=*', '--window-size=1280,2000')


def missing() -> Optional[str]:
    """Why no browser test can run here, or None."""
    if not os.access(CHROMIUM, os.X_OK):
        return f'{CHROMIUM} is not installed (apt-get install chromium; .ci/run does)'
    if importlib.util.find_spec('websocket') is None:
        return 'websocket-client is not installed (pip install -e .[test])'
    return None


class Browser:
    """One headless Chromium with a new profile directory; `with Browser() as b: b.load(url)`."""

    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix='beamcrawl-chromium-')
        self.proc = subprocess.Popen([CHROMIUM, *FLAGS, f'--user-data-dir={self.profile}',
                                      'about:blank'],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.ws = None
        self.next_id = 0
        self.events: List[dict] = []

    def __enter__(self):
        import websocket  # pylint: disable=import-outside-toplevel
        port_file = os.path.join(self.profile, 'DevToolsActivePort')
        while not os.path.exists(port_file) or not open(port_file, encoding='ascii').read():
            if self.proc.poll() is not None:
                raise RuntimeError(f'chromium exited {self.proc.returncode} before it listened')
            time.sleep(0.05)
        port = int(open(port_file, encoding='ascii').read().split()[0])
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        targets = json.loads(opener.open(f'http://127.0.0.1:{port}/json/list').read())
        page = next(t for t in targets if t.get('type') == 'page')
        self.ws = websocket.create_connection(page['webSocketDebuggerUrl'], suppress_origin=True,
                                              http_no_proxy=['127.0.0.1'])
        for method in ('Page.enable', 'Runtime.enable', 'Log.enable'):
            self.call(method)
        return self

    def __exit__(self, *exc):
        if self.ws is not None:
            self.ws.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)
        return False

    def call(self, method: str, **params) -> dict:
        """Sends one command and returns its result; events that come meanwhile are kept."""
        self.next_id += 1
        wanted = self.next_id
        self.ws.send(json.dumps({'id': wanted, 'method': method, 'params': params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get('id') == wanted:
                if 'error' in message:
                    raise RuntimeError(f'{method}: {message["error"]}')
                return message.get('result', {})
            self.events.append(message)

    def wait_event(self, method: str) -> dict:
        for i, event in enumerate(self.events):
            if event.get('method') == method:
                return self.events.pop(i)
        while True:
            message = json.loads(self.ws.recv())
            if message.get('method') == method:
                return message
            self.events.append(message)

    def load(self, url: str) -> None:
        self.call('Page.navigate', url=url)
        self.wait_event('Page.loadEventFired')

    def errors(self) -> List[str]:
        """Console errors, uncaught exceptions and error log entries seen so far."""
        out = []
        for event in self.events:
            method, params = event.get('method'), event.get('params', {})
            if method == 'Runtime.exceptionThrown':
                out.append(json.dumps(params.get('exceptionDetails', {}))[:500])
            elif method == 'Runtime.consoleAPICalled' and params.get('type') in ('error',
                                                                                  'assert'):
                out.append(json.dumps(params.get('args', []))[:500])
            elif method == 'Log.entryAdded' and params.get('entry', {}).get('level') == 'error':
                out.append(params['entry'].get('text', '')[:500])
        return out

    def evaluate(self, expression: str) -> Any:
        """The JSON value of a JavaScript expression in the page."""
        result = self.call('Runtime.evaluate', expression=expression, returnByValue=True)
        if 'exceptionDetails' in result:
            raise RuntimeError(f'{expression[:60]}: {result["exceptionDetails"]}')
        return result['result'].get('value')

    def screenshot(self, path: str) -> None:
        data = self.call('Page.captureScreenshot', format='png', captureBeyondViewport=True)
        with open(path, 'wb') as f:
            f.write(base64.b64decode(data['data']))
