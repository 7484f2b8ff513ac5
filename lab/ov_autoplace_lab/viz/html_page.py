"""The self-contained interactive page: the SVG inline, the data as JSON, a few lines of script, no network.

Hovering a box of the graph or a bar of the timeline fills the side panel with
that group's device, submodel, time, main op types and its ops (the data sit
in ``<script type="application/json" id="ovap-data">``, keyed by the shapes'
``data-key``); ``page.html#<key>`` opens with that group shown. The page also
carries the per-device table and the notes as text, so it reads without the script too.
"""

from __future__ import annotations

import html
import json
from typing import Sequence

_STYLE = """
body{font-family:DejaVu Sans,Arial,sans-serif;margin:16px;color:#222}
#ovap-layout{display:flex;gap:16px;align-items:flex-start}
#ovap-figure{overflow:auto;max-width:calc(100vw - 380px);border:1px solid #ddd}
#ovap-panel{position:sticky;top:8px;width:330px;font-size:13px;border:1px solid #ccc;padding:8px;background:#fafafa}
#ovap-panel pre{white-space:pre-wrap;font-size:11px;max-height:60vh;overflow:auto}
.hoverable{cursor:pointer}.hoverable:hover{stroke:#000;stroke-width:2}
pre.ovap-text{font-size:12px;background:#f6f6f6;padding:8px}
"""

_SCRIPT = """
(function(){
  var data = JSON.parse(document.getElementById('ovap-data').textContent);
  var panel = document.getElementById('ovap-panel-body');
  function show(key){
    var d = data[key];
    if(!d){return;}
    var lines = [];
    for (var k in d){
      if(k === 'ops'){continue;}
      var v = d[k];
      if(v === null || v === ''){continue;}
      lines.push(k + ': ' + (typeof v === 'object' ? JSON.stringify(v) : v));
    }
    if(d.ops){lines.push('ops:'); lines = lines.concat(d.ops);}
    panel.textContent = lines.join('\\n');
    panel.setAttribute('data-shown', key);
  }
  var shapes = document.querySelectorAll('[data-key]');
  for (var i = 0; i < shapes.length; i++){
    shapes[i].addEventListener('mouseenter', function(ev){ show(ev.currentTarget.getAttribute('data-key')); });
  }
  // a link to one group: page.html#box3 opens with box 3's details shown
  if (location.hash.length > 1){ show(decodeURIComponent(location.hash.slice(1))); }
  document.body.setAttribute('data-ovap-ready', String(shapes.length));
})();
"""


def _script_json(payload: dict) -> str:
    """JSON safe inside a <script> element (no closing tag can appear)."""
    return json.dumps(payload, separators=(",", ":")).replace("</", "<\\/")


def render_html(svg: str, *, title: str, hover_data: dict[str, dict], text_blocks: Sequence[str] = (),
                notes: Sequence[str] = ()) -> str:
    """One HTML document with everything inline; ``hover_data`` maps a shape's ``data-key`` to its details."""
    notes_html = "".join(f"<p>{html.escape(n)}</p>" for n in notes)
    blocks = "".join(f"<pre class='ovap-text'>{html.escape(b)}</pre>" for b in text_blocks)
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1 style='font-size:20px'>{html.escape(title)}</h1>{notes_html}"
        "<div id='ovap-layout'>"
        f"<div id='ovap-figure'>{svg}</div>"
        "<div id='ovap-panel'><b>Hover a box or a bar</b><pre id='ovap-panel-body'>"
        "its device, submodel, time and ops appear here</pre></div></div>"
        f"{blocks}"
        f"<script type='application/json' id='ovap-data'>{_script_json(hover_data)}</script>"
        f"<script>{_SCRIPT}</script></body></html>"
    )


__all__ = ["render_html"]
