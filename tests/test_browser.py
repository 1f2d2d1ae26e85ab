"""End to end in a real browser: JupyterLab on localhost driven by headless Chromium.

Opens a notebook with the forecasting explorer, moves the E slider with the keyboard as a
user would, and checks that the figure changed (screenshots compared) and that the kernel's
state followed.  Marked ``browser`` (left out of the default test command); `.ci/run` runs it
in its own step after installing Debian's ``chromium`` and ``chromium-driver``.

``XEDM_SCREENSHOTS=DIR`` keeps the two screenshots (the docs show them from docs/_static).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

NOTEBOOK = {
    "cells": [
        {"cell_type": "code", "execution_count": None, "id": "c0", "metadata": {},
         "outputs": [], "source": [
             "import xedm\n",
             "x = xedm.datasets.logistic_map(600, r=3.9)\n",
             "ex = x.edm.explore(E=2, theta=2.0, debounce=0.2)\n",
             "ex"]},
        {"cell_type": "code", "execution_count": None, "id": "c1", "metadata": {},
         "outputs": [], "source": ["print('kernel E =', ex.state.params['E'])"]},
    ],
    "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                "name": "python3"},
                 "language_info": {"name": "python"}},
    "nbformat": 4, "nbformat_minor": 5,
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def lab(tmp_path):
    """A JupyterLab server on localhost with an isolated config; yields (url, root)."""
    pytest.importorskip("jupyterlab")
    root = tmp_path / "root"
    root.mkdir()
    (root / "explorer.ipynb").write_text(json.dumps(NOTEBOOK))
    port, token = _free_port(), "xedm-e2e"
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "cfg"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"), JUPYTER_DATA_DIR=str(tmp_path / "data"),
               MPLBACKEND="Agg")
    # keep the venv's data dirs (lab extensions: the widget manager) while isolating the rest
    env["JUPYTER_PATH"] = os.pathsep.join([str(Path(sys.prefix) / "share" / "jupyter")])
    log = open(tmp_path / "lab.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}",
         "--ip=127.0.0.1", "--allow-root", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={root}",
         "--LabApp.news_url=", "--LabApp.check_for_updates_class="
         "jupyterlab.NeverCheckForUpdate", "--ServerApp.disable_check_xsrf=True"],
        stdout=log, stderr=subprocess.STDOUT, env=env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 90
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    log.flush()
                    pytest.fail("JupyterLab did not start:\n" +
                                (tmp_path / "lab.log").read_text()[-3000:])
                time.sleep(0.5)
        yield f"{url}/lab/tree/explorer.ipynb?token={token}", root
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture
def browser(tmp_path):
    webdriver = pytest.importorskip("selenium.webdriver")
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.skip("needs Debian's chromium and chromium-driver (apt-get install chromium "
                    "chromium-driver)")
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                 "--window-size=1300,1400", f"--user-data-dir={tmp_path / 'chrome'}"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(options=opts, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def _wait(driver, condition, timeout=120, what="condition"):
    from selenium.common.exceptions import WebDriverException

    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            value = condition(driver)
            if value:
                return value
        except WebDriverException:
            pass
        time.sleep(0.3)
    shot = Path(os.environ.get("XEDM_SCREENSHOTS") or "/tmp") / "browser-failure.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(shot))
    text = driver.find_element("tag name", "body").text[-2000:]
    raise AssertionError(f"timed out waiting for {what} (screenshot {shot}); page text:\n"
                         f"{text}")


def _pixels(png: bytes) -> np.ndarray:
    from matplotlib import image

    return image.imread(io.BytesIO(png), format="png")[..., :3]


def test_moving_the_E_slider_redraws_the_figure(lab, browser):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    url, root = lab
    d = browser
    d.get(url)
    _wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, ".jp-NotebookPanel .jp-Cell"),
          what="the notebook")
    # run both cells with Shift+Enter, as a user would (JupyterLab queues them until the
    # kernel is up)
    time.sleep(2.0)
    first = d.find_elements(By.CSS_SELECTOR, ".jp-NotebookPanel .jp-CodeCell")[0]
    first.find_element(By.CSS_SELECTOR, ".jp-InputArea-prompt").click()
    for _ in range(2):
        ActionChains(d).key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(Keys.SHIFT).perform()
        time.sleep(0.5)
    img = _wait(d, lambda d: [i for i in d.find_elements(By.CSS_SELECTOR, "img.widget-image")
                              if (i.get_attribute("src") or "").startswith("blob:")
                              or (i.get_attribute("src") or "").startswith("data:")],
                what="the explorer's figure")[0]
    _wait(d, lambda d: "kernel E = 2" in d.find_element(By.TAG_NAME, "body").text,
          what="the second cell's output")
    explorer = img.find_element(By.XPATH, "./ancestor::div[contains(@class,'widget-vbox')][1]")
    time.sleep(1.0)  # let the image finish painting
    before_src = img.get_attribute("src")
    before = explorer.screenshot_as_png

    slider = explorer.find_element(
        By.XPATH, ".//div[contains(@class,'widget-slider')][.//label[normalize-space()='E']]")
    handle = slider.find_element(By.CSS_SELECTOR, ".noUi-handle")
    handle.click()
    for _ in range(3):
        handle.send_keys(Keys.ARROW_RIGHT)
    readout = slider.find_element(By.CSS_SELECTOR, ".widget-readout")
    _wait(d, lambda d: readout.text.strip() == "5", timeout=30, what="the slider at E = 5")
    _wait(d, lambda d: img.get_attribute("src") != before_src, timeout=120,
          what="the redrawn figure")
    _wait(d, lambda d: "E=5" in explorer.text, timeout=60, what="the status line at E=5")
    time.sleep(1.0)
    after = explorer.screenshot_as_png

    a, b = _pixels(before), _pixels(after)
    assert a.shape == b.shape
    changed = np.abs(a - b).max(axis=-1) > 0.1
    assert changed.mean() > 0.01, f"only {changed.mean():.4f} of the pixels changed"

    # the kernel's state followed the browser: re-run the second cell
    cells = d.find_elements(By.CSS_SELECTOR, ".jp-NotebookPanel .jp-CodeCell")
    cells[1].find_element(By.CSS_SELECTOR, ".jp-InputArea-prompt").click()
    ActionChains(d).key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(Keys.SHIFT).perform()
    _wait(d, lambda d: "kernel E = 5" in d.find_element(By.TAG_NAME, "body").text,
          timeout=60, what="the kernel's E = 5")

    keep = os.environ.get("XEDM_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        (Path(keep) / "explorer-E2.png").write_bytes(before)
        (Path(keep) / "explorer-E5.png").write_bytes(after)
