"""The HTML page is self-contained and its script has data for every hoverable shape."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from xml.etree import ElementTree

from ov_autoplace_lab.viz import placement_picture
from ov_autoplace_lab.viz.html_page import render_html
from ov_autoplace_lab.viz.scene import to_svg
from tests import synthetic_graphs as sg


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.keys, self.scripts, self.external = [], set(), [], []
        self._in_script = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        if "data-key" in attrs:
            self.keys.add(attrs["data-key"])
        for name in ("src", "href"):
            if name in attrs and not attrs[name].startswith("#"):
                self.external.append(attrs[name])
        if tag == "script":
            self._in_script = attrs.get("type", "text/javascript")
            self.scripts.append([self._in_script, ""])

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = None

    def handle_data(self, data):
        if self._in_script is not None:
            self.scripts[-1][1] += data


def test_page_structure_data_and_no_network(sim_case):
    case = sim_case(sg.attention_like(layers=2))
    picture = placement_picture(case.graph, case.alternating(5), title="attention </script> test", cost=case.cost)
    page = render_html(to_svg(picture.scene), title=picture.title, hover_data=picture.hover,
                       text_blocks=picture.text_blocks)
    parsed = _Collect()
    parsed.feed(page)
    assert "svg" in parsed.tags and parsed.external == [], "the page must not load anything"
    data_scripts = [body for kind, body in parsed.scripts if kind == "application/json"]
    code = [body for kind, body in parsed.scripts if kind != "application/json"]
    assert len(data_scripts) == 1 and len(code) == 1 and "addEventListener('mouseenter'" in code[0]
    data = json.loads(data_scripts[0])
    assert parsed.keys and parsed.keys <= set(data), "every hoverable shape has hover data"
    boxes = [data[k] for k in parsed.keys if k.startswith("box")]
    assert boxes and all({"device", "ops", "ms", "label"} <= set(b) for b in boxes)
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", page)
    svg = page[page.index("<svg"): page.index("</svg>") + 6]
    ElementTree.fromstring(svg)  # well-formed XML


def _browser() -> str | None:
    import shutil

    return next((path for name in ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")
                 if (path := shutil.which(name))), None)


def test_page_runs_in_a_headless_browser(sim_case, tmp_path):
    """The script runs in a real browser: every shape gets its handler and a linked group shows its ops."""
    import os
    import subprocess

    import pytest

    from ov_autoplace_lab.viz import write_picture

    browser = _browser()
    if browser is None:
        if os.environ.get("OV_AUTOPLACE_REQUIRE_BROWSER") == "1":
            pytest.fail("no headless browser found although CI installs one (apt-get install chromium-headless-shell)")
        pytest.skip("no headless browser (apt-get install chromium-headless-shell)")
    case = sim_case(sg.attention_like(layers=2))
    picture = placement_picture(case.graph, case.alternating(5), title="browser", cost=case.cost)
    written, _ = write_picture(picture, tmp_path / "page", png=False)
    page = next(p for p in written if p.suffix == ".html")
    box = next(k for k in picture.hover if k.startswith("box"))
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                          f"{page.as_uri()}#{box}"], capture_output=True, text=True, timeout=120).stdout
    keys = len(set(re.findall(r'data-key="([^"]+)"', page.read_text())))
    assert re.search(r'data-ovap-ready="(\d+)"', dom), "the page's script did not run"
    assert int(re.search(r'data-ovap-ready="(\d+)"', dom).group(1)) >= keys
    panel = re.search(r'<pre id="ovap-panel-body" data-shown="([^"]+)">(.*?)</pre>', dom, re.S)
    assert panel and panel.group(1) == box
    details = picture.hover[box]
    assert f"device: {details['device']}" in panel.group(2) and details["ops"][0].split(" (")[0] in panel.group(2)
