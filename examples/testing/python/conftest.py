"""pytest fixtures: a fresh `windlass apiserver` per test, in memory.

The binary is `$WINDLASS_BIN`, else `windlass` on the PATH. It listens on a
free port of 127.0.0.1 (`--listen 127.0.0.1:0`) and writes a kubeconfig
with that port; the fixture waits for the file, then for `/readyz`, and
stops the server after the test. Starting one takes milliseconds, so every
test gets its own.
"""
import os
import shutil
import subprocess
import time
import urllib.request

import pytest
import yaml


@pytest.fixture
def kubeconfig(tmp_path):
    binary = os.environ.get("WINDLASS_BIN") or shutil.which("windlass")
    if not binary:
        pytest.skip("no windlass binary: set WINDLASS_BIN or put windlass on the PATH")
    path = tmp_path / "kubeconfig"
    server = subprocess.Popen(
        [binary, "apiserver", "--in-memory", "--listen", "127.0.0.1:0",
         "--write-kubeconfig", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not path.exists():
            assert server.poll() is None, "windlass apiserver exited"
            assert time.monotonic() < deadline, "no kubeconfig written"
            time.sleep(0.01)
        url = yaml.safe_load(path.read_text())["clusters"][0]["cluster"]["server"]
        while True:
            try:
                with urllib.request.urlopen(url + "/readyz") as r:
                    if r.status == 200:
                        break
            except OSError:
                assert time.monotonic() < deadline, "windlass apiserver is not ready"
                time.sleep(0.01)
        yield str(path)
    finally:
        server.terminate()
        server.wait(timeout=10)
